import Foundation
@testable import OfflineSDK
import MockBackend
import TestKit
import Testing

/// The kernel's network, read from a folder laid out like `/sys/class/net` and `/proc/net`.
@Suite("System network monitor")
struct SystemNetworkMonitorTests {
    /// A fake `/`: interfaces under sys/class/net, routes under proc/net.
    struct FakeRoot {
        let directory: TemporaryDirectory
        var url: URL { directory.url }

        init() throws {
            directory = try TemporaryDirectory()
            try FileManager.default.createDirectory(at: url.appendingPathComponent("proc/net"), withIntermediateDirectories: true)
            try routes([])
            try interface("lo", type: 772, operstate: "unknown")
        }

        /// Adds or replaces an interface.
        func interface(_ name: String, type: Int = 1, operstate: String = "up", carrier: Bool = true,
                       wireless: Bool = false, uevent: String = "", driver: String? = nil) throws {
            let folder = url.appendingPathComponent("sys/class/net/\(name)")
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try "\(type)\n".write(to: folder.appendingPathComponent("type"), atomically: true, encoding: .utf8)
            try "\(operstate)\n".write(to: folder.appendingPathComponent("operstate"), atomically: true, encoding: .utf8)
            try (carrier ? "1\n" : "0\n").write(to: folder.appendingPathComponent("carrier"), atomically: true, encoding: .utf8)
            try "INTERFACE=\(name)\n\(uevent)".write(to: folder.appendingPathComponent("uevent"), atomically: true, encoding: .utf8)
            if wireless { try FileManager.default.createDirectory(at: folder.appendingPathComponent("wireless"), withIntermediateDirectories: true) }
            if let driver {
                let drivers = url.appendingPathComponent("sys/bus/usb/drivers/\(driver)")
                try FileManager.default.createDirectory(at: drivers, withIntermediateDirectories: true)
                try FileManager.default.createDirectory(at: folder.appendingPathComponent("device"), withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("device/driver").path, withDestinationPath: drivers.path)
            }
        }

        /// Writes IPv4 default routes (interface, metric) to proc/net/route, and IPv6 ones to ipv6_route.
        func routes(_ ipv4: [(String, Int)], ipv6: [(String, Int)] = []) throws {
            var table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
            for (name, metric) in ipv4 {
                table += "\(name)\t00000000\t010200C0\t0003\t0\t0\t\(metric)\t00000000\t0\t0\t0\n"
                table += "\(name)\t000200C0\t00000000\t0001\t0\t0\t\(metric)\t00FFFFFF\t0\t0\t0\n"  // the subnet, not a default
            }
            try table.write(to: url.appendingPathComponent("proc/net/route"), atomically: true, encoding: .utf8)
            let zero = String(repeating: "0", count: 32)
            var six = "\(zero) 00 \(zero) 00 \(zero) ffffffff 00000001 00000000 00200200       lo\n"  // unreachable default on lo
            for (name, metric) in ipv6 {
                six += "\(zero) 00 \(zero) 00 fe800000000000000000000000000001 \(String(metric, radix: 16, uppercase: false).leftPadded(8)) 00000001 00000000 00000003 \(name)\n"
            }
            try six.write(to: url.appendingPathComponent("proc/net/ipv6_route"), atomically: true, encoding: .utf8)
        }

        func remove(_ name: String) throws {
            try FileManager.default.removeItem(at: url.appendingPathComponent("sys/class/net/\(name)"))
        }
    }

