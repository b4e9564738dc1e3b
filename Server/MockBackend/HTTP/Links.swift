import Crypto
import Foundation
import MicroHTTP
import WireModels

/// Builds every absolute URL the backend hands out, in the real services' shapes, and
/// signs and checks the `fastly_token` on the ones that carry it.
struct Links: Sendable {
    /// Scheme, host and port, without a trailing slash.
    let base: String
    private let key: URLToken.Key

    init(base: String, secret: SymmetricKey) {
        self.base = base
        key = URLToken.Key(secret: secret)
    }

    // MARK: Shapes (paths only; `url(_:)` and `signed(_:expiresAt:)` add the base)

    static func masterPath(_ video: CatalogVideo) -> String {
        "/manifest/v1/hls/v5/\(video.protection.rawValue)/\(video.accountID)/\(video.uuid)/\(segmentLabel(video))/master.m3u8"
    }

    static func renditionPath(_ video: CatalogVideo, _ rendition: RenditionRef) -> String {
        "/manifest/v1/hls/v5/\(video.protection.rawValue)/\(video.accountID)/\(video.uuid)/\(rendition.uuid)/\(segmentLabel(video))/rendition.m3u8"
    }

    static func segmentPath(_ video: CatalogVideo, _ rendition: RenditionRef, _ sequence: Int) -> String {
        let ext = rendition.kind == .subtitles ? "vtt" : "ts"
        return "/media/v1/hls/v5/\(video.protection.rawValue)/\(video.accountID)/\(video.uuid)/\(rendition.uuid)/\(sequence).\(ext)"
    }

    static func aes128KeyPath(_ video: CatalogVideo, keyID: String) -> String {
        "/license/v1/aes128/\(video.accountID)/\(video.uuid)/\(keyID)"
    }

    static func fairPlayLicensePath(_ video: CatalogVideo, keyID: String) -> String {
        "/license/v1/fairplay/\(video.accountID)/\(video.uuid)/\(keyID)"
    }

    /// The W3C ClearKey license server of a DRM video's DASH source (its cenc key).
    static func clearKeyLicensePath(_ video: CatalogVideo) -> String {
        "/license/v1/clearkey/\(video.accountID)/\(video.uuid)"
    }

    static func certificatePath(accountID: String) -> String { "/license/v1/fairplay_app_cert/\(accountID)" }

    /// The raw SAMPLE-AES key of a FairPlay video, only with `plainSampleAESKeysForTesting`.
    static func sampleAESTestKeyPath(_ video: CatalogVideo, keyID: String) -> String {
        "/license/v1/sample-aes-test-key/\(video.accountID)/\(video.uuid)/\(keyID)"
    }

    static func imagePath(_ video: CatalogVideo, width: Int, height: Int) -> String {
        "/image/v1/\(video.accountID)/\(video.uuid)/\(width)x\(height)/image.jpg"
    }

    static func textTrackPath(_ video: CatalogVideo, language: String) -> String {
        "/text/v1/\(video.accountID)/\(video.uuid)/\(language)/subtitles.vtt"
    }

    // MARK: Dynamic Delivery v2: CMAF HLS v7 and DASH, one set of CMAF segments per rendition

    /// The codecs label of v2 manifest paths: `avc1_mp4a`, or `avc1_hvc1_mp4a` with an HEVC ladder
    /// ("HEVC sources contain the string hvc in the URL", as Brightcove's Android guide says).
    static func codecsLabel(_ video: CatalogVideo) -> String { video.hevcRenditions.isEmpty ? "avc1_mp4a" : "avc1_hvc1_mp4a" }

    /// The v2 sources' `codecs`: `avc1,mp4a` or `avc1,hvc1,mp4a`.
    static func codecsSummary(_ video: CatalogVideo) -> String { video.hevcRenditions.isEmpty ? "avc1,mp4a" : "avc1,hvc1,mp4a" }

    static func cmafMasterPath(_ video: CatalogVideo) -> String {
        "/manifest/v2/hls/v7/\(video.protection.rawValue)/\(codecsLabel(video))/\(video.accountID)/\(video.uuid)/\(segmentLabel(video))/master.m3u8"
    }

    static func cmafRenditionPath(_ video: CatalogVideo, _ rendition: RenditionRef) -> String {
        "/manifest/v2/hls/v7/\(video.protection.rawValue)/\(codecsLabel(video))/\(video.accountID)/\(video.uuid)/\(rendition.uuid)/\(segmentLabel(video))/rendition.m3u8"
    }

    /// DASH's path segment for a protection: `clear`, or `bccenc` for DRM (as Brightcove's).
    static func dashProtection(_ video: CatalogVideo) -> String { video.protection == .clear ? "clear" : "bccenc" }

    static func dashManifestPath(_ video: CatalogVideo) -> String {
        "/manifest/v2/dash/live-baseurl/\(dashProtection(video))/\(codecsLabel(video))/\(video.accountID)/\(video.uuid)/\(segmentLabel(video))/manifest.mpd"
    }

    /// The folder of a video's CMAF media for one encryption (`clear`, `cbcs` for HLS, `cenc`
    /// for DASH); each rendition's files are under `{rendition uuid}/`: `init.mp4`,
    /// `{number}.m4s` and, for text, `{number}.vtt`.
    static func cmafMediaPrefix(_ video: CatalogVideo, scheme: String) -> String {
        "/media/v2/cmaf/\(scheme)/\(video.accountID)/\(video.uuid)/"
    }

