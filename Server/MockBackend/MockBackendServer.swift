public import Foundation
public import Logging
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
    /// One listener, or two when it serves plain HTTP and HTTPS on two ports (HTTP first).
    private let listeners: [HTTPServer]
    /// The file a client trusts to accept the server's HTTPS certificate (the local CA's);
    /// nil without HTTPS or with a certificate given on the command line.
    public let caFile: URL?

    private init(app: MockBackendApp, listeners: [HTTPServer], caFile: URL?) {
        self.app = app
        self.listeners = listeners
        self.caFile = caFile
    }

    /// Loads everything, binds and starts serving. The app is ready before the first request is accepted.
    public static func start(configuration: BackendConfiguration, clock: BackendClock = BackendClock(),
                             logger: Logger = Logger(label: "mock-backend")) throws -> MockBackendServer {
        let (credentials, caFile) = try tlsCredentials(configuration)
        // The app needs the bound ports for its URLs and the servers need a handler before they
        // bind, so the handler reads the app from a slot filled right after binding.
        let slot = AppSlot()
        var listeners: [HTTPServer] = []
        let stopAll = { for listener in listeners { listener.shutdown(gracePeriod: .zero) } }
        do {
            // Plain HTTP on `port`, unless HTTPS takes it; HTTPS on its own port or on `port`.
            if credentials == nil || configuration.tls?.port != nil {
                listeners.append(try listen(configuration, port: configuration.port, tls: nil, slot: slot, logger: logger))
            }
            if let credentials {
                listeners.append(try listen(configuration, port: configuration.tls?.port ?? configuration.port,
                                            tls: credentials, slot: slot, logger: logger))
            }
            func base(_ listener: HTTPServer) -> String {
                PublicBaseURL.base(configured: configuration.publicBaseURL, secure: listener.isSecure,
                                   host: configuration.host, port: listener.port)
            }
            let primary = base(listeners[0])
            let secure = listeners.count > 1 ? base(listeners[1]) : nil
            let app = try MockBackendApp(configuration: configuration, baseURL: primary, secureBaseURL: secure, clock: clock, logger: logger)
            slot.app = app
            return MockBackendServer(app: app, listeners: listeners, caFile: caFile)
        } catch {
            stopAll()
            throw error
        }
    }

    private static func listen(_ configuration: BackendConfiguration, port: Int, tls: TLSCredentials?, slot: AppSlot,
                               logger: Logger) throws -> HTTPServer {
        var httpConfiguration = HTTPServerConfiguration()
        httpConfiguration.host = configuration.host
        httpConfiguration.port = port
        httpConfiguration.threadCount = configuration.threadCount
        httpConfiguration.maxBodySize = configuration.maxBodySize
        httpConfiguration.addedLatencyMilliseconds = configuration.addedLatencyMilliseconds
        // Fixture files and the encrypted-segment cache are written once (atomic renames), so
        // they may be mapped and sent from memory.
        httpConfiguration.mappedFileBytesLimit = configuration.mappedFileBytesLimit
        httpConfiguration.tls = tls
        httpConfiguration.loggedTarget = SecretRedaction.redact
        let http = HTTPServer(configuration: httpConfiguration, logger: logger,
                              errorResponder: { status, message in
                                  var response = APIResponse.error(status: status, message: message)
                                  APIResponse.addCORS(to: &response)
                                  return response
                              },
                              observer: { request in slot.app?.requestLog.record(request, at: Date()) },
                              answerObserver: { request in slot.app?.requestLog.recordAnswer(request, at: Date()) }) { request in
            guard let app = slot.app else {
                return HTTPError(503, "SERVICE_UNAVAILABLE", nil, "the backend is still starting").response
            }
            return app.handle(request)
        }
        try http.start()
        return http
    }

    /// The key and certificate to serve HTTPS with, and the CA file to trust when the local
    /// CA made them; nil without HTTPS.
    private static func tlsCredentials(_ configuration: BackendConfiguration) throws -> (TLSCredentials?, URL?) {
        guard let tls = configuration.tls else { return (nil, nil) }
        guard TLSCredentials.isSupported else {
            throw TLSSetupError(.tlsNotSupported, "this libmicrohttpd was built without TLS support (GnuTLS), so --tls cannot work; "
                                + "install Debian's libmicrohttpd12, which is built with GnuTLS")
        }
        switch (tls.certificateFile, tls.privateKeyFile) {
        case (let certificate?, let key?):
            do {
                return (TLSCredentials(privateKeyPEM: try String(contentsOf: key, encoding: .utf8),
                                       certificateChainPEM: try String(contentsOf: certificate, encoding: .utf8)), nil)
            } catch {
                throw TLSSetupError(.unreadableCredentials, "cannot read the TLS certificate or key: \(error.localizedDescription)",
                                    underlying: error)
            }
        case (nil, nil):
            let authority = LocalCertificateAuthority(directory: configuration.dataDirectory.appendingPathComponent("tls"))
            let names = LocalCertificateAuthority.defaultNames(host: configuration.host, extra: tls.extraNames)
            return (try authority.serverCredentials(names: names), authority.caFile)
        default:
            throw TLSSetupError(.badConfiguration, "give both a certificate and its key (--tls-cert and --tls-key), or neither for the local CA's")
        }
    }

    /// The bound port (of plain HTTP when it serves both).
    public var port: Int { listeners[0].port }
    /// The bound HTTPS port, when it serves HTTPS.
    public var securePort: Int? { listeners.first(where: \.isSecure)?.port }
    /// Requests in flight now (an open request-log stream counts).
    public var activeRequests: Int { listeners.reduce(0) { $0 + $1.activeRequests } }
    /// The base URL in every link (over plain HTTP when it serves both).
    public var baseURL: String { app.baseURL }
    /// The base URL in links answered over HTTPS; nil without HTTPS.
    public var secureBaseURL: String? {
        listeners.count > 1 ? app.secureBaseURL : listeners[0].isSecure ? app.baseURL : nil
    }
    /// Every base URL its answers carry: plain HTTP first, then HTTPS (one when
    /// `--public-base-url` gives both listeners the same).
    public var baseURLs: [String] {
        guard let secure = app.secureBaseURL, secure != app.baseURL else { return [app.baseURL] }
        return [app.baseURL, secure]
    }

    /// Milliseconds added to every response from now on.
    public var addedLatencyMilliseconds: Int {
        get { listeners[0].addedLatencyMilliseconds }
        set { for listener in listeners { listener.addedLatencyMilliseconds = newValue } }
    }

    /// Stops accepting, finishes requests in flight (up to `gracePeriod`), closes everything.
    /// Request-log streams end first: they would never finish by themselves.
    public func shutdown(gracePeriod: Duration = .seconds(10)) {
        app.requestLog.close()
        for listener in listeners { listener.shutdown(gracePeriod: gracePeriod) }
        app.closeStore()
    }

    /// The same, without holding a thread of the cooperative pool while requests finish.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        app.requestLog.close()
        for listener in listeners { await listener.shutdown(gracePeriod: gracePeriod) }
        app.closeStore()
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
