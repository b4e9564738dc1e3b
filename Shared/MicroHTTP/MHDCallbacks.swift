import CMicroHTTPD
import Logging
import Dispatch
import Locking
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One request's state, owned by MHD's `con_cls` slot from the first access-handler call
/// until the completion callback releases it. Only the thread serving that connection
/// touches it, except `resume`, which hands the connection back to that thread.
final class RequestState {
    let started = ContinuousClock.now
    /// `CompletedRequest.serial`.
    var serial: UInt64 = 0
    var method = ""
    var target = ""
    var body: [UInt8] = []
    var bodyTooLarge = false
    /// Set while the connection is suspended (added latency, an async handler): the answer
    /// arrives there from another thread before the connection is resumed.
    var later: Later?
    var status = 0
    var bytesSent: UInt64 = 0
    var note: String?
    /// The body being streamed, if the answer is a stream (its bytes are counted there).
    var stream: BodyStream?
}

/// The C callbacks handed to MHD. Context travels as `Unmanaged` pointers: `cls` is the
/// `ServerCore` (kept alive by the server until MHD's threads are joined) and `con_cls`
/// is a retained `RequestState`.
nonisolated enum MHDCallbacks {
    static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        guard let cls, let connection, let conCls, let uploadSize else { return .NO }
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()

        guard let existing = conCls.pointee else {
            // First call: headers are in. Keep-alive needs the answer queued on a later call.
            let state = RequestState()
            state.serial = core.lastSerial.add(1, ordering: .relaxed).newValue
            state.method = method.map { String(cString: $0) } ?? ""
            state.target = rebuildTarget(connection: connection, path: url)
            conCls.pointee = Unmanaged.passRetained(state).toOpaque()
            core.activeRequests.add(1, ordering: .relaxed)
            let headerSize = headerBytes(connection) + state.target.utf8.count + state.method.utf8.count
            if headerSize > core.configuration.maxHeaderSize {
                state.bodyTooLarge = true
                return queue(core.errorResponder(431, "request headers of \(headerSize) bytes are over the limit of \(core.configuration.maxHeaderSize)"),
                             for: nil, state: state, connection: connection, core: core)
            }
            if let length = header(connection, "Content-Length").flatMap({ UInt64($0) }),
               length > UInt64(core.configuration.maxBodySize) {
                state.bodyTooLarge = true
                // Up to `drainedBodyLimit` the body is read and dropped, and the 413 comes at its
                // end, as for a chunked body (see the configuration); beyond it, at once. At once
                // too when the client waits for "100 Continue" before sending it.
                let waitsToSend = header(connection, "Expect")?.lowercased() == "100-continue"
                guard length <= UInt64(core.configuration.drainedBodyLimit), !waitsToSend else {
                    return queue(core.errorResponder(413, "request body of \(length) bytes is over the limit of \(core.configuration.maxBodySize)"),
                                 for: nil, state: state, connection: connection, core: core)
                }
            }
            return .YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()

        if let later = state.later {
            // Resumed: the answer is in, or the server is stopping and could not wait for it.
            state.later = nil
            guard let build = later.slot.withLock({ $0 }) else {
                return queue(core.errorResponder(503, "the server is shutting down"), for: later.request, state: state,
                             connection: connection, core: core)
            }
            let response = build()
            guard later.waits else { return queue(response, for: later.request, state: state, connection: connection, core: core) }
            return answer(response, for: later.request, latency: core.addedLatency.load(ordering: .relaxed), state: state,
                          connection: connection, core: core)
        }
        if state.status != 0 { return .YES }  // answered early (413); MHD is draining

        if uploadSize.pointee > 0 {
            if !state.bodyTooLarge, let uploadData {
                if state.body.count + uploadSize.pointee > core.configuration.maxBodySize {
                    state.bodyTooLarge = true
                    state.body = []
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
                        state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
                    }
                }
            }
            uploadSize.pointee = 0
            return .YES
        }

        // The whole request is in.
        let latency = core.addedLatency.load(ordering: .relaxed)
        let request: HTTPRequest
        switch makeRequest(core: core, state: state, connection: connection) {
        case .failure(let refusal):
            return queue(refusal.response, for: nil, state: state, connection: connection, core: core)
        case .success(let made):
            request = made
        }
        switch core.handler {
        case .immediate(let handler):
            return answer(handler(request), for: request, latency: latency, state: state, connection: connection, core: core)
        case .deferred(let handler):
            let later = Later(request: request, waits: false)
            guard suspend(connection, state: state, later: later, core: core) else {
                return queue(core.errorResponder(503, "the server is shutting down"), for: request, state: state,
                             connection: connection, core: core)
            }
            let handle = ConnectionHandle(pointer: connection)
            Task {
                let response = await handler(request)
                let wait = Duration.milliseconds(latency) + (response.delay ?? .zero)
                if wait > .zero { try? await Task.sleep(for: wait) }
                later.slot.withLock { $0 = { response } }
                core.resume(handle)
            }
            return .YES
        }
    }

    /// Sends a handler's answer: at once; after the added latency and its delay (the
    /// connection suspended meanwhile); or, for a later answer, once its work hands over the
    /// builder (suspended too), which then runs here on MHD's thread.
    private static func answer(_ response: HTTPResponse, for request: HTTPRequest, latency: Int, state: RequestState,
                               connection: OpaquePointer, core: ServerCore) -> MHD_Result {
        let handle = ConnectionHandle(pointer: connection)
        if let work = response.laterWork {
            let later = Later(request: request, waits: true)
            guard suspend(connection, state: state, later: later, core: core) else {
                return queue(core.errorResponder(503, "the server is shutting down"), for: request, state: state,
                             connection: connection, core: core)
            }
            // Suspended before the work starts: its answer may come at once, from any thread.
            work(PendingAnswer(slot: later.slot) { core.resume(handle) })
            return .YES
        }
        let wait = Duration.milliseconds(latency) + (response.delay ?? .zero)
        guard wait > .zero else { return queue(response, for: request, state: state, connection: connection, core: core) }
        let later = Later(request: request, waits: false)
        later.slot.withLock { $0 = { response } }
        guard suspend(connection, state: state, later: later, core: core) else {
            return queue(response, for: request, state: state, connection: connection, core: core)  // stopping: at once
        }
        core.resume(handle, after: wait)
        return .YES
    }

    /// Suspends a connection whose answer comes later; false when the server is stopping
    /// (answer at once then). `state.later` is set before suspending: once suspended, a
    /// resume may come from another thread.
    private static func suspend(_ connection: OpaquePointer, state: RequestState, later: Later, core: ServerCore) -> Bool {
        state.later = later
        let suspended = core.suspend(ConnectionHandle(pointer: connection))
        if !suspended { state.later = nil }
        return suspended
    }

    static let completed: MHD_RequestCompletedCallback = { cls, _, conCls, termination in
        guard let cls, let conCls, let pointer = conCls.pointee else { return }
        conCls.pointee = nil
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
        let state = Unmanaged<RequestState>.fromOpaque(pointer).takeRetainedValue()
        core.activeRequests.subtract(1, ordering: .releasing)
        let elapsed = ContinuousClock.now - state.started
        // Tenths of a millisecond, written as integers ("0.4", "12.0"): a Double's description costs more.
        let tenths = elapsed.components.seconds * 10_000 + (elapsed.components.attoseconds + 50_000_000_000_000) / 100_000_000_000_000
        if let stream = state.stream {
            stream.disarm()
            state.bytesSent = stream.sent.withLock { $0 }
        }
        let completed = termination == .REQUEST_TERMINATED_COMPLETED_OK
        core.logger.info("\(state.method) \(core.configuration.loggedTarget(state.target)) \(state.status) \(state.bytesSent)", metadata: [
            "ms": "\(tenths / 10).\(tenths % 10)",
            "completed": completed ? "true" : "false",
        ])
        core.observer?(CompletedRequest(method: state.method, target: state.target, status: state.status, bytesSent: state.bytesSent,
                                        duration: elapsed, completed: completed, note: state.note, serial: state.serial))
    }

    /// The request a handler sees, or the answer to a request no handler may see (413, 400).
    private static func makeRequest(core: ServerCore, state: RequestState,
                                    connection: OpaquePointer) -> Result<HTTPRequest, Refusal> {
        if state.bodyTooLarge {
            return .failure(Refusal(core.errorResponder(413, "request body is over the limit of \(core.configuration.maxBodySize) bytes")))
        }
        do {
            var request = try HTTPRequest(method: state.method, target: state.target,
                                          headers: headers(connection), body: state.body,
                                          remoteAddress: SocketAddress.describe(mhd_shim_client_address(connection)))
            request.isSecure = core.configuration.tls != nil
            return .success(request)
        } catch {
            return .failure(Refusal(core.errorResponder(400, error.description)))
        }
    }

    /// An answer given before any handler ran.
    private struct Refusal: Error {
        let response: HTTPResponse
        init(_ response: HTTPResponse) { self.response = response }
    }

    /// Hands a response to MHD, applying ranges and conditionals first when `request` is given.
    private static func queue(_ response: HTTPResponse, for request: HTTPRequest?, state: RequestState,
                              connection: OpaquePointer, core: ServerCore) -> MHD_Result {
        var response = request.map { response.applyingConditionals(for: $0) } ?? response.withRangedBodyMade()
        if response.dropsConnection {
            state.note = response.note
            return .NO  // MHD closes the connection without an answer
        }
        let mhdResponse: OpaquePointer?
        switch response.body {
        case .empty:
            mhdResponse = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
        case .bytes(let bytes):
            mhdResponse = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .stream(let stream):
            let context = StreamContext(stream: stream, connection: ConnectionHandle(pointer: connection), core: core)
            state.stream = stream
            mhdResponse = MHD_create_response_from_callback(stream.length ?? UInt64.max, 32 * 1024, MHDCallbacks.readStream,
                                                            Unmanaged.passRetained(context).toOpaque(), MHDCallbacks.releaseStream)
        case .ranged:
            return .NO  // a ranged body made another ranged body: nothing to send
        case .file(let path, let offset, let length):
            if let mapped = core.mappedFiles.bytes(path: path, offset: offset, length: length) {
                // The mapping outlives every response (it is never unmapped).
                mhdResponse = MHD_create_response_from_buffer(Int(length), mapped, .RESPMEM_PERSISTENT)
                break
            }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                response = HTTPResponse(status: 404, body: .empty)
                mhdResponse = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
            } else {
                // MHD owns the descriptor from here and closes it with the response.
                mhdResponse = MHD_create_response_from_fd_at_offset64(length, fd, offset)
            }
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for field in response.headers {
            _ = MHD_add_response_header(mhdResponse, field.name, field.value)
        }
        state.status = response.status
        state.note = response.note
        state.bytesSent = state.method == "HEAD" ? 0 : response.body.count
        // Before the answer is queued: once queued, MHD may send its last byte before this
        // thread runs on, and a client holding the answer must find it reported.
        core.answerObserver?(CompletedRequest(method: state.method, target: state.target, status: state.status,
                                              bytesSent: state.bytesSent, duration: ContinuousClock.now - state.started,
                                              completed: false, note: state.note, serial: state.serial))
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    /// The target as it arrived: MHD hands over the path and query arguments undecoded
    /// (the shim's unescape callback is a no-op); rejoin them for `RequestTarget`.
    private static func rebuildTarget(connection: OpaquePointer, path: UnsafePointer<CChar>?) -> String {
        var target = path.map { String(cString: $0) } ?? "/"
        var pairs: [String] = []
        withUnsafeMutablePointer(to: &pairs) { pointer in
            _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let list = cls.assumingMemoryBound(to: [String].self)
                let name = String(cString: key)
                list.pointee.append(value.map { name + "=" + String(cString: $0) } ?? name)
                return .YES
            }, pointer)
        }
        if !pairs.isEmpty { target += "?" + pairs.joined(separator: "&") }
        return target
    }

    private static func headers(_ connection: OpaquePointer) -> HTTPHeaders {
        var fields: [(String, String)] = []
        withUnsafeMutablePointer(to: &fields) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let list = cls.assumingMemoryBound(to: [(String, String)].self)
                list.pointee.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                return .YES
            }, pointer)
        }
        return HTTPHeaders(fields)
    }

    /// The bytes of every header name and value, as received.
    private static func headerBytes(_ connection: OpaquePointer) -> Int {
        var total = 0
        withUnsafeMutablePointer(to: &total) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, { cls, _, key, value in
                guard let cls else { return .YES }
                cls.assumingMemoryBound(to: Int.self).pointee += (key.map { strlen($0) } ?? 0) + (value.map { strlen($0) } ?? 0) + 4
                return .YES
            }, pointer)
        }
        return total
    }

    private static func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }
}

