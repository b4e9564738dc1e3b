import Foundation
import WireModels

/// Track queries on downloaded videos: the audio and subtitle options a video has, and those a
/// download holds (the reference's media selection group queries).
extension OfflineVideoManager {
    /// The options of `characteristic` (``MediaCharacteristic/audible``, ``MediaCharacteristic/legible``, or
    /// one a playlist lists in `CHARACTERISTICS`) of a completed download: the master playlist's renditions of
    /// the downloaded variant and the video's sideband text tracks, as they were when it was planned,
    /// downloaded or not. Nil for an unknown token, a download that is not complete, or a characteristic the
    /// video has no option of.
    ///
    /// - Parameters:
    ///   - characteristic: The kind of options: ``MediaCharacteristic/audible``,
    ///     ``MediaCharacteristic/legible``, or one a playlist lists.
    ///   - token: The completed download's token.
    /// - Returns: The options in playlist order (sideband tracks last); nil for an unknown token, a download
    ///   that is not complete, or a characteristic without options.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/storageFailure`` with a storage reason
    ///   when the offline store cannot be read.
    public func mediaSelectionGroup(for characteristic: MediaCharacteristic,
                                    offlineVideoToken token: OfflineVideoToken) throws(OfflineVideoError) -> MediaSelectionGroup? {
        guard let (_, options) = try completedOptions(token) else { return nil }
        let matching = options.filter { $0.hasMediaCharacteristic(characteristic) }
        return matching.isEmpty ? nil : MediaSelectionGroup(options: matching, allowsEmptySelection: characteristic != .audible)
    }

    /// The options of `characteristic` a completed download holds on disk (its audio and subtitle
    /// tracks and sideband subtitle files), in the group's order; nil for an unknown token or a
    /// download that is not complete (while it runs, paused, failed).
    ///
    /// - Parameters:
    ///   - characteristic: The kind of options: ``MediaCharacteristic/audible``,
    ///     ``MediaCharacteristic/legible``, or one a playlist lists.
    ///   - token: The completed download's token.
    /// - Returns: The options on disk, in the group's order; nil for an unknown token or a download that is not
    ///   complete.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/storageFailure`` with a storage reason
    ///   when the offline store cannot be read.
    public func downloadedMediaSelectionOptions(for characteristic: MediaCharacteristic,
                                                offlineVideoToken token: OfflineVideoToken) throws(OfflineVideoError) -> [MediaSelectionOption]? {
        guard let (record, options) = try completedOptions(token) else { return nil }
        let tracks = try storeCall { try store.tracks(token) }
        let sideband = (try? record.video()).map { OfflineDownloads.sidebandTracks(record: record, video: $0) } ?? []
        return options.filter { option in
            guard option.hasMediaCharacteristic(characteristic) else { return false }
            switch option.source {
            case .manifest:
                return tracks.contains { $0.kind == option.mediaType && $0.language == option.languageTag && $0.name == option.displayName }
            case .sideband:
                return sideband.contains { $0.srclang == option.languageTag }
            }
        }
    }

    /// A completed download's record and the media options kept in its package; nil when the
    /// token is unknown, the download is not complete, or it was planned before options were kept.
    private func completedOptions(_ token: OfflineVideoToken) throws(OfflineVideoError) -> (DownloadRecord, [MediaSelectionOption])? {
        let found = try storeCall { () throws -> (DownloadRecord, Data?)? in
            guard let record = try store.download(token), record.downloadState == .completed else { return nil }
            return (record, try store.packageFile(token, path: PackageLayout.mediaOptionsFile))
        }
        guard let (record, data) = found, let data, let options = MediaOptionCatalog.decode(data) else { return nil }
        return (record, options)
    }
}
