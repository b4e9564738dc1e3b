import Foundation
import TestKit
import Logging
import MicroHTTP
import Synchronization

/// A logger that drops everything, so request logs do not flood the test output.
let quietLogger = Logger(label: "microhttp-tests") { _ in SwiftLogNoOpLogHandler() }

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
func eventuallyBlocking(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

