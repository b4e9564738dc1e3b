import CMicroHTTPD
package import Logging
import Synchronization
import Locking
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd: epoll, a thread pool, keep-alive, zero-copy files.
///
/// Handlers run synchronously on MHD's pool threads, so they must not block for long;
/// added latency suspends the connection instead of sleeping on a thread, and so does an
/// answer that has to wait for other work (`HTTPResponse.later`).
///
/// ```swift
/// let server = HTTPServer(configuration: config, logger: logger) { request in
///     .text("hello")
/// }
/// try server.start()
/// print("listening on http://127.0.0.1:\(server.port)")
/// ```
package final class HTTPServer: Sendable {
    /// Answers one request. Runs on an MHD thread.
    package typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse
    /// Answers one request when its answer has to wait (for a file still arriving, say): the
    /// connection is suspended meanwhile, so no MHD thread waits with it.
    package typealias DeferredHandler = @Sendable (HTTPRequest) async -> HTTPResponse
    /// Told about every request once its answer is sent or its connection is gone (runs on
    /// an MHD thread: keep it short).
    package typealias CompletionObserver = @Sendable (CompletedRequest) -> Void
    /// Told about every answer just before it is handed to the connection, so before any of
    /// its bytes leave (runs on an MHD thread: keep it short). `completed` is false and
    /// `bytesSent` the body's planned length; the completion observer later reports the same
    /// request (the same `serial`) as it ended.
    package typealias AnswerObserver = @Sendable (CompletedRequest) -> Void
    /// Builds the answer for failures found before a handler runs (bad target, 413, 500).
    package typealias ErrorResponder = @Sendable (_ status: Int, _ message: String) -> HTTPResponse

    let core: ServerCore
    private let daemon = Locked<DaemonHandle?>(nil)
    private let boundPort = Atomic<Int>(0)

    /// Creates a server; nothing is bound until `start()`.
    package init(configuration: HTTPServerConfiguration, logger: Logger,
                errorResponder: @escaping ErrorResponder = HTTPServer.plainErrorResponder,
                observer: CompletionObserver? = nil, answerObserver: AnswerObserver? = nil, handler: @escaping Handler) {
        core = ServerCore(configuration: configuration, logger: logger, handler: .immediate(handler), errorResponder: errorResponder,
                          observer: observer, answerObserver: answerObserver)
    }

    /// Creates a server whose handler answers asynchronously; nothing is bound until `start()`.
    package init(configuration: HTTPServerConfiguration, logger: Logger,
                errorResponder: @escaping ErrorResponder = HTTPServer.plainErrorResponder,
                observer: CompletionObserver? = nil, answerObserver: AnswerObserver? = nil,
                deferredHandler: @escaping DeferredHandler) {
        core = ServerCore(configuration: configuration, logger: logger, handler: .deferred(deferredHandler), errorResponder: errorResponder,
                          observer: observer, answerObserver: answerObserver)
    }

    deinit {
        // A server dropped without `shutdown()` still answers suspended connections
        // before stopping: MHD aborts when stopped with any of them suspended.
        if let handle = takeDaemon() {
            let listenSocket = Self.quiesce(handle)
            core.resumeAllAndStop()
            Self.waitForRequests(core, for: .seconds(1)) { usleep(5_000) }
            Self.stop(handle, listenSocket: listenSocket)
        }
    }

    /// The bound port once started (the real one when the configuration asked for 0).
    package var port: Int { boundPort.load(ordering: .acquiring) }

    /// Whether it serves HTTPS.
    package var isSecure: Bool { core.configuration.tls != nil }

    /// Requests being handled right now (headers received, response not yet completed).
    package var activeRequests: Int { core.activeRequests.load(ordering: .relaxed) }

    /// Milliseconds added to every response from now on.
    package var addedLatencyMilliseconds: Int {
        get { core.addedLatency.load(ordering: .relaxed) }
        set { core.addedLatency.store(max(0, newValue), ordering: .relaxed) }
    }

    /// Binds and starts serving. Throws if the address is invalid or the port is taken.
    package func start() throws(HTTPServerError) {
        let config = core.configuration
        let address = try SocketAddress(host: config.host, port: config.port)
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_TURBO.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        if config.tls != nil {
            guard TLSCredentials.isSupported else {
                throw HTTPServerError(.tlsNotSupported, "this libmicrohttpd was built without TLS support (GnuTLS); "
                                      + "install Debian's libmicrohttpd12 (built with GnuTLS) to serve HTTPS")
            }
            flags |= MHD_USE_TLS.rawValue
        }
        let context = Unmanaged.passUnretained(core).toOpaque()
        let started: OpaquePointer? = address.withSockaddr { sockaddr in
            config.tls?.privateKeyPEM.withCString { key in
                config.tls?.certificateChainPEM.withCString { certificate in
                    config.tls?.priorities.withCString { priorities in
                        Self.startDaemon(flags, sockaddr, config, context, key, certificate, priorities)
                    }
                }
            } ?? Self.startDaemon(flags, sockaddr, config, context, nil, nil, nil)
        }
        guard let started else {
            if config.tls != nil {
                throw HTTPServerError(.couldNotBind, "cannot serve HTTPS on \(config.host):\(config.port): the address is in use "
                                      + "or not available, or GnuTLS refused the key or certificate (PEM, matching each other) or the priority string")
            }
            throw HTTPServerError(.couldNotBind, "cannot listen on \(config.host):\(config.port) (address in use or not available)")
        }
        boundPort.store(Int(mhd_shim_bound_port(started)), ordering: .releasing)
        daemon.withLock { $0 = DaemonHandle(pointer: started) }
    }

    private static func startDaemon(_ flags: UInt32, _ sockaddr: UnsafePointer<sockaddr>, _ config: HTTPServerConfiguration,
                                    _ context: UnsafeMutableRawPointer, _ key: UnsafePointer<CChar>?,
                                    _ certificate: UnsafePointer<CChar>?, _ priorities: UnsafePointer<CChar>?) -> OpaquePointer? {
        mhd_shim_start(
            flags, sockaddr, UInt32(max(1, config.threadCount)), config.connectionMemoryLimit,
            UInt32(max(1, config.idleTimeoutSeconds)), UInt32(max(16, config.listenBacklog)),
            MHDCallbacks.access, context, MHDCallbacks.completed, context, key, certificate, priorities)
    }

    /// Stops accepting connections, lets requests in flight finish (up to `gracePeriod`),
    /// then closes every connection and joins MHD's threads. Safe to call twice. Blocks the
    /// calling thread while requests finish: from async code, use the `async` variant.
    package func shutdown(gracePeriod: Duration = .seconds(10)) {
        guard let handle = takeDaemon() else { return }
        let listenSocket = Self.quiesce(handle)
        Self.waitForRequests(core, for: gracePeriod) { usleep(5_000) }
        // Connections still waiting out added latency are answered now; MHD must not be
        // stopped with suspended connections, and their timers must not touch it afterwards.
        core.resumeAllAndStop()
        Self.waitForRequests(core, for: .seconds(1)) { usleep(5_000) }
        Self.stop(handle, listenSocket: listenSocket)
    }

    /// `shutdown(gracePeriod:)` without holding a thread of the cooperative pool while
    /// requests finish.
    package func shutdown(gracePeriod: Duration = .seconds(10)) async {
        guard let handle = takeDaemon() else { return }
        let listenSocket = Self.quiesce(handle)
        await Self.waitForRequests(core, for: gracePeriod) { try? await Task.sleep(for: .milliseconds(5)) }
        core.resumeAllAndStop()
        await Self.waitForRequests(core, for: .seconds(1)) { try? await Task.sleep(for: .milliseconds(5)) }
        // MHD_stop_daemon joins MHD's threads: on a thread of its own, not the cooperative pool.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue(label: "MicroHTTP.stop").async {
                Self.stop(handle, listenSocket: listenSocket)
                done.resume()
            }
        }
    }

    private func takeDaemon() -> DaemonHandle? {
        daemon.withLock { handle -> DaemonHandle? in
            defer { handle = nil }
            return handle
        }
    }

    /// Stops accepting; returns the listen socket (closed by `stop`).
    private static func quiesce(_ handle: DaemonHandle) -> Int32 {
        let listenSocket = MHD_quiesce_daemon(handle.pointer)
        // MHD no longer polls the socket, but the kernel would still complete handshakes
        // into its backlog; shutting it down makes new clients see a refusal at once.
        if listenSocket >= 0 { _ = Glibc.shutdown(listenSocket, Int32(SHUT_RDWR)) }
        return listenSocket
    }

    /// Returns once no request is in flight or `limit` has passed, pausing with `pause`.
    private static func waitForRequests(_ core: ServerCore, for limit: Duration, pause: () -> Void) {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while core.activeRequests.load(ordering: .acquiring) > 0 && ContinuousClock.now < deadline { pause() }
    }

    private static func waitForRequests(_ core: ServerCore, for limit: Duration, pause: () async -> Void) async {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while core.activeRequests.load(ordering: .acquiring) > 0 && ContinuousClock.now < deadline { await pause() }
    }

    private static func stop(_ handle: DaemonHandle, listenSocket: Int32) {
        MHD_stop_daemon(handle.pointer)
        if listenSocket >= 0 { close(listenSocket) }
    }

    /// A plain-text error body, for servers that have no error format of their own.
    package static let plainErrorResponder: ErrorResponder = { status, message in
        .text("\(status) \(HTTPStatus.reason(status)): \(message)\n", status: status)
    }
}

