import Foundation
import Logging

/// The callback notifications of a job (reference §3.4): one JSON object per POST, to every
/// callback URL, in the documented order. A POST that fails (no answer, or a 4xx or 5xx) is
/// tried again up to `retryDelays.count` times, waiting longer each time; then it is given up
/// (logged), so a dead callback URL holds the queue for a bounded time only.
struct IngestNotifier {
    let tools: Subprocesses
    let job: IngestJob
    let callbacks: [String]
    let logger: Logger

    /// The waits before the second, third and fourth tries, in seconds.
    static let retryDelays: [Double] = [0.5, 2, 5]
    /// How long one POST may take, in seconds.
    static let postTimeout = 10

    typealias Notification = [String: Any]

    private func base(entity: String, type: String, action: String = "CREATE", status: String = "SUCCESS") -> Notification {
        ["entity": entity, "entityType": type, "version": "1", "action": action, "jobId": job.id, "videoId": job.videoID,
         "accountId": job.accountID, "status": status]
    }

    /// A successful job's notifications: the audio renditions, the first video rendition,
    /// TITLE/PUBLISH, the thumbnail and poster, the text tracks, the other video renditions,
    /// and TITLE/CREATE last.
    func successNotifications(_ made: IngestTranscoder.Made) -> [Notification] {
        var all: [Notification] = []
        for audio in made.audio {
            var n = base(entity: audio.id, type: "DYNAMIC_RENDITION")
            n["dynamicRenditionId"] = audio.id
            n["bitrate"] = audio.kilobitsPerSecond
            n["language"] = audio.language ?? "und"
            n["variant"] = "main"
            all.append(n)
        }
        func video(_ rendition: IngestTranscoder.Made.Rendition) -> Notification {
            var n = base(entity: rendition.id, type: "DYNAMIC_RENDITION")
            n["dynamicRenditionId"] = rendition.id
            n["bitrate"] = rendition.kilobitsPerSecond
            n["width"] = rendition.width ?? 0
            n["height"] = rendition.height ?? 0
            return n
        }
        if let first = made.video.first { all.append(video(first)) }
        all.append(base(entity: job.videoID, type: "TITLE", action: "PUBLISH"))
        all.append(base(entity: "thumbnail", type: "ASSET"))
        all.append(base(entity: "poster", type: "ASSET"))
        for track in made.textTracks {
            all.append(base(entity: "\(track.srclang)-\(track.kind)-\(track.label ?? track.srclang)", type: "ASSET"))
        }
        all += made.video.dropFirst().map(video)
        all.append(base(entity: job.videoID, type: "TITLE"))
        return all
    }

    /// A failed job's one notification: TITLE/CREATE FAILED with the reason.
    func failure(_ message: String) -> Notification {
        var n = base(entity: job.videoID, type: "TITLE", status: "FAILED")
        n["errorMessage"] = message
        return n
    }

    /// POSTs `notification` to every callback URL, each with its retries.
    func post(_ notification: Notification) {
        guard !callbacks.isEmpty, let body = try? JSONSerialization.data(withJSONObject: notification, options: [.sortedKeys]) else { return }
        let text = String(decoding: body, as: UTF8.self)
        for url in callbacks {
            for attempt in 0...Self.retryDelays.count {
                if attempt > 0 {
                    // Waits for the back-off, or less when the instance stops.
                    let until = Date().addingTimeInterval(Self.retryDelays[attempt - 1])
                    while Date() < until, !tools.isStopped { Thread.sleep(forTimeInterval: 0.05) }
                }
                guard let output = try? tools.run("curl", ["--silent", "--show-error", "--fail", "--proto", "=http,https", "--max-time", "\(Self.postTimeout)",
                                                           "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", text, url]) else { return }
                if output.status == 0 { break }
                logger.warning("ingest job \(job.id): notification to \(url) failed (try \(attempt + 1)): \(output.stderrTail)")
            }
        }
    }
}
