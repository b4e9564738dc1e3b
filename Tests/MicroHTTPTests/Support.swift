import Foundation
import TestKit
import Logging
import MicroHTTP
import Synchronization


/// Starts an `HTTPServer` on 127.0.0.1, port 0, runs `body` with it and its base URL, and
/// always shuts it down.
func withServer(
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    errorResponder: @escaping HTTPServer.ErrorResponder = HTTPServer.plainErrorResponder,
    handler: @escaping HTTPServer.Handler,
    _ body: (HTTPServer, String) async throws -> Void
) async throws {
    var configuration = HTTPServerConfiguration()
    configuration.port = 0
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, logger: quietLogger, errorResponder: errorResponder, handler: handler)
    try server.start()
    do {
        try await body(server, "http://127.0.0.1:\(server.port)")
    } catch {
        await server.shutdown(gracePeriod: .seconds(5))
        throw error
    }
    await server.shutdown(gracePeriod: .seconds(5))
}

/// Waits on this thread (polling) until `condition` holds or `timeout` passes; returns whether it held.
/// The timeout is a ceiling for a loaded machine, never a wait.
func eventuallyBlocking(timeout: Duration = .seconds(120), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}


/// Whether a TCP connection to 127.0.0.1:`port` is refused right now (nothing accepts there).
func connectionRefused(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    return result != 0 && errno == ECONNREFUSED
}
