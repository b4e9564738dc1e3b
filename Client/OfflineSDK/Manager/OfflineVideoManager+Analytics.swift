import CurlTransfer
import Foundation
import WireModels

/// Offline analytics: download events (requested, completed, cancelled, failed) from the
/// manager and play events (started, paused, completed, with the position) from
/// `OfflinePlayback`, each stored first with an id of its own, then uploaded in batches to the
/// `/tracker` collector of the backend the video came from (`PlaybackService.Origin.baseURL`,
/// kept with the download: one queue per backend) when the network policy allows
/// (`allowsCellularAnalytics`): at once, when the network changes, at the next start, or after
/// a back-off when the collector could not be reached (`Outbox`, shared with the license
/// reports). An event leaves the store only once the collector accepted its batch (or refused
/// it for good with a 4xx); the collector stores an id once, so a batch sent again after a
/// lost answer is not counted twice. Unsent events take at most `analyticsStorageLimit` bytes
/// of JSON: the oldest are dropped first, with `.analyticsEventsDropped(count:)`.
extension OfflineVideoManager {
    /// The events the SDK records, by their collector names.
    enum AnalyticsEventName: String, Sendable {
        case downloadRequested = "download_requested"
        case downloadCompleted = "download_completed"
        case downloadCancelled = "download_cancelled"
        case downloadFailed = "download_failed"
        case playStarted = "play_started"
        case playPaused = "play_paused"
        case playCompleted = "play_completed"
    }

    /// What an event is about: a download, and the backend its collector is on (nil: a video
    /// found by no service, whose events are not recorded).
    struct AnalyticsSubject: Sendable {
        var token: OfflineVideoToken
        var videoID: String
        var accountID: String
        var origin: String?

        init(_ record: DownloadRecord) {
            token = record.token
            videoID = record.videoID
            accountID = record.accountID
            origin = record.serviceBaseURL
        }
    }

    /// The most events, and bytes of their JSON, one upload carries (the collector takes 500
    /// events and 64 KiB).
    static let analyticsBatch = (count: 100, bytes: 48 * 1024)

    /// Stores an event about `subject` (within the storage limit, announcing what was dropped)
    /// and starts an upload pass if the network policy lets it go now.
    func recordAnalytics(_ name: AnalyticsEventName, _ subject: AnalyticsSubject, position: Double? = nil, session: String? = nil,
                         details: [String: JSONValue]? = nil) throws(OfflineVideoError) {
        guard let origin = subject.origin else { return }
        let now = configuration.clock()
        let event = TrackerEvent(id: UUID().uuidString.lowercased(), event: name.rawValue, videoID: subject.videoID,
                                 accountID: subject.accountID, time: now, position: position,
                                 deviceID: try? licenses.client.deviceID(), token: subject.token, session: session, details: details)
        let limit = options.analyticsStorageLimit
        let dropped = try storeCall {
            let body = try WireJSON.encoder(sortedKeys: true).encode(event)
            return try store.addAnalyticsEvent(AnalyticsRecord(seq: nil, id: event.id, origin: origin, body: body, bytes: body.count,
                                                               createdAt: now.timeIntervalSince1970, attempts: 0), limit: limit)
        }
        if dropped > 0 { hub.emit(.analyticsEventsDropped(count: dropped)) }
        // Held back now, it goes when the network changes (the watcher) or at the next pass.
        if NetworkGate.allows(configuration.network, allowsCellular: options.allowsCellularAnalytics, url: Self.collectorURL(origin)) {
            analyticsOutbox.passSoon()
        }
    }

    /// Records the end of a download as `.downloadFinished` announces it: completed, cancelled
    /// (reason `cancelled`) or failed (with its code and reason). Never fails the download.
    func recordDownloadFinished(_ record: DownloadRecord, error: OfflineVideoError?) {
        let name: AnalyticsEventName = error == nil ? .downloadCompleted : error?.reason == .cancelled ? .downloadCancelled : .downloadFailed
        let details = error.map { ["code": JSONValue.number(Double($0.code.rawValue)), "reason": .string($0.reason.rawValue)] }
        try? recordAnalytics(name, AnalyticsSubject(record), details: details)
    }

    /// Uploads the stored analytics events now, while the network policy allows, and returns
    /// how many are still stored (they go when the network changes, after a back-off, or at a
    /// later start). Returns once a pass already under way has sent them too.
    ///
    /// - Returns: How many events are still stored.
    public func sendPendingAnalytics() async -> Int {
        if ownership != nil { await analyticsOutbox.runAndWait { await self.analyticsPass() } }
        return (try? store.analyticsCount()) ?? 0
    }

    /// One upload pass at a time (a call during a pass makes it run once more).
    func sendAnalytics() async {
        guard ownership != nil else { return }
        await analyticsOutbox.run { await self.analyticsPass() }
    }

    /// Uploads every collector's events in batches, oldest first. A collector the network
    /// policy holds back, or that cannot be reached, keeps its events; the others still go.
    private func analyticsPass() async -> OutboxPassResult {
        var result = OutboxPassResult.finished
        for origin in (try? store.analyticsOrigins()) ?? [] {
            let url = OfflineVideoManager.collectorURL(origin)
            guard NetworkGate.allows(configuration.network, allowsCellular: options.allowsCellularAnalytics, url: url) else {
                if result == .finished { result = .waitingForNetwork }
                continue
            }
            while !analyticsOutbox.isClosed,  // the manager is closing
                  let batch = try? store.pendingAnalytics(origin: origin, count: Self.analyticsBatch.count, bytes: Self.analyticsBatch.bytes),
                  !batch.isEmpty {
                let seqs = batch.compactMap(\.seq)
                if let later = await upload(batch, to: url) {
                    try? store.countAnalyticsAttempt(seqs)
                    result = later
                    break
                }
                // A store that cannot forget them now would send them again: the collector
                // keeps each id once, and the back-off tries later.
                guard (try? store.removeAnalytics(seqs)) != nil else { return .unreachable }
            }
        }
        return result
    }

    /// Posts one batch; nil when the collector is done with it (accepted, or refused for good),
    /// else how the pass ends: the collector could not take it now (by `RetryPolicy`'s rule),
    /// with the `Retry-After` it sent.
    private func upload(_ batch: [AnalyticsRecord], to url: String) async -> OutboxPassResult? {
        var body: [UInt8] = [UInt8(ascii: "[")]
        for (index, record) in batch.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += record.body
        }
        body.append(UInt8(ascii: "]"))
        do {
            let response = try await client.send(HTTPClientRequest(url: url, method: .post,
                                                                   headers: [("Content-Type", "application/json")], body: body))
            guard RetryPolicy.isRetryable(status: response.status) else { return nil }
            return RetryPolicy.retryAfter(response.headers["Retry-After"]).map { .serverBusy(retryAfter: $0) } ?? .unreachable
        } catch {
            return .unreachable
        }
    }

    /// The collector of the backend at `origin` (a Playback API base URL).
    static func collectorURL(_ origin: String) -> String {
        (origin.hasSuffix("/") ? String(origin.dropLast()) : origin) + "/tracker"
    }
}
