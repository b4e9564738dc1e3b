@testable import OfflineSDK
import Testing

/// The manager's scheduling bookkeeping, pure: events in, actions out (tasks are integers).
@Suite("DownloadScheduler")
struct DownloadSchedulerTests {
    typealias Scheduler = DownloadScheduler<Int>

    /// The tokens the actions start, in order, with the task each waits for.
    static func starts(_ actions: [Scheduler.Action]) -> [String] {
        actions.compactMap { if case .start(let token, let after) = $0 { after.map { "\(token) after \($0)" } ?? token } else { nil } }
    }

    static func cancels(_ actions: [Scheduler.Action]) -> [Int] {
        actions.compactMap { if case .cancel(let job) = $0 { job } else { nil } }
    }

    @Test("downloads start in the order requested while slots are free; the rest wait; an ended one gives its slot to the next")
    func slotsAndOrder() {
        var scheduler = Scheduler(slots: 2)
        #expect(Self.starts(scheduler.enqueue("a")) == ["a"])
        scheduler.started("a", 1)
        #expect(Self.starts(scheduler.enqueue("b")) == ["b"])
        scheduler.started("b", 2)
        #expect(scheduler.enqueue("c").isEmpty)
        #expect(scheduler.enqueue("d").isEmpty)
        #expect(scheduler.queue == ["c", "d"])
        #expect(scheduler.isScheduled("c") && !scheduler.isRunning("c"))
        #expect(Self.starts(scheduler.ended("a")) == ["c"])
        #expect(scheduler.isRunning("c") && !scheduler.isScheduled("a"))
        #expect(Self.starts(scheduler.ended("b")) == ["d"])
        #expect(scheduler.queue.isEmpty)
    }

    @Test("a download is queued once: enqueued again while queued, nothing changes")
    func once() {
        var scheduler = Scheduler(slots: 1)
        _ = scheduler.enqueue("a")
        scheduler.started("a", 1)
        _ = scheduler.enqueue("b")
        #expect(scheduler.enqueue("b").isEmpty)
        #expect(scheduler.queue == ["b"])
        #expect(scheduler.running.count == 1)
    }

    @Test("a running download enqueued again (retried right after its failure, its task still ending) runs again once that task ends, after the queue; once, however often enqueued; a stop forgets it")
    func enqueuedWhileEnding() {
        var scheduler = Scheduler(slots: 1)
        _ = scheduler.enqueue("a")
        scheduler.started("a", 1)
        _ = scheduler.enqueue("b")
        #expect(scheduler.enqueue("a").isEmpty)
        #expect(scheduler.enqueue("a").isEmpty)
        #expect(scheduler.queue == ["b"] && scheduler.isRunning("a"))
        #expect(Self.starts(scheduler.ended("a")) == ["b"])
        #expect(scheduler.queue == ["a"])
        scheduler.started("b", 2)
        #expect(Self.starts(scheduler.ended("b")) == ["a"])
        scheduler.started("a", 3)
        #expect(scheduler.ended("a").isEmpty && scheduler.queue.isEmpty)

        // Paused (stopped) before its old task ended: not queued again.
        _ = scheduler.enqueue("c")
        scheduler.started("c", 4)
        _ = scheduler.enqueue("c")
        #expect(Self.cancels(scheduler.stop("c")) == [4])
        #expect(scheduler.ended("c").isEmpty && scheduler.queue.isEmpty && !scheduler.isScheduled("c"))
    }

    @Test("zero or negative slots still run one download at a time")
    func atLeastOneSlot() {
        var scheduler = Scheduler(slots: 0)
        #expect(Self.starts(scheduler.enqueue("a")) == ["a"])
        #expect(scheduler.enqueue("b").isEmpty)
    }

    @Test("a stopped running download's task is cancelled and kept winding; its slot goes to the next; restarted, it waits for its old task")
    func stopAndRestart() {
        var scheduler = Scheduler(slots: 1)
        _ = scheduler.enqueue("a")
        scheduler.started("a", 1)
        _ = scheduler.enqueue("b")
        let stopped = scheduler.stop("a")
        #expect(Self.cancels(stopped) == [1])
        #expect(Self.starts(stopped) == ["b"])
        scheduler.started("b", 2)
        #expect(scheduler.windingTask("a") == 1)
        // Restarted (a resume): it queues behind b, then waits for task 1 before running.
        #expect(scheduler.enqueue("a").isEmpty)
        #expect(Self.starts(scheduler.ended("b")) == ["a after 1"])
        #expect(scheduler.windingTask("a") == nil)
    }

    @Test("a stopped queued download leaves the queue and cancels nothing; a stopped unknown one is nothing")
    func stopQueued() {
        var scheduler = Scheduler(slots: 1)
        _ = scheduler.enqueue("a")
        scheduler.started("a", 1)
        _ = scheduler.enqueue("b")
        #expect(scheduler.stop("b").isEmpty)
        #expect(scheduler.queue.isEmpty)
        #expect(scheduler.stop("zzz").isEmpty)
        #expect(scheduler.isRunning("a"))
    }

    @Test("a task's end after it was stopped does not free a slot twice; a late started report of a stopped download is ignored")
    func stoppedThenEnded() {
        var scheduler = Scheduler(slots: 1)
        let actions = scheduler.enqueue("a")
        #expect(Self.starts(actions) == ["a"])
        _ = scheduler.stop("a")  // stopped before its task was reported
        scheduler.started("a", 1)
        #expect(!scheduler.isRunning("a"))
        #expect(scheduler.windingTask("a") == nil)
    }

    @Test("the winding task is taken once, by whoever removes the files")
    func takeWinding() {
        var scheduler = Scheduler(slots: 1)
        _ = scheduler.enqueue("a")
        scheduler.started("a", 7)
        _ = scheduler.stop("a")
        #expect(scheduler.takeWindingTask("a") == 7)
        #expect(scheduler.takeWindingTask("a") == nil)
    }

    @Test("closing hands over every running and winding task and forgets the queue")
    func close() {
        var scheduler = Scheduler(slots: 2)
        _ = scheduler.enqueue("a"); scheduler.started("a", 1)
        _ = scheduler.enqueue("b"); scheduler.started("b", 2)
        _ = scheduler.enqueue("c")
        _ = scheduler.stop("a")
        scheduler.started("c", 3)
        #expect(Set(scheduler.close()) == [1, 2, 3])
        #expect(scheduler.queue.isEmpty && scheduler.running.isEmpty && scheduler.winding.isEmpty)
    }

    @Test("a video or a content id is reserved by one request at a time, until released")
    func reservations() {
        var scheduler = Scheduler(slots: 1)
        #expect(scheduler.reserve(video: "v1", contentID: "c1") == nil)
        #expect(scheduler.reserve(video: "v1", contentID: nil) == .video)
        #expect(scheduler.reserve(video: "v2", contentID: "c1") == .contentID)
        #expect(scheduler.reserve(video: "v2", contentID: nil) == nil, "a refused reservation reserved nothing")
        scheduler.release(video: "v1", contentID: "c1")
        #expect(scheduler.reserve(video: "v3", contentID: "c1") == nil)
        #expect(scheduler.reserve(video: "v1", contentID: nil) == nil)
    }

    @Test("packages being prepared are listed until done")
    func preparing() {
        var scheduler = Scheduler(slots: 1)
        scheduler.beginPreparing("t")
        #expect(scheduler.preparingPackages == ["t"])
        scheduler.endPreparing("t")
        #expect(scheduler.preparingPackages.isEmpty)
    }
}
