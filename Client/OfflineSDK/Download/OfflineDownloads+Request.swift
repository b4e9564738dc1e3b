import Foundation
import WireModels
import SystemFiles

/// The steps of a download request after it is checked, reserved and planned
/// (`requestDownload`): the package folder's first files, the license, the record, storing it.
extension OfflineDownloads {
    /// Writes a new package's files (local playlists, media options, artwork) into `folder`;
    /// on failure the folder is removed. Not atomic: no plan points at the folder yet, and one
    /// left half-written by a crash is a stranded package the next start deletes (or, for a
    /// preloaded license, is written again by the next request). Not synced here either: the store
    /// keeps the same files with the plan, a download's run first writes again any that is
    /// missing or not whole (`restorePlaylists`) and syncs them while its segments come
    /// (`syncPackageFiles`), before the download may be called complete.
    /// The store's stamp goes first (`PackageLayout.storeStampFile`): a crash after it leaves a
    /// folder this store knows it made.
    static func writePackageFiles(_ files: [String: Data], stamp: Data, to folder: URL) throws(OfflineVideoError) {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try writeUnsynced(stamp, to: folder.appendingPathComponent(PackageLayout.storeStampFile).path)
            for (path, bytes) in files {
                let url = folder.appendingPathComponent(path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try writeUnsynced(bytes, to: url.path)
            }
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw OfflineVideoError(.downloadFailure, OfflineVideoError.storageReason(of: error), "Cannot write the package folder: \(error)",
                                    underlying: error)
        }
    }

    /// Creates or empties the file at `path` and writes `bytes`, without `fsync` (Foundation's
    /// `Data.write` syncs every file).
    static func writeUnsynced(_ bytes: Data, to path: String) throws {
        PoolCheck.note()
        let failure = bytes.withUnsafeBytes { FileContents.write($0, to: path) }
        if failure != 0 { throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO) }
    }

    /// The record of a requested download: a new one in `firstState` (the state machine's
    /// `birth`), or the preloaded record, which keeps its token, sequence, state (moved by its
    /// `request` event) and license, everything else being this request's.
    func downloadRecord(token: OfflineVideoToken, video: PlaybackVideo, preloaded: DownloadRecord?,
                        firstState: OfflineVideoDownloadState, parameters: DownloadParameters, stored: StoredRequest,
                        task: DownloadSpec.TaskFields?, plan: DownloadPlan, license: StoredLicense?) throws -> DownloadRecord {
        let now = configuration.clock().timeIntervalSince1970
        let allowsCellular = seams.options().allowsCellularDownload
        var record = try preloaded ?? DownloadRecord.new(token: token, video: video, state: firstState, parameters: parameters,
                                                         requestedAt: now, allowsCellular: allowsCellular,
                                                         sequence: try store.nextSequence())
        if preloaded != nil {
            record.videoJSON = try DownloadRecord.videoJSON(of: video)
            record.parameters = try JSONEncoder().encode(parameters)
            record.displayName = parameters.displayName ?? record.displayName  // the preload's, else the video's name
            record.requestedAt = now
            record.policyKey = video.origin?.policyKey ?? record.policyKey
            record.serviceBaseURL = video.origin?.baseURL ?? record.serviceBaseURL
            record.allowsCellular = allowsCellular
        }
        record.selections = try JSONEncoder().encode(stored)
        if let task {
            record.contentID = task.contentID
            record.taskMetadata = task.metadata
        }
        record.bitrate = plan.variant.bandwidth
        record.masterURL = plan.masterURL
        if let license { license.apply(to: &record) }
        return record
    }

    /// Stores the record with its plan in one transaction (attached to the preloaded record, or
    /// new). On failure the package folder goes, and a license acquired for it is given back.
    func storeDownload(_ record: DownloadRecord, plan: DownloadPlan, files: [String: Data], attachingToPreload: Bool,
                       holdsNewLicense: Bool) throws(OfflineVideoError) {
        do {
            if attachingToPreload {
                try store.attachPlan(record, tracks: plan.trackRecords, segments: plan.segmentRecords, playlists: files)
            } else {
                try store.insert(record, tracks: plan.trackRecords, segments: plan.segmentRecords, playlists: files)
            }
        } catch {
            try? FileManager.default.removeItem(at: packageFolder(record.token))
            if holdsNewLicense { licenses.onSharedQueue { $0.queueRelease(record) } }  // nothing here holds that license now
            throw OfflineVideoError.storeFailure(error, during: .download, "Cannot store the download")
        }
    }
}
