import Dispatch
internal import Synchronization

/// A file download's state while it runs. Engine thread only, except the commit below.
final class DownloadState {
    let job: FileDownload
    let progress: DownloadProgress?
    private var continuation: CheckedContinuation<Result<FileDownloadResult, TransferError>, Never>?
    /// Bytes already in the `.part` file that the request asked the rest for (0: whole file).
    var resumeOffset: Int64 = 0
    /// Decided from the final response's head when its first body byte (or its end) arrives.
    var plan: DownloadPlan?
    var file: PartFile?
    /// A failure found by us (disk, unexpected response); wins over curl's CURLE_WRITE_ERROR.
    var failure: TransferError?
    var bytesWritten: Int64 = 0
    var lastReport: ContinuousClock.Instant?
    var lastReportedBytes: Int64 = -1
    private var outcome: Result<FileDownloadResult, TransferError>?
    /// A complete `.part` file still to be synced and renamed: done off the engine thread by
    /// `deliver()`, so one download's fsync never stalls the others.
    private var pendingCommit: PendingCommit?

    init(job: FileDownload, progress: DownloadProgress?,
         continuation: CheckedContinuation<Result<FileDownloadResult, TransferError>, Never>) {
        self.job = job
        self.progress = progress
        self.continuation = continuation
    }

    var expectedTotal: Int64? {
        switch plan {
        case .append(let total), .replace(let total): total
        default: nil
        }
    }

    /// Settles the outcome (the first one wins) and closes the file; the `.part` file stays on disk.
    func answer(_ result: Result<FileDownloadResult, TransferError>) {
        if outcome == nil { outcome = result }
        file = nil
    }

    /// Settles a successful outcome that still needs `file` synced and renamed into place.
    func answer(committing file: PartFile, result: FileDownloadResult) {
        guard outcome == nil else { return }
        outcome = .success(result)
        pendingCommit = PendingCommit(file: file, destination: job.destination)
        self.file = nil
    }

    /// Resumes the caller with the settled outcome, once; a pending commit runs first, on
    /// the commit queue, and its failure replaces the success.
    func deliver() {
        guard let outcome, let continuation else { return }
        self.continuation = nil
        guard let commit = pendingCommit else {
            continuation.resume(returning: outcome)
            return
        }
        pendingCommit = nil
        DownloadState.commitQueues.next().async {
            do throws(TransferError) {
                try commit.file.commit(to: commit.destination)
                continuation.resume(returning: outcome)
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }

    /// Where finished files are synced and renamed, away from curl's loop: four serial
    /// queues taken in turn, so at most four fsyncs run at once and a burst of finished
    /// files cannot make the dispatch pool grow a thread (and a malloc arena) for each.
    static let commitQueues = CommitQueues(count: 4)
}

/// A fixed set of serial queues handed out round-robin.
final class CommitQueues: Sendable {
    private let queues: [DispatchQueue]
    private let counter = Atomic<Int>(0)

    init(count: Int) {
        queues = (0..<max(1, count)).map { DispatchQueue(label: "CurlTransfer.commit.\($0)", qos: .utility) }
    }

    func next() -> DispatchQueue {
        queues[counter.wrappingAdd(1, ordering: .relaxed).oldValue % queues.count]
    }
}

/// A finished `.part` file on its way to the commit queue. Sendable because ownership moves
/// with it: the engine thread drops its reference before the commit runs, so only the
/// commit queue touches the file from then on.
struct PendingCommit: @unchecked Sendable {
    let file: PartFile
    let destination: String
}
