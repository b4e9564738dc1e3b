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
        let source = VideoSource(src: links.signed(Links.masterPath(video), expiresAt: manifestExpiry),
                                 extXVersion: "5", codecs: "avc1,mp4a", keySystems: keySystems)
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
        let textTracks = sideband + video.remoteTextTracks.map { track in
            TextTrack(id: track.id, accountID: video.accountID, src: track.src, sources: [SourceURL(src: track.src)], srclang: track.srclang,
                      label: track.label ?? track.srclang, kind: track.kind, mimeType: TextTrack.webVTT, isDefault: track.isDefault, assetID: nil)
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
            textTracks: textTracks, sources: [source])
    }
}
