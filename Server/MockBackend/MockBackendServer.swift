import Foundation
import Logging
import MicroHTTP
import Locking

/// The backend behind libmicrohttpd: binds, builds the app with the bound address as its
/// base URL, and serves until `shutdown()`.
///
/// ```swift
/// var config = BackendConfiguration(dataDirectory: tmp)
/// config.port = 0
/// let server = try MockBackendServer.start(configuration: config)
/// print(server.baseURL)  // http://127.0.0.1:41234
/// ```
public final class MockBackendServer: Sendable {
    /// The request handling.
    public let app: MockBackendApp
    private let http: HTTPServer

    private init(app: MockBackendApp, http: HTTPServer) {
        self.app = app
        self.http = http
    }

    /// Loads everything, binds and starts serving. The app is ready before the first request is accepted.
    public static func start(configuration: BackendConfiguration, clock: BackendClock = BackendClock(),
                             logger: Logger = Logger(label: "mock-backend")) throws -> MockBackendServer {
        var httpConfiguration = HTTPServerConfiguration()
        httpConfiguration.host = configuration.host
        httpConfiguration.port = configuration.port
        httpConfiguration.threadCount = configuration.threadCount
        httpConfiguration.maxBodySize = configuration.maxBodySize
        httpConfiguration.addedLatencyMilliseconds = configuration.addedLatencyMilliseconds
        // Fixture files and the encrypted-segment cache are written once (atomic renames), so
        // they may be mapped and sent from memory.
        httpConfiguration.mappedFileBytesLimit = configuration.mappedFileBytesLimit
        // The app needs the bound port for its URLs and the server needs a handler before it
        // binds, so the handler reads the app from a slot filled right after binding.
        let slot = AppSlot()
        let http = HTTPServer(configuration: httpConfiguration, logger: logger,
                              errorResponder: { status, message in
                                  var response = APIResponse.error(status: status, message: message)
                                  APIResponse.addCORS(to: &response)
                                  return response
                              },
                              observer: { request in slot.app?.requestLog.record(request, at: Date()) }) { request in
            guard let app = slot.app else {
                return APIResponse.error(503, "SERVICE_UNAVAILABLE", nil, "the backend is still starting")
            }
            return app.handle(request)
        }
        try http.start()
        let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let base = configuration.publicBaseURL ?? "http://\(hostPart):\(http.port)"
        do {
            let app = try MockBackendApp(configuration: configuration, baseURL: base, clock: clock, logger: logger)
            slot.app = app
            return MockBackendServer(app: app, http: http)
        } catch {
            http.shutdown(gracePeriod: .zero)
            throw error
        }
    }

    /// The bound port.
    public var port: Int { http.port }
    /// Requests in flight now (an open request-log stream counts).
    public var activeRequests: Int { http.activeRequests }
    /// The base URL in every link.
    public var baseURL: String { app.baseURL }

    /// Milliseconds added to every response from now on.
    public var addedLatencyMilliseconds: Int {
        get { http.addedLatencyMilliseconds }
        set { http.addedLatencyMilliseconds = newValue }
    }

    /// Stops accepting, finishes requests in flight (up to `gracePeriod`), closes everything.
    /// Request-log streams end first: they would never finish by themselves.
    public func shutdown(gracePeriod: Duration = .seconds(10)) {
        app.requestLog.close()
        http.shutdown(gracePeriod: gracePeriod)
    }

    /// The same, without holding a thread of the cooperative pool while requests finish.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        app.requestLog.close()
        await http.shutdown(gracePeriod: gracePeriod)
    }
}

/// Holds the app once it exists; read on every request, written once at start-up.
private final class AppSlot: Sendable {
    private let storage = Locked<MockBackendApp?>(nil)
    var app: MockBackendApp? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
