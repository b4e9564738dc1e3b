import Foundation

/// What a new manager does with what the last one left behind.
extension OfflineVideoManager {
    /// Resumes interrupted downloads, marks completed ones whose files vanished as stale,
    /// and offers package folders no record knows to the delegate (deleted by default).
    /// Announces `storageChanged` when anything was found changed.
    func recover() async throws(OfflineVideoError) {
        var changed = false
        let records = try storeCall(.open) { try store.allDownloads() }
        for record in records {
            switch record.downloadState {
            case .requested, .downloading:
                try await apply(.interrupted, to: record.token)
            case .completed:
                if let missing = missingFile(record) {
                    try await apply(.filesMissing(missing), to: record.token, announcesStorageChange: false)
                    changed = true
                }
            case .suspended, .cancelled, .error, .licensePreloaded, .stale:
                break
            }
        }
        let known = Set(records.map(\.token))
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: packagesDirectory.path)) ?? []
        for folder in folders.sorted() where !known.contains(folder) {
            let path = packagesDirectory.appendingPathComponent(folder).path
            if hub.delegate?.shouldDeleteVideoPackage(path) ?? true {
                try? FileManager.default.removeItem(atPath: path)
                changed = true
            }
        }
        if changed { hub.emit(.storageChanged) }
        schedule()
    }

    /// The first file of a completed download that is not on disk (playlists, segments,
    /// sideband subtitles), or nil when all are.
    func missingFile(_ record: DownloadRecord) -> String? {
        let folder = packageFolder(record.token).path
        func exists(_ file: String) -> Bool { access(folder + "/" + file, F_OK) == 0 }
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
