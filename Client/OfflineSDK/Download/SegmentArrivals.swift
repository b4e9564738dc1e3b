import Locking

/// Lets playback during a download wait for a segment the download has not brought yet: the
/// runner announces each segment whose file is in place, and the end of its run (finished,
/// failed or stopped), which releases every waiter of that download to look again.
final class SegmentArrivals: Sendable {
    private struct Waiter {
        var token: String
        var key: SegmentKey
        var continuation: CheckedContinuation<Void, Never>
    }

    private let waiters = Locked<(next: UInt64, byID: [UInt64: Waiter])>((0, [:]))

    /// How many waits are registered now.
    var waiting: Int { waiters.withLock { $0.byID.count } }

    /// A segment's file of download `token` is in place.
    func arrived(_ token: String, _ key: SegmentKey) {
        release { $0.token == token && $0.key == key }
    }

    /// Download `token` stopped running: nothing more will arrive until it runs again.
    func stopped(_ token: String) {
        release { $0.token == token }
    }

    /// Returns once segment `key` of `token` arrives, the download stops, or the task is
    /// cancelled. `isThere` is checked after the wait is registered, so an arrival between the
    /// caller's own check and this call is never missed.
    func wait(_ token: String, _ key: SegmentKey, isThere: () -> Bool) async {
        let id = waiters.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiters.withLock { $0.byID[id] = Waiter(token: token, key: key, continuation: continuation) }
                if isThere() || Task.isCancelled { resume(id) }
            }
        } onCancel: {
            resume(id)
        }
    }

    private func resume(_ id: UInt64) {
        waiters.withLock { $0.byID.removeValue(forKey: id) }?.continuation.resume()
    }

    private func release(_ matching: (Waiter) -> Bool) {
        let released = waiters.withLock { state -> [Waiter] in
            let ids = state.byID.filter { matching($0.value) }.map(\.key)
            return ids.compactMap { state.byID.removeValue(forKey: $0) }
        }
        for waiter in released { waiter.continuation.resume() }
    }
}
