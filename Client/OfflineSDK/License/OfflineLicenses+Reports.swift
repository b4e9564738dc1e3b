import CurlTransfer
import Foundation
import LicenseProtocol
import WireModels

/// First plays and releases on their way to the license server. Each is queued durably in the
/// store first and sent when the playback network policy allows: at once, at the next start,
/// when the network comes back, or after a back-off when the server could not be reached
/// (`Outbox`, the same mechanism as the analytics events'). A report the server refuses for good (an
/// expired or released license) is dropped; one that cannot reach it waits.
extension OfflineLicenses {
    /// A report of `kind` for the license in `terms`, or nil when the video has no FairPlay source.
    func report(_ kind: LicenseReport.Kind, record: DownloadRecord, terms: LicenseTerms) -> LicenseReport? {
        guard let video = try? record.video(), let fairPlay = DownloadPlanner.fairPlaySystem(of: video),
              let keySystem = try? JSONEncoder().encode(fairPlay) else { return nil }
        return LicenseReport(id: nil, kind: kind, token: record.token, licenseID: terms.licenseID, contentKeyID: terms.contentKeyID,
                             accountID: record.accountID, videoID: record.videoID, keySystem: keySystem,
                             serviceBaseURL: record.serviceBaseURL, policyKey: record.policyKey,
                             createdAt: clock().timeIntervalSince1970, attempts: 0)
    }

    /// Queues the release of `record`'s license (if it holds a persistable one) and sends it
    /// when it can: the license is gone on the device either way.
    func queueRelease(_ record: DownloadRecord) {
        guard let terms = StoredLicense.terms(of: record), terms.persistable,
              let report = report(.release, record: record, terms: terms) else { return }
        do { try store.addReport(report) } catch { return }
        reportOutbox.passSoon()
    }

    /// Sends the queued first-play and release reports now, while the network policy allows,
    /// and returns how many are still queued (they go out at a later start, when the network
    /// comes back, or after a back-off when the server could not be reached). For a process
    /// about to end, before `close()`: a command-line tool, whose releases would otherwise wait
    /// for its next run. Returns once a pass already under way has sent them too.
    func sendPending() async -> Int {
        guard isOwner else { return (try? store.pendingReports().count) ?? 0 }
        await reportOutbox.runAndWait { await self.pass() }
        return (try? store.pendingReports().count) ?? 0
    }

    /// Sends every queued report while the network allows, oldest first; one pass at a time
    /// (a call during a pass makes the pass run once more).
    func sendReports() async {
        guard isOwner else { return }
        await reportOutbox.run { await self.pass() }
    }

    /// One pass over the queued reports, oldest first, stopping at the first one the network
    /// policy holds back or the server cannot take now (the rest waits behind it).
    private func pass() async -> OutboxPassResult {
        for report in (try? store.pendingReports()) ?? [] {
            guard !reportOutbox.isClosed else { return .finished }  // the manager is closing
            guard let id = report.id else { continue }
            let server = (try? JSONDecoder().decode(KeySystem.self, from: report.keySystem))?.keyRequestURL ?? ""
            guard NetworkGate.allows(network, allowsCellular: seams.options().allowsCellularPlayback, url: server) else {
                return .waitingForNetwork  // the rest waits for a network the playback policy allows
            }
            if await send(report) {
                try? store.removeReport(id)
            } else {
                try? store.countReportAttempt(id)
                return .unreachable  // the server cannot be reached: the rest waits too
            }
        }
        return .finished
    }

    /// Sends one report; true when it is done with (sent, or refused for good).
    private func send(_ report: LicenseReport) async -> Bool {
        guard var keySystem = try? JSONDecoder().decode(KeySystem.self, from: report.keySystem) else { return true }
        // One try per pass: the queue is durable and the outbox backs off between passes, so the
        // license client's own retries (30 s of them) would only hold up the pass, and a process
        // ending after `sendPendingLicenseReports`, for a report that waits anyway.
        var client = self.client
        client.retry = .singleAttempt
        // The license the report is about, as stored now: a renewal stored while the report is
        // in flight is newer than the server's answer, which then must not replace it.
        let reportedIssue = report.token.flatMap { try? store.download($0) }.flatMap(StoredLicense.terms)?.issuedAt
        for attempt in 0..<2 {
            do {
                switch report.kind {
                case .firstPlay:
                    let updated = try await client.firstPlay(licenseID: report.licenseID, fairPlay: keySystem,
                                                                    contentKeyID: report.contentKeyID, accountID: report.accountID,
                                                                    authToken: nil)
                    applyServerLicense(updated, token: report.token, reportedIssue: reportedIssue)
                case .release:
                    try await client.release(licenseID: report.licenseID, fairPlay: keySystem, contentKeyID: report.contentKeyID,
                                                    accountID: report.accountID, authToken: nil)
                }
                return true
            } catch {
                if error.reason == .tokenExpired, attempt == 0, let fresh = await freshKeySystem(report) {
                    keySystem = fresh
                    continue
                }
                if error.reason == .licenseRevoked, let token = report.token { forget(token) }
                // What may pass waits for the next pass (the outbox's back-off).
                let unreachable = error.reason == .network || (error.httpStatus.map(RetryPolicy.isRetryable) ?? false)
                return !unreachable
            }
        }
        return false
    }

    /// Replaces the stored license of `token` with the server's answer to a first-play report
    /// (same license id), keeping the local first play; announces the expiry if it moved. Not
    /// when the stored license changed while the report was in flight (`reportedIssue` is the
    /// issue time it had when the report was sent): a renewal's license is newer than the answer.
    private func applyServerLicense(_ license: StoredLicense, token: OfflineVideoToken?, reportedIssue: Date?) {
        guard let token, let record = try? store.download(token), let current = StoredLicense.terms(of: record),
              current.licenseID == license.terms.licenseID, current.issuedAt == reportedIssue else { return }
        let local = record.initialPlaybackAt.map(Date.init(timeIntervalSince1970:))
        let before = current.expiry(localFirstPlay: local)
        guard (try? store.update(token, { license.apply(to: &$0) })) != nil else { return }
        seams.licenseChanged(token)
        let after = license.terms.expiry(localFirstPlay: local)
        if after != before { hub.emit(.licenseExpirationChanged(token, expiration: after ?? .distantFuture)) }
    }

    /// The key system of a fresh video object, for a report whose license URL expired: from the
    /// delegate's service or one built from the origin kept with the report.
    private func freshKeySystem(_ report: LicenseReport) async -> KeySystem? {
        let record = report.token.flatMap { try? store.download($0) }
        var service: PlaybackService?
        if let video = try? record?.video() { service = hub.delegate?.playbackServiceForManifestURLTTLUpdate(for: video) }
        if service == nil, let base = report.serviceBaseURL {
            service = PlaybackService(origin: PlaybackService.Origin(baseURL: base, accountID: report.accountID, policyKey: report.policyKey),
                                      client: http)
        }
        guard let service, let video = try? await service.findVideo(id: report.videoID) else { return nil }
        return DownloadPlanner.fairPlaySystem(of: video)
    }
}
