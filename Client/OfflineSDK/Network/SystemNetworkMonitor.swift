public import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// The network the Linux kernel reports, and its changes as they happen: the default monitor.
///
/// The path is the kind of the interface that carries the default route (the lowest metric,
/// IPv4 or IPv6) among those that are up; with no default route, the best interface that is up
/// (wired, then Wi-Fi, then cellular); `none` when only loopback is up. Kinds come from sysfs:
/// a `wireless` or `phy80211` entry is Wi-Fi; a WWAN device (`DEVTYPE=wwan`, a `wwan*` name, a
/// raw-IP link, or a modem driver such as `qmi_wwan` or `cdc_mbim`) is cellular; anything else
/// (Ethernet, virtual and container links) is wired.
///
/// Changes arrive through a netlink socket (links, addresses and routes); the interfaces are
/// read again on each, and watchers hear only when the path changes. Where netlink cannot be
/// opened (a sandbox without it) the interfaces are read again every few seconds instead.
///
/// ```swift
/// var configuration = OfflineVideoManagerConfiguration()
/// configuration.network = SystemNetworkMonitor.shared   // the default
/// ```
public final class SystemNetworkMonitor: NetworkMonitor {
    /// One network interface as the kernel reports it.
    public struct Interface: Sendable, Equatable {
        /// The interface name (`eth0`, `wlan0`, `wwan0`).
        public var name: String
        /// Its kind; loopback interfaces are not listed.
        public var kind: NetworkPath
        /// Whether it is up with a carrier.
        public var isUp: Bool
        /// The metric of its default route, nil when it carries none.
        public var defaultRouteMetric: Int?
    }

    /// One monitor for the whole process, started on first use.
    public static let shared = SystemNetworkMonitor()

    private let root: URL
    private let state: Locked<State>
    private let broadcast: NetworkPathBroadcast
    private let wake: (read: Int32, write: Int32)

    private struct State {
        var interfaces: [Interface]
        var readings = 0
        var listensToNetlink = false
    }

    /// A monitor reading `root`'s `sys/class/net` and `proc/net` (the real ones by default;
    /// tests give a folder laid out the same way).
    public convenience init(root: URL = URL(fileURLWithPath: "/")) {
        self.init(root: root, rereadEvery: nil)
    }