/// The daemon pointer. MHD's daemon is thread-safe for the calls made on it here
/// (quiesce, stop, info), and this wrapper is only moved under the server's lock.
struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// How requests are answered: on MHD's thread, or later by a task.
enum Handling: Sendable {
    case immediate(HTTPServer.Handler)
    case deferred(HTTPServer.DeferredHandler)
}

/// What the C callbacks need: immutable configuration, the handler and atomic counters.
final class ServerCore: Sendable {
    let configuration: HTTPServerConfiguration
    let logger: Logger
    let handler: Handling
    let observer: HTTPServer.CompletionObserver?
    let answerObserver: HTTPServer.AnswerObserver?
    /// The last request serial handed out (`CompletedRequest.serial`).
    let lastSerial = Atomic<UInt64>(0)
    let errorResponder: HTTPServer.ErrorResponder
    let activeRequests = Atomic<Int>(0)
    let addedLatency: Atomic<Int>
    let timerQueue = DispatchQueue(label: "MicroHTTP.latency")
    let mappedFiles: MappedFiles
    /// Connections suspended for added latency; `nil` once the server is stopping.
    let suspended = Locked<Set<ConnectionHandle>?>([])

    init(configuration: HTTPServerConfiguration, logger: Logger,
         handler: Handling, errorResponder: @escaping HTTPServer.ErrorResponder, observer: HTTPServer.CompletionObserver?,
         answerObserver: HTTPServer.AnswerObserver? = nil) {
        self.configuration = configuration
        self.logger = logger
        self.handler = handler
        self.observer = observer
        self.answerObserver = answerObserver
        self.errorResponder = errorResponder
        self.addedLatency = Atomic(max(0, configuration.addedLatencyMilliseconds))
        mappedFiles = MappedFiles(limit: configuration.mappedFileBytesLimit)
    }

