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
    private let current: Locked<NetworkPath>
    private let watchers = Subscribers<NetworkPath>()

    init(_ path: NetworkPath) {
        current = Locked(path)
    }

    /// The path now; setting a different one tells every watcher.
    var path: NetworkPath {
        get { current.withLock { $0 } }
        set {
            current.withLock { path in
                guard path != newValue else { return }
                path = newValue
                watchers.yield(newValue)
            }
        }
    }

    /// The path now, then every change. Subscribed under the path's lock, so a change made
    /// meanwhile comes after the path the stream starts with.
    func paths() -> AsyncStream<NetworkPath> {
        current.withLock { watchers.subscribe(bufferingPolicy: .bufferingNewest(1), first: $0) }
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