    @Test("kinds from sysfs: Wi-Fi, WWAN by devtype, name, raw IP or modem driver, everything else wired; loopback left out")
    func kinds() throws {
        let root = try FakeRoot()
        defer { root.directory.remove() }
        try root.interface("eth0")
        try root.interface("wlp2s0", wireless: true)
        try root.interface("wwp0s20", uevent: "DEVTYPE=wwan\n")
        try root.interface("wwan1")
        try root.interface("rmnet_data0", type: 519)
        try root.interface("usb0", driver: "qmi_wwan")
        try root.interface("veth7", operstate: "down")
        try root.interface("tun0", type: 65534, operstate: "unknown")
        let interfaces = SystemNetworkMonitor.interfaces(root: root.url)
        let kinds = Dictionary(uniqueKeysWithValues: interfaces.map { ($0.name, $0.kind) })
        #expect(kinds == ["eth0": .wired, "wlp2s0": .wifi, "wwp0s20": .cellular, "wwan1": .cellular, "rmnet_data0": .cellular,
                          "usb0": .cellular, "veth7": .wired, "tun0": .wired])
        #expect(interfaces.first { $0.name == "veth7" }?.isUp == false)
        #expect(interfaces.first { $0.name == "tun0" }?.isUp == true, "unknown with a carrier counts as up")
    }

    @Test("the path: the up interface with the lowest default-route metric (IPv4 or IPv6), else the best one up, else none")
    func path() throws {
        let root = try FakeRoot()
        defer { root.directory.remove() }
        func path() -> NetworkPath { SystemNetworkMonitor.path(of: SystemNetworkMonitor.interfaces(root: root.url)) }
        #expect(path() == .none, "only loopback")

        try root.interface("eth0")
        try root.interface("wlan0", wireless: true)
        try root.interface("wwan0")
        try root.routes([("wlan0", 600), ("eth0", 100), ("wwan0", 700)])
        #expect(path() == .wired)
        try root.routes([("wlan0", 600), ("wwan0", 700)])
        #expect(path() == .wifi, "a wired link without the default route is not the path")
        try root.routes([("wwan0", 700)], ipv6: [("wlan0", 1024)])
        #expect(path() == .cellular, "IPv4's 700 beats IPv6's 1024")
        try root.routes([], ipv6: [("wlan0", 1024)])
        #expect(path() == .wifi)
        try root.interface("wlan0", operstate: "down", carrier: false, wireless: true)
        try root.routes([("wlan0", 100)])
        #expect(path() == .wired, "a route on a link that is down does not count; eth0 is up")
        try root.remove("eth0")
        #expect(path() == .cellular)
        try root.interface("wwan0", operstate: "down")
        #expect(path() == .none)
    }

    @Test("a loopback host needs no network; the manual monitor's path holds for every host")
    func loopback() throws {
        let root = try FakeRoot()
        defer { root.directory.remove() }
        let monitor = SystemNetworkMonitor(root: root.url)
        #expect(monitor.currentPath == .none)
        for url in ["http://127.0.0.1:8080/media/x.ts", "https://localhost/a", "http://[::1]:9/", "http://127.9.8.7/", "http://api.localhost/"] {
            #expect(monitor.path(toward: url) == .wired, "\(url)")
        }
        for url in ["https://example.com/a", "http://128.0.0.1/", "http://127.0.0.1.example.com/", "not a url"] {
            #expect(monitor.path(toward: url) == .none, "\(url)")
        }
        #expect(ManualNetworkMonitor(path: .none).path(toward: "http://127.0.0.1/") == .none)
    }

    /// Needs root (CAP_NET_ADMIN) and iproute2: it adds and removes an address on loopback to make
    /// the kernel send a netlink message; the interfaces it then reads are the fake folder's.
    @Test("a netlink message makes it read the interfaces again, and a changed path reaches watchers")
    func netlinkChange() async throws {
        #expect(geteuid() == 0, "this test changes an address on loopback: run it as root (make test does)")
        let root = try FakeRoot()
        defer { root.directory.remove() }
        try root.interface("eth0")
        try root.routes([("eth0", 100)])
        // No backstop reading during the test: only netlink can bring the change.
        let monitor = SystemNetworkMonitor(root: root.url, rereadEvery: .seconds(3600))
        #expect(monitor.listensToNetlink)
        #expect(monitor.currentPath == .wired)
        let paths = monitor.paths()  // the current path first, then each change

        try root.interface("eth0", operstate: "down", carrier: false)
        try root.interface("wlan0", wireless: true)
        try root.routes([("wlan0", 600)])
        let before = monitor.readings
        let address = "127.0.0.\(Int.random(in: 100...250))/32"
        let added = try await RunningProcess("/usr/sbin/ip", ["addr", "add", address, "dev", "lo"]).wait()
        #expect(added.exitCode == 0, "ip addr add: \(added.stderrText)")
        _ = try await RunningProcess("/usr/sbin/ip", ["addr", "del", address, "dev", "lo"]).wait()
        let next = try await withThrowingTaskGroup(of: NetworkPath?.self) { group in
            group.addTask {
                for await path in paths where path != .wired { return path }
                return nil
            }
            group.addTask { try await Task.sleep(for: .seconds(120)); return nil }  // a ceiling, never a wait
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        #expect(next == .wifi)
        #expect(monitor.readings > before)
        #expect(monitor.interfaces.map(\.name) == ["eth0", "wlan0"])
    }

    @Test("on this machine: loopback is left out and the path follows the interfaces read")
    func thisMachine() {
        let monitor = SystemNetworkMonitor()
        #expect(!monitor.interfaces.contains { $0.name == "lo" })
        #expect(monitor.currentPath == SystemNetworkMonitor.path(of: monitor.interfaces))
    }

    @Test("with the system monitor and no network at all, a download from a mock on this machine still runs")
    func downloadWithoutNetwork() async throws {
        let root = try FakeRoot()
        defer { root.directory.remove() }
        let monitor = SystemNetworkMonitor(root: root.url)
        #expect(monitor.currentPath == .none)
        try await withBackend { server in try await withHarness(server, { $0.network = monitor }) { h in
            let token = try await h.request(Catalog.clearVideo)
            #expect(try await h.events.finished(token) == nil)
            #expect(try await h.manager.status(token).downloadState == .completed)
        } }
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