    /// Suspends a connection and tracks it; false when the server is stopping.
    func suspend(_ handle: ConnectionHandle) -> Bool {
        suspended.withLock { set -> Bool in
            guard set != nil else { return false }
            MHD_suspend_connection(handle.pointer)
            set?.insert(handle)
            return true
        }
    }

    /// Resumes a suspended connection after `delay`.
    func resume(_ handle: ConnectionHandle, after delay: Duration) {
        let nanoseconds = Int(delay.components.seconds) * 1_000_000_000 + Int(delay.components.attoseconds / 1_000_000_000)
        timerQueue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in resume(handle) }
    }

    /// Resumes a connection whose latency is over, unless shutdown already resumed it.
    func resume(_ handle: ConnectionHandle) {
        suspended.withLock { set in
            if set?.remove(handle) != nil { MHD_resume_connection(handle.pointer) }
        }
    }

    /// Resumes every suspended connection and refuses to track new ones.
    func resumeAllAndStop() {
        suspended.withLock { set in
            for handle in set ?? [] { MHD_resume_connection(handle.pointer) }
            set = nil
        }
    }
}

/// One request as it ended, for a request log.
package struct CompletedRequest: Sendable {
    /// The method and the target as received.
    package var method: String
    package var target: String
    /// The status answered (0 when no answer was queued).
    package var status: Int
    /// Body bytes handed to the connection (a stream: as far as it got).
    package var bytesSent: UInt64
    /// From the headers' arrival to the end.
    package var duration: Duration
    /// Whether the whole answer was sent (false: the connection broke off or timed out).
    package var completed: Bool
    /// The handler's note (`HTTPResponse.note`).
    package var note: String?
    /// Which request this is (unique per server): the answer observer and the completion
    /// observer see the same request under the same serial.
    package var serial: UInt64 = 0
}