    /// `rereadEvery`: how often the interfaces are read without a netlink message (a backstop
    /// for lost messages; default 30 s, 3 s without netlink).
    init(root: URL, rereadEvery: Duration?) {
        self.root = root
        let interfaces = Self.interfaces(root: root)
        state = Locked(State(interfaces: interfaces))
        broadcast = NetworkPathBroadcast(Self.path(of: interfaces))
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
            wake = (fds[0], fds[1])
        } else {
            wake = (-1, -1)
        }
        let netlink = Self.openNetlink()
        state.withLock { $0.listensToNetlink = netlink >= 0 }
        let (root, state, broadcast, wakeRead) = (self.root, self.state, self.broadcast, wake.read)
        let period = rereadEvery ?? .seconds(netlink >= 0 ? 30 : 3)
        let milliseconds = Int32(clamping: period.components.seconds * 1000 + period.components.attoseconds / 1_000_000_000_000_000)
        let thread = Thread { Self.watch(root: root, state: state, broadcast: broadcast, netlink: netlink, wake: wakeRead, every: milliseconds) }
        thread.name = "SystemNetworkMonitor"
        thread.start()
    }

    deinit {
        // The watching thread ends when the pipe's write end closes, then closes the rest.
        if wake.write >= 0 { close(wake.write) }
    }

    /// The path now.
    public var currentPath: NetworkPath { broadcast.path }

    /// `wired` for a loopback host (a mock backend on this machine needs no network),
    /// `currentPath` for any other.
    public func path(toward url: String) -> NetworkPath {
        Self.isLoopback(url) ? .wired : currentPath
    }

    /// Whether `url`'s host is this machine: `localhost`, 127.0.0.0/8 or `::1`.
    static func isLoopback(_ url: String) -> Bool {
        guard let host = URLComponents(string: url)?.host?.lowercased() else { return false }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare.hasSuffix(".localhost") || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// The interfaces as last read (loopback left out).
    public var interfaces: [Interface] { state.withLock { $0.interfaces } }

    /// Whether changes arrive from netlink (false: the interfaces are read every few seconds).
    public var listensToNetlink: Bool { state.withLock { $0.listensToNetlink } }

    /// How many times the interfaces were read since the start (tests watch it).
    var readings: Int { state.withLock { $0.readings } }

    public func paths() -> AsyncStream<NetworkPath> { broadcast.paths() }

    /// Reads the interfaces again now and tells watchers if the path changed (an app that
    /// learns of a change some other way can call it; changes are otherwise picked up alone).
    public func refresh() {
        Self.read(root: root, state: state, broadcast: broadcast)
    }

    // MARK: Reading

    /// The path for `interfaces`: see the type's description.
    public static func path(of interfaces: [Interface]) -> NetworkPath {
        let up = interfaces.filter(\.isUp)
        if let primary = up.filter({ $0.defaultRouteMetric != nil }).min(by: { $0.defaultRouteMetric! < $1.defaultRouteMetric! }) {
            return primary.kind
        }
        for kind in [NetworkPath.wired, .wifi, .cellular] where up.contains(where: { $0.kind == kind }) { return kind }
        return .none
    }

    /// The interfaces under `root` (`sys/class/net/*`, default routes from `proc/net/route`
    /// and `proc/net/ipv6_route`), loopback left out, sorted by name.
    public static func interfaces(root: URL) -> [Interface] {
        let net = root.appendingPathComponent("sys/class/net")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: net.path)) ?? []).sorted()
        let metrics = defaultRouteMetrics(root: root)
        return names.compactMap { name -> Interface? in
            let folder = net.appendingPathComponent(name)
            let type = Int(text(folder, "type") ?? "") ?? 0
            guard type != 772 else { return nil }  // ARPHRD_LOOPBACK
            let operstate = text(folder, "operstate") ?? "down"
            let carrier = text(folder, "carrier") == "1"
            // Tunnels and some virtual drivers say "unknown" while they carry traffic.
            let isUp = operstate == "up" || (operstate == "unknown" && carrier)
            return Interface(name: name, kind: kind(folder: folder, name: name, type: type), isUp: isUp, defaultRouteMetric: metrics[name])
        }
    }

    private static let modemDrivers: Set = ["qmi_wwan", "cdc_mbim", "huawei_cdc_ncm", "sierra_net", "ipheth", "rmnet", "mhi_net"]

    private static func kind(folder: URL, name: String, type: Int) -> NetworkPath {
        let manager = FileManager.default
        if manager.fileExists(atPath: folder.appendingPathComponent("wireless").path)
            || manager.fileExists(atPath: folder.appendingPathComponent("phy80211").path) {
            return .wifi
        }
        let uevent = text(folder, "uevent") ?? ""
        let driver = (try? manager.destinationOfSymbolicLink(atPath: folder.appendingPathComponent("device/driver").path))
            .map { URL(fileURLWithPath: $0).lastPathComponent }
        if uevent.split(separator: "\n").contains("DEVTYPE=wwan") || name.hasPrefix("wwan") || type == 519  // ARPHRD_RAWIP
            || driver.map(modemDrivers.contains) == true {
            return .cellular
        }
        return .wired
    }

    /// Each interface's lowest default-route metric, IPv4 and IPv6.
    private static func defaultRouteMetrics(root: URL) -> [String: Int] {
        var metrics: [String: Int] = [:]
        func note(_ name: String, _ metric: Int) { metrics[name] = min(metrics[name] ?? .max, metric) }
        // Iface Destination Gateway Flags RefCnt Use Metric Mask …, hex, a header line first.
        for line in (text(root, "proc/net/route") ?? "").split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 8, fields[1] == "00000000", fields[7] == "00000000",
                  let flags = Int(fields[3], radix: 16), flags & 0x1 != 0,  // RTF_UP
                  let metric = Int(fields[6]) else { continue }
            note(String(fields[0]), metric)
        }
        // destination prefix-length source source-length next-hop metric refcnt use flags iface, hex.
        for line in (text(root, "proc/net/ipv6_route") ?? "").split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 10, fields[0].allSatisfy({ $0 == "0" }), fields[1] == "00",
                  let flags = Int(fields[8], radix: 16), flags & 0x1 != 0, flags & 0x200 == 0,  // RTF_UP, not RTF_REJECT
                  let metric = Int(fields[5], radix: 16), fields[9] != "lo" else { continue }
            note(String(fields[9]), metric)
        }
        return metrics
    }

    private static func text(_ folder: URL, _ name: String) -> String? {
        (try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func read(root: URL, state: Locked<State>, broadcast: NetworkPathBroadcast) {
        let interfaces = Self.interfaces(root: root)
        state.withLock { state in
            state.readings += 1
            state.interfaces = interfaces
        }
        broadcast.path = Self.path(of: interfaces)
    }

    // MARK: Watching

    /// A netlink socket subscribed to link, address and route changes, or -1.
    private static func openNetlink() -> Int32 {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)  // NETLINK_ROUTE
        guard fd >= 0 else { return -1 }
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid; __u32 nl_groups; }
        let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400  // LINK, IPV4_IFADDR, IPV4_ROUTE, IPV6_IFADDR, IPV6_ROUTE
        var address = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: UInt16(AF_NETLINK)) { address.replaceSubrange(0..<2, with: $0) }
        withUnsafeBytes(of: groups) { address.replaceSubrange(8..<12, with: $0) }
        let bound = address.withUnsafeBytes { bytes in
            bind(fd, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
        }
        guard bound == 0 else { close(fd); return -1 }
        return fd
    }

    /// Until the wake pipe closes: waits for a netlink message or the backstop period, drains
    /// what came, and reads the interfaces again.
    private static func watch(root: URL, state: Locked<State>, broadcast: NetworkPathBroadcast, netlink: Int32, wake: Int32, every milliseconds: Int32) {
        defer {
            if netlink >= 0 { close(netlink) }
            if wake >= 0 { close(wake) }
        }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0), pollfd(fd: netlink, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, netlink >= 0 ? 2 : 1, milliseconds)
            if ready < 0 && errno != EINTR { return }
            if fds[0].revents != 0 { return }  // the monitor is gone
            if netlink >= 0 && fds[1].revents != 0 {
                // Several changes come at once (a link, its address, its routes): read once for all.
                while recv(netlink, &buffer, buffer.count, 0) > 0 {}
            }
            read(root: root, state: state, broadcast: broadcast)
        }
    }
}
