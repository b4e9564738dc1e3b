import Dispatch
internal import Synchronization
internal import Locking

/// A file download's state while it runs. Engine thread only, except the commit below.
final class DownloadState {
    let job: FileDownload
    let progress: DownloadProgress?
    private var continuation: CheckedContinuation<Result<ReceivedFile, TransferError>, Never>?
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
    private var outcome: Result<ReceivedFile, TransferError>?

    init(job: FileDownload, progress: DownloadProgress?,
         continuation: CheckedContinuation<Result<ReceivedFile, TransferError>, Never>) {
        self.job = job
        self.progress = progress
        self.continuation = continuation
    }

    var expectedTotal: Int64? {
        switch plan {
        case .append(let total), .replace(let total): total
        case .alreadyComplete(let total): total
        default: nil
        }
    }

    /// Settles the outcome (the first one wins) and closes the file; the `.part` file stays on
    /// disk, and a failure says how many bytes this request added to it.
    func answer(_ result: Result<ReceivedFile, TransferError>) {
        if outcome == nil { outcome = result.mapError { $0.keeping(bytesWritten) } }
        file = nil
    }

    /// Settles a successful outcome: a complete `.part` file that the caller syncs and renames
    /// into place (`ReceivedFile.commit()`), off the engine thread.
    func answer(committing file: PartFile, result: FileDownloadResult) {
        guard outcome == nil else { return }
        outcome = .success(ReceivedFile(result: result, pending: PendingCommit(file, destination: job.destination)))
        self.file = nil
    }

    /// Resumes the caller with the settled outcome, once.
    func deliver() {
        guard let outcome, let continuation else { return }
        self.continuation = nil
        Handoff.publish()
        continuation.resume(returning: outcome)
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

/// Judges a complete body before it is kept: nil to keep it, or the error to fail with
/// (`.contentMismatch`). Runs on a commit queue, never on the engine thread or the caller's.
package typealias FileVerifier = @Sendable (UnsafeRawBufferPointer) -> TransferError?

/// A complete download whose `.part` file is not yet synced and renamed into place.
///
/// `TransferEngine.receive(_:progress:)` hands it over as soon as the last byte is in and its
/// length checked, so the caller can start its next request while this one is committed.
package struct ReceivedFile: Sendable {
    /// What the download did; `totalSize` is the size the committed file will have.
    package let result: FileDownloadResult
    let pending: PendingCommit

    /// Syncs the file, renames it over the destination and syncs the folder, on one of the
    /// commit queues. Only the first call (of any copy) commits; later ones throw
    /// `.writeFailed`. If it is never called the complete `.part` file stays, and a later
    /// download of the same destination asks for the bytes after it, gets a 416 and fetches
    /// the file again from the start.
    ///
    /// `verify`, when given, first reads the whole file (a resumed prefix included) on the commit
    /// queue and judges it: an error it returns deletes the `.part` file (its bytes are not
    /// kept: a later download fetches the file from the start) and is thrown.
    package func commit(verifying verify: FileVerifier? = nil) async throws(TransferError) -> FileDownloadResult {
        let pending = self.pending
        let outcome: Result<Void, TransferError> = await withCheckedContinuation { continuation in
            DownloadState.commitQueues.next().async {
                do throws(TransferError) {
                    guard let file = pending.take() else {
                        throw TransferError(.writeFailed, "\(pending.destination) was already committed")
                    }
                    if let verify {
                        let bytes = try PartFile.contents(at: file.path)
                        if let refusal = bytes.withUnsafeBytes({ verify($0) }) {
                            PartFile.remove(at: file.path)
                            throw refusal
                        }
                    }
                    try file.commit(to: pending.destination)
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        try outcome.get()
        return result
    }
}

/// A finished `.part` file on its way to the commit queue, taken out exactly once: the
/// engine thread has dropped its reference, so whoever takes it is the file's only user.
final class PendingCommit: Sendable {
    private let file: Locked<UncheckedFile?>
    let destination: String

    /// `PartFile` is not Sendable; it moves across threads only through `take()`, once.
    private struct UncheckedFile: @unchecked Sendable {
        let file: PartFile
    }

    init(_ file: PartFile, destination: String) {
        self.file = Locked(UncheckedFile(file: file))
        self.destination = destination
    }

    /// The file, the first time; nil after.
    func take() -> PartFile? {
        file.withLock { held in
            defer { held = nil }
            return held?.file
        }
    }
}
