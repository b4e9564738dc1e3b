import Foundation
import Logging
import MicroHTTP
import WireModels

/// Dynamic Ingest (`POST /v1/accounts/{account}/videos/{video}/ingest-requests`, reference §3)
/// and the CMS API's job status (`GET …/videos/{video}/ingest_jobs[/{job}]`, §3.5). A request
/// is checked, stored as a queued job (at most `ingestQueueLimit` waiting or running, else 429)
/// and answered with the job id; a worker (`IngestWorker`) runs it.
extension MockBackendApp {
    static func addIngestRoutes(to router: inout Router<MockBackendApp>) {
        let video = "/v1/accounts/:account/videos/:video"
        router.add(["POST"], "\(video)/ingest-requests") { app, request, p in
            try app.cms(request, p) { account in
                if let type = request.headers["Content-Type"], !type.lowercased().hasPrefix("application/json") {
                    throw CMSError(415, "UNSUPPORTED_MEDIA_TYPE", "Send the body as Content-Type: application/json")
                }
                guard app.live.document.videos.contains(where: { $0.id == p["video"] && $0.accountID == account.id }) else {
                    throw CMSError(400, "NO_SUCH_VIDEO", "Unable to find the referenced video. (\(p["video"]) in account \(account.id))")
                }
                let ingest = try IngestRequest.parse(request.body, defaultProfile: app.defaultIngestProfile(of: account.id),
                                                     allowedDirectories: app.configuration.ingestAllowedDirectories)
                let job = IngestJob(id: UUID().uuidString.lowercased(), accountID: account.id, videoID: p["video"], state: .queued,
                                    request: try JSONEncoder().encode(ingest), priority: ingest.priority, submittedAt: app.clock.now())
                switch try app.store.insertIngestJob(job, limit: app.configuration.ingestQueueLimit) {
                case .queued: break
                case .queueFull:
                    throw CMSError(429, "RATE_LIMIT_EXCEEDED",
                                   "Dynamic Ingest job not created. Reduce the number of concurrent jobs (\(app.configuration.ingestQueueLimit) are queued or running).")
                case .videoBusy(let other):
                    throw CMSError(429, "RATE_LIMIT_EXCEEDED",
                                   "Dynamic Ingest job not created: job \(other) of video \(job.videoID) is queued or running, and a video takes one job at a time. Send this request again once it has ended.")
                }
                app.logger.info("ingest job \(job.id) queued for video \(job.videoID) (\(ingest.profile))")
                app.ingestWorker?.wake()
                return APIResponse.json(["id": job.id])
            }
        }
        router.add(["GET"], "\(video)/ingest_jobs") { app, request, p in
            try app.cms(request, p) { account in
                let video = try app.cmsVideo(p["video"], account: account)
                return APIResponse.json(try app.store.ingestJobs(accountID: account.id, videoID: video.id).map(IngestJobBody.init))
            }
        }
        router.add(["GET"], "\(video)/ingest_jobs/:job") { app, request, p in
            try app.cms(request, p) { account in
                let video = try app.cmsVideo(p["video"], account: account)
                guard let job = try app.store.ingestJob(id: p["job"], accountID: account.id, videoID: video.id) else {
                    throw CMSError.notFound("ingest job \(p["job"]) of video \(video.id)")
                }
                return APIResponse.json(IngestJobBody(job))
            }
        }
    }
}

/// A job as the CMS API shows it (reference §3.5): a queued job is `processing` with no
/// `started_at` or `updated_at`.
struct IngestJobBody: Encodable {
    var job: IngestJob
    init(_ job: IngestJob) { self.job = job }

    enum CodingKeys: String, CodingKey {
        case id, state, priority
        case accountID = "account_id", videoID = "video_id", errorCode = "error_code", errorMessage = "error_message"
        case updatedAt = "updated_at", startedAt = "started_at", submittedAt = "submitted_at"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(job.id, forKey: .id)
        try c.encode(job.state == .queued ? "processing" : job.state.rawValue, forKey: .state)
        try c.encode(job.accountID, forKey: .accountID)
        try c.encode(job.videoID, forKey: .videoID)
        try c.encode(job.errorCode, forKey: .errorCode)
        try c.encode(job.errorMessage, forKey: .errorMessage)
        try c.encode(job.state == .queued ? nil : job.updatedAt.map(WireDate.string(from:)), forKey: .updatedAt)
        try c.encode(job.state == .queued ? nil : job.startedAt.map(WireDate.string(from:)), forKey: .startedAt)
        try c.encode(job.priority, forKey: .priority)
        try c.encode(WireDate.string(from: job.submittedAt), forKey: .submittedAt)
    }
}
