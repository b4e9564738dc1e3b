#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD

/// An IPv4 or IPv6 socket address parsed from a literal host and a port.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    init(host: String, port: Int) throws(HTTPServerError) {
        guard (0...65535).contains(port) else { throw HTTPServerError(.badConfiguration, "port \(port) is out of range 0-65535") }
        let literal = host == "localhost" ? "127.0.0.1" : host.trimmingCharacters(in: "[]")
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            isIPv6 = false
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: v4) { raw.copyMemory(from: $0) } }
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            isIPv6 = true
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: v6) { raw.copyMemory(from: $0) } }
        } else {
            throw HTTPServerError(.badConfiguration, "host '\(host)' is not an IPv4 or IPv6 address")
        }
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self))  // sockaddr_storage is never empty
        }
    }

    /// Text for a peer address MHD reports, e.g. "127.0.0.1" or "::1".
    static func describe(_ address: UnsafePointer<sockaddr>?) -> String? {
        guard let address else { return nil }
        // A stack buffer: this runs for every request.
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN) + 1) { buffer -> String? in
            let length = socklen_t(buffer.count)
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    var addr = v4.pointee.sin_addr
                    return inet_ntop(AF_INET, &addr, buffer.baseAddress, length).map { String(cString: $0) }
                }
            case AF_INET6:
                return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    var addr = v6.pointee.sin6_addr
                    return inet_ntop(AF_INET6, &addr, buffer.baseAddress, length).map { String(cString: $0) }
                }
            default:
                return nil
            }
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var slice = Substring(self)
        while let c = slice.first, set.contains(c) { slice = slice.dropFirst() }
        while let c = slice.last, set.contains(c) { slice = slice.dropLast() }
        return String(slice)
    }
}
