internal import Synchronization

/// Work handed to the engine: what to fetch and the continuation waiting for the outcome.
/// Exactly one party resumes the continuation: `EngineCore` while the job is queued, the
/// engine loop once it has taken the job.
struct Job: Sendable {
    let ticket: JobTicket
    let work: Work

    enum Work: Sendable {
        case download(FileDownload, DownloadProgress?, CheckedContinuation<Result<ReceivedFile, TransferError>, Never>)
        case request(HTTPClientRequest, CheckedContinuation<Result<HTTPClientResponse, TransferError>, Never>)
    }

    var isDownload: Bool {
        if case .download = work { true } else { false }
    }

    /// Resumes the waiting caller with `error`. Call once.
    func fail(_ error: TransferError) {
        switch work {
        case .download(_, _, let continuation): continuation.resume(returning: .failure(error))
        case .request(_, let continuation): continuation.resume(returning: .failure(error))
        }
    }
}

/// The identity and cancellation flag of one submitted job, shared between the caller's
/// task (which sets the flag) and the engine (which reads it on its thread).
final class JobTicket: Sendable {
    private static let serial = Atomic<UInt64>(0)

    /// Unique per ticket; keys the engine's table of running jobs.
    let key: UInt64
    /// The caller's id for `TransferEngine.cancel(_:)`; nil for `HTTPClient` requests.
    let id: TransferID?
    /// The download's group, whose limit it counts against.
    let group: TransferGroup?
    private let cancelled = Atomic<Bool>(false)

    init(id: TransferID?, group: TransferGroup? = nil) {
        key = JobTicket.serial.wrappingAdd(1, ordering: .relaxed).newValue
        self.id = id
        self.group = group
    }

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    func markCancelled() {
        cancelled.store(true, ordering: .releasing)
    }
}
