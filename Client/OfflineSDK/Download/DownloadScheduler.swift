/// Which downloads run, which wait for a slot, which stopped tasks are still winding down, and
/// which videos a request is working on: the manager's scheduling bookkeeping as a value. Each
/// event returns what the manager must do (start a task, cancel one); the manager carries that
/// out and tells the scheduler the task it started. Pure: no tasks, no I/O (`Job` is the
/// manager's task handle, an integer in the tests).
///
/// ```
/// enqueue ─► queue ─(a free slot)─► running ─(its task ends)─► gone, the next one starts
///                                      │ stop (pause, cancel, delete)   │ enqueue (a retry of the failure
///                                      ▼                                ▼  it just announced)
///                                   winding ─► a restart of the          queued again once its task ends
///                                              same download waits for it
/// ```
struct DownloadScheduler<Job: Sendable>: Sendable {
    /// How many downloads run at once (at least one).
    let slots: Int
    /// Downloads waiting for a slot, in the order requested.
    private(set) var queue: [OfflineVideoToken] = []
    /// Running downloads and their tasks (nil between `.start` and `started`).
    private(set) var running: [OfflineVideoToken: Job?] = [:]
    /// Stopped tasks that may still be finishing a write: a restart of the same download waits
    /// for its old task first (two writers must never share a `.part` file).
    private(set) var winding: [OfflineVideoToken: Job] = [:]
    /// Running downloads enqueued again while their task ends: a task announces its failure
    /// before it gives back its slot, and the app may retry or resume it in between. Each is
    /// queued again when its task ends.
    private(set) var requeued: Set<OfflineVideoToken> = []
    /// Videos and content ids a request or preload is working on (planning, the license exchange).
    private(set) var reservedVideos: Set<String> = []
    private(set) var reservedContentIDs: Set<String> = []
    /// Tokens whose package folder a request is writing before their record exists.
    private(set) var preparingPackages: Set<OfflineVideoToken> = []

    init(slots: Int) { self.slots = max(1, slots) }

    /// What the manager does for the scheduler.
    enum Action: Sendable {
        /// Start the download's task; it first waits for `after`, the download's previous task
        /// still winding down. Then report it with `started`.
        case start(OfflineVideoToken, after: Job?)
        /// Cancel this task (it stays in `winding` until it is waited for).
        case cancel(Job)
    }

    /// Why a reservation was refused.
    enum Conflict: Sendable, Equatable {
        /// Another request for the video is under way.
        case video
        /// Another request for the content id is under way.
        case contentID
    }

    // MARK: Running

    /// Whether the download runs or waits for a slot.
    func isScheduled(_ token: OfflineVideoToken) -> Bool { running[token] != nil || queue.contains(token) }

    /// Whether the download has a slot now.
    func isRunning(_ token: OfflineVideoToken) -> Bool { running[token] != nil }

    /// Queues a download (once) and starts what the free slots allow. A running one is queued
    /// again when its task ends (`requeued`).
    mutating func enqueue(_ token: OfflineVideoToken) -> [Action] {
        if running[token] != nil {
            requeued.insert(token)
        } else if !queue.contains(token) {
            queue.append(token)
        }
        return fill()
    }

    /// Starts queued downloads while there are free slots (after a restart's recovery).
    mutating func fill() -> [Action] {
        var actions: [Action] = []
        while running.count < slots, !queue.isEmpty {
            let token = queue.removeFirst()
            running[token] = .some(nil)
            actions.append(.start(token, after: winding.removeValue(forKey: token)))
        }
        return actions
    }

    /// The task the manager started for `token` (ignored if it was stopped meanwhile).
    mutating func started(_ token: OfflineVideoToken, _ job: Job) {
        if running[token] != nil { running[token] = job }
    }

    /// The download's task ended on its own (completed, failed, or found nothing to do): its
    /// slot goes to the next one.
    mutating func ended(_ token: OfflineVideoToken) -> [Action] {
        running[token] = nil
        if requeued.remove(token) != nil { queue.append(token) }
        return fill()
    }

    /// Pause, cancel, delete: its task is cancelled and kept winding until waited for, it leaves
    /// the queue, and its slot goes to the next one.
    mutating func stop(_ token: OfflineVideoToken) -> [Action] {
        var actions: [Action] = []
        if let job = running.removeValue(forKey: token), let job {
            winding[token] = job
            actions.append(.cancel(job))
        }
        queue.removeAll { $0 == token }
        requeued.remove(token)
        return actions + fill()
    }

    /// The running task of `token` (nil when none, or between `.start` and `started`).
    func runningTask(_ token: OfflineVideoToken) -> Job? { running[token] ?? nil }

    /// The stopped task of `token`, still to be waited for (it stays recorded).
    func windingTask(_ token: OfflineVideoToken) -> Job? { winding[token] }

    /// The stopped task of `token`, no longer recorded: the caller waits for it before it
    /// removes the download's files.
    mutating func takeWindingTask(_ token: OfflineVideoToken) -> Job? { winding.removeValue(forKey: token) }

    /// Closing: every task, running or winding, to cancel and wait for; nothing stays scheduled.
    mutating func close() -> [Job] {
        let jobs = running.values.compactMap { $0 } + Array(winding.values)
        running = [:]
        winding = [:]
        queue = []
        requeued = []
        return jobs
    }

    // MARK: Reservations

    /// Reserves the video (and the content id) for a request, or says which one another
    /// request holds. The caller lets go with `release` when done.
    mutating func reserve(video: String, contentID: String?) -> Conflict? {
        if reservedVideos.contains(video) { return .video }
        if let contentID, reservedContentIDs.contains(contentID) { return .contentID }
        reservedVideos.insert(video)
        if let contentID { reservedContentIDs.insert(contentID) }
        return nil
    }

    /// Lets go of what `reserve` reserved.
    mutating func release(video: String, contentID: String?) {
        reservedVideos.remove(video)
        if let contentID { reservedContentIDs.remove(contentID) }
    }

    /// A request writes the package folder of `token` before its record exists (a storage
    /// check must leave it alone) until `endPreparing`.
    mutating func beginPreparing(_ token: OfflineVideoToken) { preparingPackages.insert(token) }

    mutating func endPreparing(_ token: OfflineVideoToken) { preparingPackages.remove(token) }
}
