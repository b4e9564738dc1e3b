import Crypto
import Foundation
import LicenseProtocol

/// What a new manager does with what the last one left behind.
extension OfflineVideoManager {
    /// Queues interrupted downloads again and checks the storage folder (`checkStorage`).
    func recover() async throws(OfflineVideoError) {
        try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.adoptLegacyStore() }
        for record in try storeCall(.open, { try store.allDownloads() })
        where record.downloadState == .requested || record.downloadState == .downloading {
            try await apply(.interrupted, to: record.token)
        }
        _ = try await checkStorage(during: .open)
        run(scheduler.fill())
    }

    /// Checks the storage folder against the store now, as a new manager does when it starts:
    /// a completed download whose files are gone becomes `stale`, and a package folder no
    /// download names is offered to the delegate's `shouldDeleteVideoPackage` (deleted by
    /// default). When anything changed, `offlineVideoStorageDidChange` (and `.storageChanged`)
    /// follow, and the answer is true. Call it when the app becomes active: files can vanish
    /// while it is away, and the check at start runs before anyone listens. Owners only.
    ///
    /// `deep` also reads every segment of every completed download and checks its bytes (against
    /// the digest its server sent, else as whole transport-stream packets): a segment changed on
    /// disk is deleted, to be fetched again, and makes its download stale as a missing one does.
    /// It reads the whole library, on a queue of its own.
    @discardableResult
    public func checkStorage(deep: Bool = false) async throws(OfflineVideoError) -> Bool {
        try await checkStorage(during: .query, deep: deep)
    }

    /// `checkStorage`, its store failures reported as part of `operation` (opening the manager at start).
    private func checkStorage(during operation: StoreOperation, deep: Bool = false) async throws(OfflineVideoError) -> Bool {
        try requireOwner()
        var changed = false
        let records = try storeCall(operation) { try store.allDownloads() }
        for record in records where record.downloadState == .completed {
            var missing = missingFile(record)
            if missing == nil, deep { missing = await damagedFile(record) }
            if let missing {
                if try await applyUnlessMoved(.filesMissing(missing), to: record.token, announcesStorageChange: false) { changed = true }
            }
        }
        // A request writes its folder before its record (a license round trip apart): skip those.
        let known = Set(records.map(\.token)).union(scheduler.preparingPackages)
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: packagesDirectory.path)) ?? []
        for folder in folders.sorted() where !known.contains(folder) {
            let path = packagesDirectory.appendingPathComponent(folder).path
            if hub.delegate?.shouldDeleteVideoPackage(path) ?? true {
                try? FileManager.default.removeItem(atPath: path)
                changed = true
            }
        }
        if changed { hub.emit(.storageChanged) }
        return changed
    }

    /// The first segment of a completed download whose bytes are not what they should be, after
    /// deleting every such segment's file and marking it unfinished; nil when all are right.
    private func damagedFile(_ record: DownloadRecord) async -> String? {
        var files: [(file: String, digest: String?)] = []
        var keys: [String: SegmentKey] = [:]
        try? store.forEachSegmentState(record.token) { segment in
            files.append((segment.file, segment.digest))
            keys[segment.file] = SegmentKey(track: segment.track, sequence: segment.sequence)
        }
        let folder = packageFolder(record.token).path
        let damaged = await SegmentCheck.damagedFiles(in: folder, files)
        guard !damaged.isEmpty else { return nil }
        for file in damaged { unlink(folder + "/" + file) }
        try? store.markMissing(token: record.token, damaged.compactMap { keys[$0] })
        return damaged.first
    }

    /// The first file of a completed download that is not on disk (playlists, segments,
    /// sideband subtitles), or nil when all are.
    func missingFile(_ record: DownloadRecord) -> String? {
        PoolCheck.note()
        var onDisk = PackageListing(packageDirectory: packageFolder(record.token).path)
        func exists(_ file: String) -> Bool { onDisk.exists(file) }
        var files = [PackageLayout.masterPlaylist] + ((try? store.tracks(record.token)) ?? []).map(\.localPlaylist)
        if let video = try? record.video() {
            files += OfflineVideoManager.sidebandTracks(record: record, video: video).map(PackageLayout.sidebandFile)
        }
        if let missing = files.first(where: { !exists($0) }) { return missing }
        // Segment by segment from the store: a long video's records are never all in memory.
        var missing: String?
        try? store.forEachSegmentState(record.token) { segment in
            if missing == nil, !exists(segment.file) { missing = segment.file }
        }
        return missing
    }
}
