import Foundation
public import WireModels

/// A video from the Playback API: its whole JSON (`properties`, unknown fields included)
/// and the typed view the SDK works with.
public struct PlaybackVideo: Sendable, Equatable {
    /// Every field exactly as the server sent it.
    public let properties: [String: JSONValue]
    /// The typed wire model.
    public let video: Video
    /// The service that found the video (base URL, account, policy key), when one did:
    /// downloads use it to fetch the video again when its URLs expire.
    public internal(set) var origin: PlaybackService.Origin?

    /// Decodes one video object; the typed view and the raw properties come from the same bytes.
    ///
    /// - Parameter json: The JSON bytes of one Playback API video object.
    /// - Throws: The decoding error when the bytes are not a video object.
    public init(json: [UInt8]) throws {
        let decoder = WireJSON.decoder()
        video = try decoder.decode(Video.self, from: Data(json))
        properties = try decoder.decode([String: JSONValue].self, from: Data(json))
    }

    init(video: Video, properties: [String: JSONValue], origin: PlaybackService.Origin? = nil) {
        self.video = video
        self.properties = properties
        self.origin = origin
    }

    /// The video id.
    public var id: String { video.id }
    /// The owning account.
    public var accountID: String { video.accountID }
    /// The display name.
    public var name: String { video.name }
    /// The reference id, if any.
    public var referenceID: String? { video.referenceID }
    /// Duration in seconds.
    public var duration: Double { Double(video.duration) / 1000 }
    /// Whether offline download is enabled for the video (`offline_enabled`).
    public var canBeDownloaded: Bool { video.offlineEnabled }
    /// Whether any source is protected with FairPlay.
    public var usesFairPlay: Bool { video.sources.contains { $0.fairPlay != nil } }
    /// The sources (HLS first as the server orders them).
    public var sources: [VideoSource] { video.sources }
    /// Sideband text tracks.
    public var textTracks: [TextTrack] { video.textTracks }
}

