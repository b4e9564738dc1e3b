internal import Synchronization
internal import Locking

/// The state shared between callers and the engine thread: the waiting queues, the table
/// of running jobs and the means to wake the thread. Everything mutable is behind one lock.
///
/// Queue discipline: file downloads wait in FIFO order and at most
/// `maxConcurrentTransfers` run at once, at most its `TransferGroup`'s limit of one group's
/// (a download whose group is full lets the ones behind it pass); `HTTPClient` requests skip the queue (API calls
/// must not wait behind hundreds of segments) and are limited only by curl's connection caps.
final class EngineCore: Sendable {
    let configuration: TransferEngine.Configuration
    /// New connections opened, summed from `CURLINFO_NUM_CONNECTS` over finished transfers.
    let connectionsOpened = Atomic<Int>(0)
    /// Transfers that ended, however they ended.
    let transfersFinished = Atomic<Int>(0)

    private struct State {
        var downloads: [Job] = []
        var requests: [Job] = []
        var running: [UInt64: JobTicket] = [:]
        /// Running downloads per group.
        var groupRunning: [TransferID: Int] = [:]
        var waker: MultiWaker?
        /// Set when the engine shut down or could not start; new jobs fail with it.
        var stopped: TransferError?
    }

    private let state = Locked(State())

    init(configuration: TransferEngine.Configuration) {
        self.configuration = configuration
    }

    // MARK: Callers' side

    /// Queues a job and wakes the engine, or fails it at once when cancelled or stopped.
    func submit(_ job: Job) {
        let refusal: TransferError? = state.withLock { state in
            if let stopped = state.stopped { return stopped }
            if job.ticket.isCancelled { return .cancelled() }
            if job.isDownload { state.downloads.append(job) } else { state.requests.append(job) }
            state.waker?.wake()
            return nil
        }
        if let refusal { job.fail(refusal) }
    }

    /// Cancels one job: a queued one is answered here, a running one by the engine thread.
    func cancel(_ ticket: JobTicket) {
        ticket.markCancelled()
        let removed: Job? = state.withLock { state in
            if let index = state.downloads.firstIndex(where: { $0.ticket === ticket }) {
                return state.downloads.remove(at: index)
            }
            if let index = state.requests.firstIndex(where: { $0.ticket === ticket }) {
                return state.requests.remove(at: index)
            }
            if state.running[ticket.key] != nil { state.waker?.wake() }
            return nil
        }
        removed?.fail(.cancelled())
    }

    /// Cancels the downloads whose id matches (all of them when `id` is nil).
    func cancelDownloads(matching id: TransferID?) {
        let removed: [Job] = state.withLock { state in
            let matches = { (ticket: JobTicket) in ticket.id != nil && (id == nil || ticket.id == id) }
            var removed: [Job] = []
            state.downloads.removeAll { job in
                guard matches(job.ticket) else { return false }
                job.ticket.markCancelled()
                removed.append(job)
                return true
            }
            var wake = false
            for ticket in state.running.values where matches(ticket) {
                ticket.markCancelled()
                wake = true
            }
            if wake { state.waker?.wake() }
            return removed
        }
        for job in removed { job.fail(.cancelled()) }
    }

    /// Stops the engine: queued jobs fail as cancelled, the thread cancels running ones and exits.
    func shutDown() {
        let removed: [Job] = state.withLock { state in
            if state.stopped == nil { state.stopped = .cancelled("the transfer engine has shut down") }
            defer { state.downloads = []; state.requests = [] }
            state.waker?.wake()
            return state.downloads + state.requests
        }
        for job in removed { job.fail(.cancelled("the transfer engine has shut down")) }
    }

    /// Jobs queued but not started, and jobs running. For tests and diagnostics.
    var counts: (queued: Int, running: Int) {
        state.withLock { ($0.downloads.count + $0.requests.count, $0.running.count) }
    }

    // MARK: Engine thread's side

    /// Publishes the waker once the multi handle exists. False when already stopped.
    func attach(_ waker: MultiWaker) -> Bool {
        state.withLock { state in
            guard state.stopped == nil else { return false }
            state.waker = waker
            return true
        }
    }

    /// Takes every waiting request and up to `freeDownloadSlots` downloads (oldest first,
    /// passing over those whose group is at its limit) and records them as running; nil when
    /// the engine must stop.
    func takeWork(freeDownloadSlots: Int) -> [Job]? {
        state.withLock { state in
            guard state.stopped == nil else { return nil }
            var jobs = state.requests
            state.requests = []
            var free = freeDownloadSlots, index = state.downloads.startIndex
            while free > 0, index < state.downloads.endIndex {
                let job = state.downloads[index]
                if let group = job.ticket.group {
                    guard state.groupRunning[group.id, default: 0] < group.limit else {
                        index += 1
                        continue
                    }
                    state.groupRunning[group.id, default: 0] += 1
                }
                jobs.append(state.downloads.remove(at: index))
                free -= 1
            }
            for job in jobs { state.running[job.ticket.key] = job.ticket }
            return jobs
        }
    }

    /// Records that a running job has been answered.
    func finished(_ ticket: JobTicket, newConnections: Int) {
        connectionsOpened.add(newConnections, ordering: .relaxed)
        transfersFinished.add(1, ordering: .relaxed)
        state.withLock { state in
            guard state.running.removeValue(forKey: ticket.key) != nil, let group = ticket.group else { return }
            state.groupRunning[group.id, default: 1] -= 1
            if state.groupRunning[group.id] == 0 { state.groupRunning[group.id] = nil }
        }
    }

    /// Withdraws the waker before the multi handle is freed; marks the engine stopped with
    /// `reason` and returns jobs that were still queued, for the caller to fail.
    func detach(reason: TransferError) -> [Job] {
        state.withLock { state in
            state.waker = nil
            if state.stopped == nil { state.stopped = reason }
            defer { state.downloads = []; state.requests = []; state.running = [:]; state.groupRunning = [:] }
            return state.downloads + state.requests
        }
    }
}
