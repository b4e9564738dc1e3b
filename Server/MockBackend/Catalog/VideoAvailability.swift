import Foundation
import WireModels

/// A video's CMS state: whether it may play at all (a schedule only narrows an ACTIVE video).
/// Raw values are stored in catalog edits and written on the wire: never change them.
enum VideoState: String, Codable, Sendable, CaseIterable {
    case active = "ACTIVE"
    case inactive = "INACTIVE"
}

/// When a video may play: from `starts_at` (inclusive) until `ends_at` (exclusive); either may
/// be open. As stored in catalog edits and written by the CMS API: ISO-8601 UTC strings.
struct VideoSchedule: Codable, Sendable, Equatable {
    var startsAt: String?
    var endsAt: String?

    enum CodingKeys: String, CodingKey {
        case startsAt = "starts_at", endsAt = "ends_at"
    }

    /// Both ends as dates; nil for an end that is open or not a date.
    var window: (starts: Date?, ends: Date?) { (startsAt.flatMap(WireDate.date(from:)), endsAt.flatMap(WireDate.date(from:))) }
}

/// The CMS API's `geo`: which countries may play the video. Stored and shown; the mock has no
/// notion of a viewer's country, so it restricts nothing.
struct VideoGeo: Codable, Sendable, Equatable {
    var countries: [String]
    var excludeCountries: Bool
    var restricted: Bool

    enum CodingKeys: String, CodingKey {
        case countries, restricted
        case excludeCountries = "exclude_countries"
    }
}

/// Whether a video plays now: the one rule the Playback API (and search's `playable:`) applies,
/// as the real service documents it: ACTIVE, complete (it has renditions), and inside its
/// schedule on the mock's clock.
enum VideoAvailability {
    static func isPlayable(state: VideoState, complete: Bool, starts: Date?, ends: Date?, now: Date) -> Bool {
        guard state == .active, complete else { return false }
        if let starts, now < starts { return false }
        if let ends, now >= ends { return false }
        return true
    }
}

/// A text track the CMS API added to a video by URL (`text_tracks` in a PATCH): listed in the
/// CMS and Playback APIs' `text_tracks` after the asset's own.
struct RemoteTextTrack: Codable, Sendable, Equatable {
    var id: String
    var src: String
    var srclang: String
    var label: String?
    var kind: String
    var isDefault: Bool

    enum CodingKeys: String, CodingKey {
        case id, src, srclang, label, kind
        case isDefault = "default"
    }

    /// What makes the track unusable, or nil: the rule every way a track enters the catalog
    /// (the catalog file, the admin API, the CMS API) is held to.
    var problem: String? {
        if id.isEmpty { return "id: empty" }
        guard let url = URL(string: src), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil, src.count <= 2048 else {
            return "src: an http or https URL of a WebVTT file"
        }
        guard (1...35).contains(srclang.count) else { return "srclang: a BCP-47 language" }
        guard CatalogVideo.textTrackKinds.contains(kind) else { return "kind: one of \(CatalogVideo.textTrackKinds.joined(separator: ", "))" }
        if let label, label.count > 255 { return "label: at most 255 characters" }
        return nil
    }
}
