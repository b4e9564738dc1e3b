import Foundation
import WireModels

/// Turns a catalog video into the Playback API's video object, with freshly signed URLs.
struct VideoRenderer: Sendable {
    var mediaTokenTTL: TimeInterval

    /// The video object as the Playback API returns it at `now` for `account`; `key` is the
    /// content key of a protected video; its URLs start with `links`' base.
    func render(_ video: CatalogVideo, account: Account, key: ContentKey?, now: Date, links: Links) -> Video {
        let manifestExpiry = Links.expiry(now: now, ttl: account.manifestTokenTTL)
        var keySystems: [String: KeySystem]?
        if video.protection == .fairplay, let key {
            keySystems = [KeySystem.fairPlay: KeySystem(
                keyRequestURL: links.signed(Links.fairPlayLicensePath(video, keyID: key.keyID),
                                            expiresAt: Links.expiry(now: now, ttl: mediaTokenTTL)),
                certificateURL: links.url(Links.certificatePath(accountID: video.accountID)))]
        }
        let sources = VideoRenderer.sources(video, account: account, keySystems: keySystems, manifestExpiry: manifestExpiry,
                                            mediaExpiry: Links.expiry(now: now, ttl: mediaTokenTTL), links: links)
        let poster = links.url(Links.imagePath(video, width: 1280, height: 720))
        let thumbnail = links.url(Links.imagePath(video, width: 160, height: 90))
        let sideband: [TextTrack] = video.sidebandSubtitles.map { video.asset.subtitles[$0] }.enumerated().map { index, subtitle in
            let src = links.url(Links.textTrackPath(video, language: subtitle.language))
            let id = StableID.uuid("texttrack:\(video.id):\(subtitle.language)")
            return TextTrack(id: id, accountID: video.accountID, src: src, sources: [SourceURL(src: src)],
                             srclang: subtitle.language, label: subtitle.name, kind: video.textTrackKinds[subtitle.language] ?? TextTrack.captions,
                             mimeType: TextTrack.webVTT, isDefault: index == 0, assetID: id)
        }
        // Tracks added through the CMS API by URL come after the asset's, as given.
        var textTracks = sideband + video.remoteTextTracks.map { track in
            TextTrack(id: track.id, accountID: video.accountID, src: track.src, sources: [SourceURL(src: track.src)], srclang: track.srclang,
                      label: track.label ?? track.srclang, kind: track.kind, mimeType: TextTrack.webVTT, isDefault: track.isDefault, assetID: nil)
        }
        // The thumbnail track last, in the real answer's shape: no id, language or asset.
        if let track = ThumbnailTrack(video) {
            var thumbnails = TextTrack(id: "", accountID: video.accountID,
                                       src: links.signed(Links.thumbnailTrackPath(video), expiresAt: manifestExpiry), srclang: "",
                                       label: TextTrack.thumbnailsLabel, kind: TextTrack.metadata, mimeType: TextTrack.thumbnailsMimeType)
            thumbnails.width = track.thumbnails.width
            thumbnails.height = track.thumbnails.height
            thumbnails.bandwidth = track.bandwidth
            textTracks.append(thumbnails)
        }
        return Video(
            id: video.id, accountID: video.accountID, name: video.name, description: video.description,
            longDescription: video.longDescription, referenceID: video.referenceID,
            duration: video.durationMilliseconds, economics: video.economics,
            createdAt: video.createdAt, updatedAt: video.updatedAt, publishedAt: video.publishedAt,
            customFields: video.customFields, tags: video.tags, cuePoints: video.cuePoints,
            poster: poster, posterSources: [ImageSource(src: poster)],
            thumbnail: thumbnail, thumbnailSources: [ImageSource(src: thumbnail)],
            link: video.link, offlineEnabled: video.offlineEnabled, adKeys: video.adKeys,
            textTracks: textTracks, sources: sources)
    }

    /// The sources of `video` in the real answer's order, each only when the account delivers
    /// that format: TS HLS, CMAF HLS v7, DASH (CMAF for clear videos), then the progressive MP4s
    /// of a clear video that plays its asset once (high first), which DRM videos never list.
    static func sources(_ video: CatalogVideo, account: Account, keySystems: [String: KeySystem]?, manifestExpiry: Date,
                        mediaExpiry: Date, links: Links) -> [VideoSource] {
        let formats = account.deliveryFormats
        var sources: [VideoSource] = []
        if formats.contains(.tsHLS) {
            sources.append(VideoSource(src: links.signed(Links.masterPath(video), expiresAt: manifestExpiry),
                                       extXVersion: "5", codecs: "avc1,mp4a", keySystems: keySystems))
        }
        // CMAF: clear, or FairPlay (HLS v7 cbcs with the same FairPlay keys; DASH cenc with ClearKey); HLSe is TS only.
        let cmaf = video.protection != .aes128
        if cmaf, formats.contains(.cmafHLS) {
            sources.append(VideoSource(src: links.signed(Links.cmafMasterPath(video), expiresAt: manifestExpiry),
                                       extXVersion: "7", codecs: Links.codecsSummary(video), keySystems: keySystems))
        }
        if cmaf, formats.contains(.dash) {
            let clearKey = video.protection == .fairplay
                ? [KeySystem.clearKey: KeySystem(licenseURL: links.signed(Links.clearKeyLicensePath(video), expiresAt: mediaExpiry))] : nil
            sources.append(VideoSource(type: VideoSource.dashType, src: links.signed(Links.dashManifestPath(video), expiresAt: manifestExpiry),
                                       codecs: Links.codecsSummary(video), profiles: account.cmafAddressing == .byteRanges ? VideoSource.dashOnDemandProfile : VideoSource.dashLiveProfile,
                                       keySystems: clearKey))
        }
        if video.protection == .clear, video.repeatCount == 1, formats.contains(.mp4) {
            for (name, rendition) in [("high", video.asset.video.last), ("low", video.asset.video.first)] {
                guard let rendition, let size = video.asset.progressiveSizes[name] else { continue }
                let milliseconds = video.durationMilliseconds
                sources.append(VideoSource(type: nil, src: links.signed(Links.progressivePath(video, name: name), expiresAt: mediaExpiry),
                                           averageBitrate: milliseconds > 0 ? Int(Double(size * 8) * 1000 / Double(milliseconds)) : 0,
                                           width: rendition.width, height: rendition.height, size: size,
                                           duration: milliseconds, container: "MP4", codec: "H264"))
            }
        }
        return sources
    }
}
