import Dispatch
import Locking

/// How an answer that is not ready when the handler returns is handed over (a license waiting
/// for its batch's commit): from any thread, once, with a function that builds the response.
/// The builder runs on an MHD thread (where the answer is then sent like any other: ranges,
/// conditionals, the added latency and the answer's own delay), so costly work that only
/// comes after the wait (signing, say) stays on the server's threads.
package struct PendingAnswer: Sendable {
    /// Where the builder goes; the first one handed over stays.
    let slot: Locked<(@Sendable () -> HTTPResponse)?>
    /// Told once, when the first builder is in `slot`.
    let given: @Sendable () -> Void

    /// Hands over the builder of the answer. Call it once; later calls are ignored.
    package func callAsFunction(_ build: @escaping @Sendable () -> HTTPResponse) {
        let first = slot.withLock { slot -> Bool in
            guard slot == nil else { return false }
            slot = build
            return true
        }
        if first { given() }
    }
}

extension HTTPResponse {
    /// Work that answers later: the server suspends the connection (no MHD thread waits with
    /// it), then starts `work`, which must hand over the answer's builder exactly once,
    /// from any thread (at once too). Headers and body set on this response are not sent.
    /// A server stopping before the answer comes sends 503 instead.
    package static func later(_ work: @escaping @Sendable (PendingAnswer) -> Void) -> HTTPResponse {
        var response = HTTPResponse(status: 0)
        response.laterWork = work
        return response
    }

    /// Whether the answer comes later (`later(_:)`).
    package var isLater: Bool { laterWork != nil }

    /// This response passed through `transform`; for a later answer, once it is built.
    package func mapped(_ transform: @escaping @Sendable (HTTPResponse) -> HTTPResponse) -> HTTPResponse {
        guard let work = laterWork else { return transform(self) }
        return .later { answer in
            let inner = Locked<(@Sendable () -> HTTPResponse)?>(nil)
            work(PendingAnswer(slot: inner) { answer { transform(inner.withLock { $0 }!()) } })
        }
    }

    /// The answer itself, waiting on this thread for one that comes later: for callers
    /// without a server (tests, tools handling a request in-process). Never on an MHD
    /// thread or Swift's cooperative pool if the work needs them.
    package func waitingForLaterAnswer() -> HTTPResponse {
        guard let work = laterWork else { return self }
        let builder = Locked<(@Sendable () -> HTTPResponse)?>(nil)
        let given = DispatchSemaphore(value: 0)
        work(PendingAnswer(slot: builder) { given.signal() })
        given.wait()
        return builder.withLock { $0 }!().waitingForLaterAnswer()
    }
}
