internal import Foundation
import Synchronization
import Locking

/// Downloads files over HTTP(S) in parallel on one libcurl multi handle, driven by a
/// thread of its own: connections are reused, `.part` files resume with a Range request,
/// and a finished file appears under its name only when complete, length-checked and synced.
///
/// ```swift
/// let engine = TransferEngine()
/// let job = FileDownload(url: "http://127.0.0.1:8080/seg/1.ts", destination: "/videos/v1/1.ts")
/// let result = try await engine.download(job) { bytes, total in
///     print("\(bytes) of \(total.map(String.init) ?? "?")")
/// }
/// print("wrote \(result.bytesWritten) bytes, file is \(result.totalSize)")
/// ```
///
/// Hundreds of jobs may be submitted at once: `maxConcurrentTransfers` run, the rest wait
/// in FIFO order (and at most its `TransferGroup`'s limit of a group's downloads run). Cancelling the calling task, `cancel(_:)` or `cancelAll()` stops a job with
/// `.cancelled` and keeps its `.part` file, so the next `download` of it resumes.
package final class TransferEngine: Sendable {
    /// Limits and timeouts of an engine, fixed when it is made.
    package struct Configuration: Sendable {
        /// File downloads running at once; more wait in FIFO order. Requests don't count.
        package var maxConcurrentTransfers = 8
        /// Open connections in total (CURLMOPT_MAX_TOTAL_CONNECTIONS); more transfers wait in curl.
        package var maxTotalConnections = 8
        /// Open connections to one host (CURLMOPT_MAX_HOST_CONNECTIONS).
        package var maxHostConnections = 8
        /// The longest a connection attempt may take.
        package var connectTimeout: Duration = .seconds(10)
        /// A download that receives less than `lowSpeedLimit` bytes a second for this long fails
        /// with `.timedOut`.
        package var stallTimeout: Duration = .seconds(30)
        /// Bytes a second below which a download counts as stalled (1: one receiving nothing).
        package var lowSpeedLimit = 1
        /// The longest a request (`HTTPClient.send`) may take when it sets no timeout of its own.
        package var requestTimeout: Duration = .seconds(30)
        /// How long a connection may wait idle in the cache and still be reused
        /// (CURLOPT_MAXAGE_CONN; curl's own default, 118 s): an older one is closed and a new one
        /// opened, since servers close idle connections too (nginx after 75 s).
        package var idleConnectionAge: Duration = .seconds(118)
        /// Redirects followed before `.tooManyRedirects`.
        package var maxRedirects = 10
        /// The User-Agent header.
        package var userAgent = "CurlTransfer/1.0"
        /// A PEM file of CA certificates to trust for HTTPS instead of the system's (e.g. the
        /// mock backend's local CA, `tls/ca.pem` in its data directory). Nil: the system's.
        package var trustedCAFile: String?

        /// The defaults above.
        package init() {}
    }

    /// Counters for tests and diagnostics.
    package struct Statistics: Sendable, Equatable {
        /// Connections opened so far (reused ones are not counted again).
        package var connectionsOpened: Int
        /// Transfers that ended so far, whatever the outcome.
        package var transfersFinished: Int
        /// Jobs waiting for a slot now.
        package var queued: Int
        /// Jobs running now.
        package var running: Int
    }

    /// The configuration the engine runs with.
    package var configuration: Configuration { core.configuration }

    private let core: EngineCore

    /// Starts an engine and its thread.
    package init(configuration: Configuration = Configuration()) {
        core = EngineCore(configuration: configuration)
        let core = self.core
        let thread = Thread { EngineLoop.run(core: core) }
        thread.name = "CurlTransfer.engine"
        thread.start()
    }

    /// Stops the thread; jobs still queued or running end with `.cancelled`.
    deinit {
        core.shutDown()
    }

    /// Downloads `job.url` to `job.destination`, resuming from `job.partialPath` when it exists.
    ///
    /// Throws `.http(status)` for any answer but 200/206 (no file is written then),
    /// `.lengthMismatch` when the body does not match the announced length, `.diskFull` or
    /// `.writeFailed` when the file cannot be written, `.cancelled` when cancelled; in every
    /// failure the `.part` file keeps what arrived, for a later resume. Run at most one
    /// download per destination at a time: two would append to the same `.part` file.
    package func download(_ job: FileDownload, progress: DownloadProgress? = nil) async throws(TransferError) -> FileDownloadResult {
        try await receive(job, progress: progress).commit()
    }

    /// As `download(_:progress:)`, but returns as soon as the whole body is in the `.part`
    /// file and its length checked: the caller commits it (`ReceivedFile.commit()`), so the
    /// sync and rename need not hold up its next request.
    package func receive(_ job: FileDownload, progress: DownloadProgress? = nil) async throws(TransferError) -> ReceivedFile {
        let ticket = JobTicket(id: job.id, group: job.group)
        let core = self.core
        let createdPart = try PartFile.prepare(at: job.partialPath)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                core.submit(Job(ticket: ticket, work: .download(job, progress, continuation)))
            }
        } onCancel: {
            core.cancel(ticket)
        }
        Handoff.receive()
        // A failure leaves no empty `.part` file that this call made (one that was there stays).
        if case .failure = result, createdPart, PartFile.existingSize(at: job.partialPath) == 0 {
            PartFile.remove(at: job.partialPath)
        }
        return try result.get()
    }

    /// Sends one request and reads the answer into memory. See `HTTPClient.send(_:)`.
    func send(_ request: HTTPClientRequest) async throws(TransferError) -> HTTPClientResponse {
        let ticket = JobTicket(id: nil)
        let core = self.core
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                core.submit(Job(ticket: ticket, work: .request(request, continuation)))
            }
        } onCancel: {
            core.cancel(ticket)
        }
        Handoff.receive()
        return try result.get()
    }

    /// Cancels the downloads with this id, queued or running; unknown ids are ignored.
    package func cancel(_ id: TransferID) {
        core.cancelDownloads(matching: id)
    }

    /// Cancels every queued and running download (`HTTPClient` requests are left alone).
    package func cancelAll() {
        core.cancelDownloads(matching: nil)
    }

    /// A snapshot of the counters.
    package var statistics: Statistics {
        let counts = core.counts
        return Statistics(connectionsOpened: core.connectionsOpened.load(ordering: .relaxed),
                          transfersFinished: core.transfersFinished.load(ordering: .relaxed),
                          queued: counts.queued, running: counts.running)
    }
}