extension MHDCallbacks {
    /// MHD asks a streamed body for its next bytes. Waiting suspends the connection (MHD
    /// allows it from this callback) and resumes it on a timer or on the stream's signal.
    static let readStream: MHD_ContentReaderCallback = { cls, _, buffer, max in
        guard let cls, let buffer else { return -2 }
        let context = Unmanaged<StreamContext>.fromOpaque(cls).takeUnretainedValue()
        let core = context.core, handle = context.connection
        switch context.stream.next(max: max) {
        case .bytes(let bytes):
            let count = min(bytes.count, max)
            bytes.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress!, byteCount: count) }
            return count
        case .end:
            return -1  // MHD_CONTENT_READER_END_OF_STREAM
        case .abort:
            return -2  // MHD_CONTENT_READER_END_WITH_ERROR: the connection is closed
        case .waitFor(let duration):
            guard core.suspend(handle) else { return -2 }  // stopping
            core.resume(handle, after: duration)
            return 0
        case .waitForSignal:
            guard core.suspend(handle) else { return -2 }
            // Armed only once suspended: a signal in between still finds the connection to resume.
            if !context.stream.arm({ core.resume(handle) }) { core.resume(handle) }
            return 0
        }
    }

    static let releaseStream: MHD_ContentReaderFreeCallback = { cls in
        guard let cls else { return }
        Unmanaged<StreamContext>.fromOpaque(cls).release()
    }
}

/// What the stream callbacks need: the stream, its connection and the server.
final class StreamContext: Sendable {
    let stream: BodyStream
    let connection: ConnectionHandle
    let core: ServerCore

    init(stream: BodyStream, connection: ConnectionHandle, core: ServerCore) {
        self.stream = stream
        self.connection = connection
        self.core = core
    }
}

/// The answer of a suspended connection: the request it answers, and the response once
/// made (on another thread; read by MHD's thread after the connection is resumed).
final class Later: Sendable {
    let request: HTTPRequest
    /// Builds the answer on MHD's thread once the connection is resumed; nil until given.
    let slot = Locked<(@Sendable () -> HTTPResponse)?>(nil)
    /// Whether the added latency and the answer's delay are still to come (a later answer's
    /// builder); false when they were waited before the resume.
    let waits: Bool
    init(request: HTTPRequest, waits: Bool) {
        self.request = request
        self.waits = waits
    }
}

/// A suspended connection handed to the latency timer. MHD allows `MHD_resume_connection`
/// from any thread when the daemon runs with `MHD_ALLOW_SUSPEND_RESUME`.
struct ConnectionHandle: @unchecked Sendable, Hashable {
    let pointer: OpaquePointer
}
