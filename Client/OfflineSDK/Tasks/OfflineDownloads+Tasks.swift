import Foundation
import LicenseProtocol

/// What the task-style façade reads of one offline video: the record as a `DownloadTask` sees it.
struct TaskSnapshot: Sendable, Equatable {
    var token: OfflineVideoToken
    var contentID: String
    var videoID: String
    var title: String
    var metadata: String?
    var state: OfflineVideoDownloadState
    var percent: Double
    var expiration: Date?
    var error: OfflineVideoError?
    /// The content key id of the license it holds, if it holds one.
    var keyID: String?
    var sequence: Int64
}

/// The downloads' side of `DownloadManager` and `LicenseFetcher`: snapshots, purge keeping the
/// key, and keys looked up by key id. Everything still goes through the one request path, the
/// one state machine and the one store.
extension OfflineDownloads {
    /// The snapshot of `token` (nil when no record has that token), with the reading's
    /// generation: readings are numbered in the order this actor made them, so a reader that
    /// receives them out of order can tell an older one from a newer one.
    func taskSnapshot(_ token: OfflineVideoToken) throws(OfflineVideoError) -> (generation: UInt64, snapshot: TaskSnapshot?) {
        let snapshot = try storeCall { try store.download(token) }.map(snapshot(of:))
        snapshotGeneration += 1
        return (snapshotGeneration, snapshot)
    }

    /// Every record's snapshot, in the order requested, with the reading's generation.
    func taskSnapshots() throws(OfflineVideoError) -> (generation: UInt64, snapshots: [TaskSnapshot]) {
        let snapshots = try storeCall { try store.allDownloads() }.map(snapshot(of:))
        snapshotGeneration += 1
        return (snapshotGeneration, snapshots)
    }

    private func snapshot(of record: DownloadRecord) -> TaskSnapshot {
        let status = status(of: record)
        return TaskSnapshot(token: record.token, contentID: record.taskContentID, videoID: record.videoID, title: record.displayName,
                            metadata: record.taskMetadata, state: status.downloadState, percent: status.downloadPercent,
                            expiration: OfflineLicenses.expiration(of: record), error: status.error,
                            keyID: record.license == nil ? nil : StoredLicense.terms(of: record)?.contentKeyID, sequence: record.sequence)
    }

    /// Purges a download task: its files and plan go; a license it holds stays, and its record
    /// becomes that of a preloaded license (Quickplay: "the persistent drm key ... will not be
    /// deleted on purge"); without one the record goes too. Refused for a record that is only a
    /// preloaded license (`unknownToken`: no task has that token).
    func purgeTask(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try seams.requireOwner()
        let record = try existing(token)
        guard record.downloadState != .licensePreloaded else {
            throw OfflineVideoError(.invalidParameter, .unknownToken, "No download task has the token \(token) (it holds only a key)")
        }
        // No suspension between reading the record and its transition: the license cannot go meanwhile.
        try await apply(.purge(keepsLicense: record.license != nil), to: token)
    }

    /// Resumes a suspended download: a task's `resume()`, which (unlike `resumeVideoDownload`)
    /// leaves a failed one to `retry`.
    func resumeSuspendedDownload(_ token: OfflineVideoToken) async throws(OfflineVideoError) {
        try seams.requireOwner()
        let state = announcedState(of: try existing(token))
        guard state == .suspended else {
            throw OfflineVideoError(.invalidParameter, .invalidState,
                                    "Download \(token) is \(state) and cannot be resumed" + (state == .error ? " (retry a failed task)" : ""))
        }
        // No suspension between the check and the transition.
        try await apply(.resume, to: token)
    }

    /// Fetches and persists the key of `video` for `contentID`: a new preloaded license when the
    /// video has no record holding one; a new license for a record whose license expired or was
    /// deleted (a download keeps its media: it plays again without downloading again). Refused
    /// with `keyAlreadyHeld` while the video's key has not expired, and `invalidParameter` when
    /// `keyID` is not the video's key.
    func fetchKey(for video: PlaybackVideo, parameters: DownloadParameters, contentID: String,
                  keyID: String?) async throws(OfflineVideoError) -> OfflineVideoToken {
        try seams.requireOwner()
        let records = try storeCall { try store.allDownloads().filter { $0.videoID == video.id } }
        guard let record = records.first(where: { DownloadStateMachine.holdsLicense.contains($0.downloadState) }) else {
            return try await preloadLicense(video, parameters: parameters, contentID: contentID, expectedKeyID: keyID)
        }
        if record.license != nil, let terms = StoredLicense.terms(of: record) {
            if let keyID, keyID != terms.contentKeyID {
                throw OfflineVideoError(.invalidParameter, .invalidParameter,
                                        "Video \(video.id) is protected with key \(terms.contentKeyID), not \(keyID)")
            }
            if let end = OfflineLicenses.expiration(of: record), configuration.clock() < end {
                throw OfflineVideoError(.invalidParameter, .keyAlreadyHeld,
                                        "Video \(video.id) holds key \(terms.contentKeyID) until \(end); renew it to change its terms")
            }
        }
        return try await licenses.renew(record.token, video: video, authToken: nil, parameters: parameters)
    }

    /// The record holding the license of content key `keyID`; `unknownKey` when none does.
    func keyHolder(_ keyID: String) throws(OfflineVideoError) -> DownloadRecord {
        let records = try storeCall { try store.allDownloads() }
        guard let record = records.first(where: { $0.license != nil && StoredLicense.terms(of: $0)?.contentKeyID == keyID }) else {
            throw OfflineVideoError(.invalidParameter, .unknownKey, "No persistent key has the key id \(keyID)")
        }
        return record
    }

    /// Deletes the key `keyID`: a preloaded key goes with its record, a download's key goes and
    /// its media stay (playing then needs a new key). The server is told either way.
    func deleteKey(_ keyID: String) async throws(OfflineVideoError) {
        try seams.requireOwner()
        let record = try keyHolder(keyID)
        if record.downloadState == .licensePreloaded {
            try await apply(.delete, to: record.token)
        } else {
            try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.invalidate(record.token) }
        }
    }
}
