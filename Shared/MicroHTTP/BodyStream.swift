import Locking

/// A response body made piece by piece while it is sent: server-sent events, a body paced to a
/// bandwidth, a body that stalls or breaks off. While it waits, its connection is suspended:
/// no server thread waits with it.
///
/// ```swift
/// let events = BodyStream(length: nil) { max in
///     if let line = queue.next() { return .bytes(line) }
///     return .waitForSignal          // events.signal() when the next line is there
/// }
/// return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/event-stream")]), body: .stream(events))
/// ```
package final class BodyStream: Sendable {
    /// What the next read of a body gives.
    package enum Step: Sendable, Equatable {
        /// These bytes (at most the `max` asked for), sent now.
        case bytes([UInt8])
        /// Nothing for now: ask again after this long.
        case waitFor(Duration)
        /// Nothing until `signal()` is called.
        case waitForSignal
        /// The body is complete.
        case end
        /// Break the connection off here (the client sees a body cut short).
        case abort
    }

    /// The whole length when known (sent as Content-Length), else nil (chunked).
    package let length: UInt64?
    private let produce: @Sendable (_ max: Int) -> Step
    private let state = Locked<(pending: Bool, waker: (@Sendable () -> Void)?)>((false, nil))
    /// Bytes handed out so far (for the request log).
    let sent = Locked<UInt64>(0)

    /// A body of `length` bytes (nil: unknown) whose pieces `produce` makes, each at most
    /// `max` bytes long.
    package init(length: UInt64?, produce: @escaping @Sendable (_ max: Int) -> Step) {
        self.length = length
        self.produce = produce
    }

    /// Wakes a read waiting for a signal (or, when none waits, makes the next one go on at once).
    package func signal() {
        let waker = state.withLock { state -> (@Sendable () -> Void)? in
            guard let waker = state.waker else {
                state.pending = true
                return nil
            }
            state.waker = nil
            return waker
        }
        waker?()
    }

    /// The next step, counting the bytes it hands out.
    package func next(max: Int) -> Step {
        let step = produce(max)
        if case .bytes(let bytes) = step { sent.withLock { $0 += UInt64(bytes.count) } }
        return step
    }

    /// Registers `wake` for the next signal; false when a signal came already (go on at once).
    func arm(_ wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if state.pending {
                state.pending = false
                return false
            }
            state.waker = wake
            return true
        }
    }

    /// Forgets a registered waker (the connection ended).
    func disarm() {
        state.withLock { $0.waker = nil }
    }
}

extension BodyStream: Equatable {
    /// Streams are equal only to themselves.
    package static func == (lhs: BodyStream, rhs: BodyStream) -> Bool { lhs === rhs }
}