    static func cmafInitPath(_ video: CatalogVideo, _ rendition: RenditionRef, scheme: String) -> String {
        cmafMediaPrefix(video, scheme: scheme) + "\(rendition.uuid)/init.mp4"
    }

    /// A rendition's byte-range form (`SingleTrackFile`).
    static func cmafSingleFilePath(_ video: CatalogVideo, _ rendition: RenditionRef, scheme: String) -> String {
        cmafMediaPrefix(video, scheme: scheme) + "\(rendition.uuid)/\(SingleTrackFile.name)"
    }

    static func cmafSegmentPath(_ video: CatalogVideo, _ rendition: RenditionRef, _ number: Int, scheme: String) -> String {
        cmafMediaPrefix(video, scheme: scheme) + "\(rendition.uuid)/\(number).\(rendition.kind == .subtitles ? "vtt" : "m4s")"
    }

    /// A progressive MP4 (`high` or `low`) of a clear video, as the Playback API's MP4 sources give it.
    static func progressivePath(_ video: CatalogVideo, name: String) -> String {
        "/media/v1/pmp4/static/clear/\(video.accountID)/\(video.uuid)/\(name).mp4"
    }

    /// The thumbnail track's WebVTT (signed, as Brightcove's `thumbnail/v1/…/thumbnail.webvtt`).
    static func thumbnailTrackPath(_ video: CatalogVideo) -> String {
        "/thumbnail/v1/\(video.accountID)/\(video.uuid)/\(StableID.uuid("thumbnails:\(video.id)"))/thumbnail.webvtt"
    }

    /// A sprite of the thumbnail track, numbered from 1 (public, like posters).
    static func spritePath(_ video: CatalogVideo, _ track: ThumbnailTrack, number: Int) -> String {
        "/image/v1/sprite/\(video.accountID)/\(video.uuid)/\(spriteIntervalLabel(track))/thumbnails/\(track.layout)/tile_\(number).jpg"
    }

    /// "2s": a thumbnail track's tile interval in sprite paths.
    static func spriteIntervalLabel(_ track: ThumbnailTrack) -> String {
        let interval = track.thumbnails.interval
        return interval == interval.rounded() ? "\(Int(interval))s" : "\(interval)s"
    }

    /// The HLS v7 image playlist of the thumbnail track's sprites.
    static func imagePlaylistPath(_ video: CatalogVideo) -> String {
        "/manifest/v2/hls/v7/\(video.protection.rawValue)/\(codecsLabel(video))/\(video.accountID)/\(video.uuid)/thumbnails/\(segmentLabel(video))/images.m3u8"
    }

    /// "2s": the segment duration label in manifest paths.
    static func segmentLabel(_ video: CatalogVideo) -> String { "\(Int(video.asset.segmentDuration.rounded()))s" }

    // MARK: URLs

    /// An absolute URL for `path`, unsigned.
    func url(_ path: String) -> String { base + path }

    /// An absolute URL for `path` with a `fastly_token` valid until `expiresAt`.
    func signed(_ path: String, expiresAt: Date) -> String {
        base + path + "?fastly_token=" + URLToken.percentEncode(key.make(path: path, expiresAt: expiresAt))
    }

    /// A `fastly_token` (percent-encoded) for every path under `prefix`, valid until `expiresAt`.
    func prefixToken(_ prefix: String, expiresAt: Date) -> String {
        URLToken.percentEncode(key.make(prefix: prefix, expiresAt: expiresAt))
    }

    /// Checks the request's `fastly_token` against its path; a 403 when it is missing or not valid.
    func verify(_ request: HTTPRequest, now: Date) throws(HTTPError) {
        guard let token = request.queryValue("fastly_token"), !token.isEmpty else {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenRequired,
                            "URL has no fastly_token; fetch the video from the Playback API for signed URLs")
        }
        do throws(URLTokenError) {
            try key.verify(token, path: request.path, now: now)
        } catch where error.code == .expired {
            let expiry = error.expiry.map(WireDate.string(from:)) ?? "?"
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, "TOKEN_EXPIRED",
                            "URL token expired at \(expiry); fetch the video again for fresh URLs")
        } catch where error.code == .forged {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenValidation,
                            "URL token does not match this URL")
        } catch {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.tokenValidation,
                            "URL token is malformed")
        }
    }

    /// When tokens issued now expire: `ttl` from the start of the current time bucket, so
    /// responses built within one bucket are identical and can be cached.
    static func expiry(now: Date, ttl: TimeInterval) -> Date {
        let bucket = cacheBucket(ttl: ttl)
        return Date(timeIntervalSince1970: (now.timeIntervalSince1970 / bucket).rounded(.down) * bucket + ttl)
    }

    /// When the time bucket of `now` ends: after it, tokens are issued with a later expiry.
    static func bucketEnd(now: Date, ttl: TimeInterval) -> Date {
        let bucket = cacheBucket(ttl: ttl)
        return Date(timeIntervalSince1970: ((now.timeIntervalSince1970 / bucket).rounded(.down) + 1) * bucket)
    }

    /// The bucket length for `ttl`: a tenth of it, between 1 s and 60 s.
    static func cacheBucket(ttl: TimeInterval) -> TimeInterval { max(1, min(60, (ttl / 10).rounded(.down))) }
}
