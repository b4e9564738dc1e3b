import Foundation
import LicenseProtocol
import WireModels

/// The offline video object: the stored video with the reference's offline properties
/// (`OfflineVideoManager.OfflineProperty`), cached for completed downloads.
extension OfflinePlaybackSessions {
    /// The stored video with the offline properties, or nil for an unknown token. Objects of
    /// completed downloads are cached until `clearOfflineVideoCache()`.
    func videoObject(_ token: OfflineVideoToken) -> PlaybackVideo? {
        if let cached = videoCache[token] { return cached }
        guard let record = try? store.download(token), let original = try? record.video() else { return nil }
        var properties = original.properties
        let since2001 = { (seconds: Double) in JSONValue.number(seconds - Date.timeIntervalBetween1970AndReferenceDate) }
        let folder = packageFolder(token)
        properties[OfflineVideoManager.OfflineProperty.token] = .string(token)
        properties[OfflineVideoManager.OfflineProperty.displayName] = .string(record.displayName)
        properties[OfflineVideoManager.OfflineProperty.startTime] = since2001(record.requestedAt)
        properties[OfflineVideoManager.OfflineProperty.endTime] = record.endedAt.map(since2001) ?? .number(0)
        if let requested = record.licenseRequestedAt { properties[OfflineVideoManager.OfflineProperty.licenseRequestTime] = since2001(requested) }
        // The effective expiry (after a first play, the earlier of the rental's end and the play
        // window's), the same answer as `fairPlayLicenseExpiration`; none for a purchase.
        if let expires = OfflineLicenses.expiration(of: record), expires != .distantFuture {
            properties[OfflineVideoManager.OfflineProperty.licenseAbsoluteExpirationTime] = since2001(expires.timeIntervalSince1970)
        }
        if let played = record.initialPlaybackAt { properties[OfflineVideoManager.OfflineProperty.initialPlaybackTime] = since2001(played) }
        // The source the package was downloaded from: the rule's choice in the package's format.
        let format: HLSSourceFormat = (try? store.hasInitSegments(token)) == true ? .cmaf : .transportStream
        if let source = try? OfflineSourceRule(configuration).choose(original.sources, videoID: original.id, format: format) {
            properties[OfflineVideoManager.OfflineProperty.onlineSource] = .string(source.src)
            if let data = try? WireJSON.encoder(sortedKeys: true).encode(source),
               let json = try? JSONDecoder().decode(JSONValue.self, from: data) {
                properties[OfflineVideoManager.OfflineProperty.onlineSourceObject] = json
            }
        }
        if let terms = StoredLicense.terms(of: record) {
            // The terms as asked (preload, download or last renewal); the server's rental end is
            // whole seconds counted from its own time, so it is only the fallback.
            let asked = (try? JSONDecoder().decode(DownloadParameters.self, from: record.parameters))?.license
            properties[OfflineVideoManager.OfflineProperty.licensePurchase] = .bool(terms.kind == .purchase)
            if terms.kind == .rental {
                if let duration = asked?.kind == .rental ? asked?.rentalDuration : nil {
                    properties[OfflineVideoManager.OfflineProperty.licenseRentalDuration] = .number(duration)
                } else if let end = terms.rentalEnd {
                    properties[OfflineVideoManager.OfflineProperty.licenseRentalDuration] = .number(end.timeIntervalSince(terms.issuedAt).rounded())
                }
            }
            if let play = terms.playDuration { properties[OfflineVideoManager.OfflineProperty.licensePlayDuration] = .number(play) }
        }
        if let poster = record.posterFile {
            properties[OfflineVideoManager.OfflineProperty.posterName] = .string((poster as NSString).lastPathComponent)
            properties[OfflineVideoManager.OfflineProperty.posterPath] = .string(folder.appendingPathComponent(poster).path)
        }
        if let thumbnail = record.thumbnailFile {
            properties[OfflineVideoManager.OfflineProperty.thumbnailName] = .string((thumbnail as NSString).lastPathComponent)
            properties[OfflineVideoManager.OfflineProperty.thumbnailPath] = .string(folder.appendingPathComponent(thumbnail).path)
        }
        if let artwork = StoredRequest.of(record).configuration?.artworkFile {
            properties[OfflineVideoManager.OfflineProperty.artworkName] = .string((artwork as NSString).lastPathComponent)
            properties[OfflineVideoManager.OfflineProperty.artworkPath] = .string(folder.appendingPathComponent(artwork).path)
        }
        properties[OfflineVideoManager.OfflineProperty.relativeVideoPath] = .string("packages/\(token)")
        properties[OfflineVideoManager.OfflineProperty.videoPath] = .string(folder.path)
        properties[OfflineVideoManager.OfflineProperty.masterPlaylistPath] = .string(folder.appendingPathComponent(PackageLayout.masterPlaylist).path)
        let sideband = OfflineDownloads.sidebandTracks(record: record, video: original)
        properties[OfflineVideoManager.OfflineProperty.usesSidebandSubtitles] = .bool(!sideband.isEmpty)
        properties[OfflineVideoManager.OfflineProperty.sidebandSubtitleLanguages] = .array(sideband.map { .string($0.srclang) })
        properties[OfflineVideoManager.OfflineProperty.sidebandSubtitlePaths] = .object(Dictionary(
            sideband.map { ($0.srclang, JSONValue.string(folder.appendingPathComponent(PackageLayout.sidebandFile($0)).path)) },
            uniquingKeysWith: { first, _ in first }))
        let playable = record.downloadState == .completed && OfflineDownloads.missingFile(record, store: store, folder: folder) == nil
        properties[OfflineVideoManager.OfflineProperty.playableOffline] = .bool(playable)
        let video = PlaybackVideo(video: original.video, properties: properties, origin: original.origin)
        if record.downloadState == .completed { videoCache[token] = video }
        return video
    }

    /// Forgets cached offline video objects; the next `videoObject` builds them afresh.
    func clearVideoObjects() {
        videoCache = [:]
    }
}
