import Foundation
import Locking

/// The kind of network the device is on now.
public enum NetworkPath: String, Sendable, CaseIterable {
    case wired, wifi, cellular, none
}

/// Tells the manager which network the device is on, and when that changes. The default is
/// `SystemNetworkMonitor.shared` (the kernel's interfaces and routes); apps on a platform with
/// a network API of its own adapt it; tests set a path by hand with `ManualNetworkMonitor`.
public protocol NetworkMonitor: Sendable {
    /// The path now.
    var currentPath: NetworkPath { get }
    /// Every change from now on (the current path first).
    func paths() -> AsyncStream<NetworkPath>
    /// The path a request to `url` takes now (default: `currentPath` for every host).
    /// `SystemNetworkMonitor` answers `wired` for a loopback host, which needs no network.
    func path(toward url: String) -> NetworkPath
}

extension NetworkMonitor {
    public func path(toward url: String) -> NetworkPath { currentPath }
}

/// A network monitor set by hand: `wired` until told otherwise. Its path holds for every host,
/// a mock backend on this machine too, so tests can take the network away from one.
///
/// ```swift
/// let network = ManualNetworkMonitor()
/// network.currentPath = .cellular   // downloads that may not use cellular wait
/// network.currentPath = .wifi       // and go on
/// ```
public final class ManualNetworkMonitor: NetworkMonitor {
    private let broadcast: NetworkPathBroadcast

    /// Creates a monitor on `path`.
    public init(path: NetworkPath = .wired) {
        broadcast = NetworkPathBroadcast(path)
    }

    /// The path now; setting it tells every watcher.
    public var currentPath: NetworkPath {
        get { broadcast.path }
        set { broadcast.path = newValue }
    }

    public func paths() -> AsyncStream<NetworkPath> { broadcast.paths() }
}

/// A path and its watchers: each `paths()` stream gets the path now, then every change.
final class NetworkPathBroadcast: Sendable {
    private let state: Locked<(path: NetworkPath, watchers: [UInt64: AsyncStream<NetworkPath>.Continuation], next: UInt64)>

    init(_ path: NetworkPath) {
        state = Locked((path, [:], 0))
    }

    /// The path now; setting a different one tells every watcher.
    var path: NetworkPath {
        get { state.withLock { $0.path } }
        set {
            let watchers = state.withLock { state -> [AsyncStream<NetworkPath>.Continuation] in
                guard state.path != newValue else { return [] }
                state.path = newValue
                return Array(state.watchers.values)
            }
            for watcher in watchers { watcher.yield(newValue) }
        }
    }

    func paths() -> AsyncStream<NetworkPath> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkPath.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            state.watchers[state.next] = continuation
            continuation.yield(state.path)
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }
}

/// Waits until a request may use the network: some network, and not cellular unless allowed.
enum NetworkGate {
    /// Whether `path` allows a request made with `allowsCellular`.
    static func allows(_ path: NetworkPath, allowsCellular: Bool) -> Bool {
        switch path {
        case .wired, .wifi: true
        case .cellular: allowsCellular
        case .none: false
        }
    }

    /// Whether `monitor` lets a request to `url` go now.
    static func allows(_ monitor: any NetworkMonitor, allowsCellular: Bool, url: String) -> Bool {
        allows(monitor.path(toward: url), allowsCellular: allowsCellular)
    }

    /// Returns at once when allowed, else when the path changes to one that is; throws on cancellation.
    static func wait(_ monitor: any NetworkMonitor, allowsCellular: Bool, url: String) async throws {
        if allows(monitor, allowsCellular: allowsCellular, url: url) { return }
        for await _ in monitor.paths() {
            try Task.checkCancellation()
            if allows(monitor, allowsCellular: allowsCellular, url: url) { return }
        }
        try Task.checkCancellation()
    }
}
