import Foundation

/// One entry of a video's `sources`: an HLS master playlist (MPEG-TS, or CMAF for `ext_x_version`
/// "7"), a DASH MPD, or a progressive MP4 (no `type`; `container` "MP4" with its size and bit rate),
/// in the order the Playback API lists them.
///
/// Nil members are omitted from the JSON, as the real API leaves out what does not apply.
public struct VideoSource: Codable, Sendable, Equatable {
    /// The `type` of an HLS source.
    public static let hlsType = "application/x-mpegURL"
    /// The `type` of a DASH source.
    public static let dashType = "application/dash+xml"
    /// The `profiles` of a Dynamic Delivery DASH source.
    public static let dashLiveProfile = "urn:mpeg:dash:profile:isoff-live:2011"
    /// The `profiles` of a DASH source addressed by byte ranges (`SegmentBase`).
    public static let dashOnDemandProfile = "urn:mpeg:dash:profile:isoff-on-demand:2011"

    /// MIME type, e.g. `application/x-mpegURL`; nil for a progressive MP4 (the real API gives none).
    public var type: String?
    /// Absolute URL of the manifest or file, carrying its token.
    public var src: String
    /// The HLS version as a **string** ("4", "5", "7").
    public var extXVersion: String?
    /// Codec summary, e.g. `"avc1,mp4a"`.
    public var codecs: String?
    /// DASH only: the MPD's profiles.
    public var profiles: String?
    /// DRM systems keyed by system id (`KeySystem.fairPlay`, `KeySystem.clearKey`).
    public var keySystems: [String: KeySystem]?
    /// Progressive MP4 only: bits per second, picture size, bytes, milliseconds, "MP4", "H264".
    public var averageBitrate: Int?
    public var width: Int?
    public var height: Int?
    public var size: Int?
    public var duration: Int?
    public var container: String?
    public var codec: String?

    /// Creates a source; optionals default to nil.
    public init(
        type: String? = VideoSource.hlsType, src: String,
        extXVersion: String? = nil, codecs: String? = nil, profiles: String? = nil, keySystems: [String: KeySystem]? = nil,
        averageBitrate: Int? = nil, width: Int? = nil, height: Int? = nil, size: Int? = nil, duration: Int? = nil,
        container: String? = nil, codec: String? = nil
    ) {
        self.type = type
        self.src = src
        self.extXVersion = extXVersion
        self.codecs = codecs
        self.profiles = profiles
        self.keySystems = keySystems
        self.averageBitrate = averageBitrate
        self.width = width
        self.height = height
        self.size = size
        self.duration = duration
        self.container = container
        self.codec = codec
    }

    /// Whether this source is an HLS manifest.
    public var isHLS: Bool { type?.caseInsensitiveCompare(VideoSource.hlsType) == .orderedSame }

    /// Whether this source is a DASH MPD.
    public var isDASH: Bool { type?.caseInsensitiveCompare(VideoSource.dashType) == .orderedSame }

    /// The FairPlay entry of `key_systems`, if any.
    public var fairPlay: KeySystem? { keySystems?[KeySystem.fairPlay] }

    enum CodingKeys: String, CodingKey {
        case type, src, codecs, profiles, width, height, size, duration, container, codec
        case extXVersion = "ext_x_version"
        case keySystems = "key_systems"
        case averageBitrate = "avg_bitrate"
    }
}

/// The URLs a player needs for one DRM system.
public struct KeySystem: Codable, Sendable, Equatable {
    /// Key-system id of FairPlay Streaming.
    public static let fairPlay = "com.apple.fps.1_0"
    /// Key-system id of W3C Clear Key (EME), a DRM video's DASH source on the mock.
    public static let clearKey = "org.w3.clearkey"

    /// Where to POST the SPC for a CKC (carries a `fastly_token`).
    public var keyRequestURL: String?
    /// Where to GET the application certificate.
    public var certificateURL: String?
    /// Where to POST a license request (Widevine, PlayReady and Clear Key entries).
    public var licenseURL: String?

    /// Creates a key-system entry.
    public init(keyRequestURL: String? = nil, certificateURL: String? = nil, licenseURL: String? = nil) {
        self.keyRequestURL = keyRequestURL
        self.certificateURL = certificateURL
        self.licenseURL = licenseURL
    }

    enum CodingKeys: String, CodingKey {
        case keyRequestURL = "key_request_url"
        case certificateURL = "certificate_url"
        case licenseURL = "license_url"
    }
}
