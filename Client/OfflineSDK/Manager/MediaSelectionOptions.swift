import Foundation
import WireModels

/// A kind of media that media selection groups gather (the counterpart of
/// `AVMediaCharacteristic`). A struct, so characteristics can be added.
public struct MediaCharacteristic: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: String
    /// A characteristic by its name, e.g. `public.accessibility.describes-video`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Audio: the audio renditions.
    public static let audible = MediaCharacteristic(rawValue: "public.audible")
    /// Text to read: subtitle renditions and sideband text tracks.
    public static let legible = MediaCharacteristic(rawValue: "public.legible")

    public var description: String { rawValue }
}

/// One audio or subtitle option of a video (the counterpart of `AVMediaSelectionOption`).
public struct MediaSelectionOption: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Where the option comes from.
    public enum Source: String, Sendable, Hashable, Codable {
        /// An `EXT-X-MEDIA` rendition of the master playlist.
        case manifest
        /// A sideband text track of the video object (`text_tracks`), a WebVTT file of its own.
        case sideband
    }

    /// audio or subtitles.
    public var mediaType: String
    /// Its characteristics: `audible` or `legible`, plus any the playlist lists in `CHARACTERISTICS`.
    public var characteristics: [MediaCharacteristic]
    /// Its language (RFC 5646 tag), when known.
    public var languageTag: String?
    /// Its name (`NAME`, or the text track's label).
    public var displayName: String
    /// Whether the playlist marks it `DEFAULT=YES`.
    public var isDefault: Bool
    public var source: Source

    /// Creates an option.
    ///
    /// - Parameters:
    ///   - mediaType: `audio` or `subtitles`.
    ///   - characteristics: Its characteristics: ``MediaCharacteristic/audible`` or
    ///     ``MediaCharacteristic/legible``, plus any the playlist lists.
    ///   - languageTag: Its language (RFC 5646 tag), nil when not known.
    ///   - displayName: Its name.
    ///   - isDefault: Whether the playlist marks it `DEFAULT=YES`; false by default.
    ///   - source: Where it comes from; ``Source/manifest`` by default.
    public init(mediaType: String, characteristics: [MediaCharacteristic], languageTag: String?, displayName: String,
                isDefault: Bool = false, source: Source = .manifest) {
        self.mediaType = mediaType
        self.characteristics = characteristics
        self.languageTag = languageTag
        self.displayName = displayName
        self.isDefault = isDefault
        self.source = source
    }

    /// Whether the option has `characteristic`.
    ///
    /// - Parameter characteristic: The characteristic looked for.
    public func hasMediaCharacteristic(_ characteristic: MediaCharacteristic) -> Bool { characteristics.contains(characteristic) }

    public var description: String { "\(mediaType) \(languageTag ?? "-") (\(displayName), \(source.rawValue))" }
}

/// The options of one characteristic of a downloaded video (the counterpart of `AVMediaSelectionGroup`).
public struct MediaSelectionGroup: Sendable, Hashable {
    /// Every option, downloaded or not, in playlist order (sideband tracks last).
    public var options: [MediaSelectionOption]
    /// The option marked default, if any.
    public var defaultOption: MediaSelectionOption? { options.first(where: \.isDefault) }
    /// Whether playing with none of the options is allowed: true for all but `audible`.
    public var allowsEmptySelection: Bool

    /// Creates a group.
    ///
    /// - Parameters:
    ///   - options: Every option, in playlist order.
    ///   - allowsEmptySelection: Whether playing with none of the options is allowed.
    public init(options: [MediaSelectionOption], allowsEmptySelection: Bool) {
        self.options = options
        self.allowsEmptySelection = allowsEmptySelection
    }
}

/// The audio and subtitle options of a video, worked out at planning time and kept in the
/// package (`PackageLayout.mediaOptionsFile`, stored with the playlists).
enum MediaOptionCatalog {
    /// The variant's `AUDIO` and `SUBTITLES` renditions, then the video's sideband text tracks
    /// (one per language: the one a download would take). A subtitle language served both ways
    /// is listed twice, once per source; a download takes its sideband file.
    static func options(master: MasterPlaylist, variant: VariantStream, video: PlaybackVideo) -> [MediaSelectionOption] {
        var options: [MediaSelectionOption] = []
        let groups: [(String?, MediaType, String, MediaCharacteristic)] = [(variant.audio, .audio, "audio", .audible),
                                                                            (variant.subtitles, .subtitles, "subtitles", .legible)]
        for (group, type, name, characteristic) in groups {
            guard let group else { continue }
            for rendition in master.renditions(inGroup: group, type: type) where rendition.uri != nil {
                let listed = (rendition.otherAttributes["CHARACTERISTICS"] ?? "").split(separator: ",")
                    .map { MediaCharacteristic(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
                options.append(MediaSelectionOption(mediaType: name, characteristics: [characteristic] + listed.filter { $0 != characteristic },
                                                    languageTag: rendition.language, displayName: rendition.name,
                                                    isDefault: rendition.isDefault, source: .manifest))
            }
        }
        // The track a subtitle language would be downloaded from: the first with a file per language.
        for track in video.textTracks where !track.isThumbnailTrack && sidebandTrack(track.srclang, of: video)?.id == track.id {
            options.append(MediaSelectionOption(mediaType: "subtitles", characteristics: [.legible], languageTag: track.srclang,
                                                displayName: track.label.isEmpty ? track.srclang : track.label,
                                                isDefault: track.isDefault, source: .sideband))
        }
        return options
    }

    /// The sideband text track serving `language`, if the video has one.
    static func sidebandTrack(_ language: String, of video: PlaybackVideo) -> TextTrack? {
        video.textTracks.first { !$0.isThumbnailTrack && RenditionChooser.language($0.srclang, matches: language) && !$0.src.isEmpty }
    }

    static func encode(_ options: [MediaSelectionOption]) throws -> Data {
        try JSONEncoder().encode(options)
    }

    static func decode(_ data: Data) -> [MediaSelectionOption]? {
        try? JSONDecoder().decode([MediaSelectionOption].self, from: data)
    }
}
