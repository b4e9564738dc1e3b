/// A file download's state while it runs. Engine thread only.
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

    /// Resumes the caller with the settled outcome, once.
    func deliver() {
        guard let outcome, let continuation else { return }
        self.continuation = nil
        continuation.resume(returning: outcome)
    }
}
