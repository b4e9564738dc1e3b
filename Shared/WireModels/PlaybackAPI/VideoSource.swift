import Foundation

/// One entry of a video's `sources`: a playable rendition, for this project an HLS master playlist.
///
/// Nil members are omitted from the JSON, as the real API leaves out what does not apply.
public struct VideoSource: Codable, Sendable, Equatable {
    /// The `type` of an HLS source.
    public static let hlsType = "application/x-mpegURL"

    /// MIME type, e.g. `application/x-mpegURL`.
    public var type: String
    /// Absolute URL of the manifest, carrying its `fastly_token`.
    public var src: String
    /// The HLS version as a **string** ("4", "5", "7").
    public var extXVersion: String?
    /// Codec summary, e.g. `"avc1,mp4a"`.
    public var codecs: String?
    /// DRM systems keyed by system id (`KeySystem.fairPlay`).
    public var keySystems: [String: KeySystem]?

    /// Creates a source; optionals default to nil.
    public init(
        type: String = VideoSource.hlsType, src: String,
        extXVersion: String? = nil, codecs: String? = nil, keySystems: [String: KeySystem]? = nil
    ) {
        self.type = type
        self.src = src
        self.extXVersion = extXVersion
        self.codecs = codecs
        self.keySystems = keySystems
    }

    /// Whether this source is an HLS manifest.
    public var isHLS: Bool { type.caseInsensitiveCompare(VideoSource.hlsType) == .orderedSame }

    /// The FairPlay entry of `key_systems`, if any.
    public var fairPlay: KeySystem? { keySystems?[KeySystem.fairPlay] }

    enum CodingKeys: String, CodingKey {
        case type, src, codecs
        case extXVersion = "ext_x_version"
        case keySystems = "key_systems"
    }
}

/// The URLs a player needs for one DRM system.
public struct KeySystem: Codable, Sendable, Equatable {
    /// Key-system id of FairPlay Streaming.
    public static let fairPlay = "com.apple.fps.1_0"

    /// Where to POST the SPC for a CKC (carries a `fastly_token`).
    public var keyRequestURL: String?
    /// Where to GET the application certificate.
    public var certificateURL: String?

    /// Creates a key-system entry.
    public init(keyRequestURL: String? = nil, certificateURL: String? = nil) {
        self.keyRequestURL = keyRequestURL
        self.certificateURL = certificateURL
    }

    enum CodingKeys: String, CodingKey {
        case keyRequestURL = "key_request_url"
        case certificateURL = "certificate_url"
    }
}
