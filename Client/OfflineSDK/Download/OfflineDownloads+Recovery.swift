import Crypto
import Foundation
import LicenseProtocol

/// What a new manager does with what the last one left behind.
extension OfflineDownloads {
    /// Queues interrupted downloads again and checks the storage folder (`checkStorage`).
    func recover() async throws(OfflineVideoError) {
        try licenses.onSharedQueue { licenses throws(OfflineVideoError) in try licenses.adoptLegacyStore() }
        for record in try storeCall(.open, { try store.allDownloads() })
        where record.downloadState.isActive {
            try await apply(.interrupted, to: record.token)
        }
        _ = try await checkStorage(during: .open)
        run(scheduler.fill())
    }

    /// `OfflineVideoManager.checkStorage(deep:)`.
    func checkStorage(deep: Bool) async throws(OfflineVideoError) -> Bool {
        try await checkStorage(during: .query, deep: deep)
    }

    /// `checkStorage`, its store failures reported as part of `operation` (opening the manager at start).
    private func checkStorage(during operation: StoreOperation, deep: Bool = false) async throws(OfflineVideoError) -> Bool {
        try seams.requireOwner()
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
        let stamp = try storeStamp(during: operation)
        var unclaimed: [URL] = []
        for folder in folders.sorted() where !known.contains(folder) {
            let url = packagesDirectory.appendingPathComponent(folder)
            // Stranded (the seed's word): made by this store, never recorded (a crash between the
            // folder and its record). Any other folder holds media of another store (this one's
            // file lost, cut to nothing or replaced, or a folder copied in): never deleted, only listed.
            guard FileManager.default.contents(atPath: url.appendingPathComponent(PackageLayout.storeStampFile).path) == stamp else {
                unclaimed.append(url)
                continue
            }
            if hub.delegate?.shouldDeleteVideoPackage(url.path) ?? true {
                try? FileManager.default.removeItem(atPath: url.path)
                changed = true
            }
        }
        unclaimedFolders = unclaimed
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
        OfflineDownloads.missingFile(record, store: store, folder: packageFolder(record.token))
    }

    /// `missingFile`, for the package in `folder`. Reads the store and the folder: off the cooperative pool only.
    static func missingFile(_ record: DownloadRecord, store: OfflineStore, folder: URL) -> String? {
        PoolCheck.note()
        var onDisk = PackageListing(packageDirectory: folder.path)
        func exists(_ file: String) -> Bool { onDisk.exists(file) }
        var files = [PackageLayout.masterPlaylist] + ((try? store.tracks(record.token)) ?? []).map(\.localPlaylist)
        if let video = try? record.video() {
            files += OfflineDownloads.sidebandTracks(record: record, video: video).map(PackageLayout.sidebandFile)
            if ThumbnailTrackFile.track(of: video, asked: StoredRequest.of(record).thumbnails == true) != nil {
                let local = folder.appendingPathComponent(ThumbnailTrackFile.trackFile).path
                files.append(ThumbnailTrackFile.trackFile)
                files += OfflinePlaybackSessions.readFile(local).map { ThumbnailTrackFile.spriteFiles(local: String(decoding: $0, as: UTF8.self)) } ?? []
            }
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
