import Foundation

/// A named thread of its own running one loop, told to stop and waited for when its owner
/// lets it go: what the loop holds (a database connection, say) is let go before the owner is
/// gone, so whatever opens the same files again at once (a restart in the same process) finds
/// nothing still closing. The loop lets go of what it holds before it returns.
package final class JoinedThread: Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let stop: @Sendable () -> Void

    /// Starts `run` on a thread named `name`; `stop` tells the loop to end, and `run` then returns.
    package init(name: String, run: @escaping @Sendable () -> Void, stop: @escaping @Sendable () -> Void) {
        self.stop = stop
        let finished = finished
        let thread = Thread {
            run()
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    deinit {
        stop()
        finished.wait()
    }
}
