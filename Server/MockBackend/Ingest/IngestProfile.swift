import Foundation

/// A rendition of an ingest profile's ladder: what Dynamic Ingest makes of a source.
struct IngestRendition: Sendable, Equatable {
    enum Kind: String, Sendable { case audio, video }
    /// `default/video450`, `default/audio64`.
    var id: String
    var kind: Kind
    /// Target bitrate in kbps.
    var kilobitsPerSecond: Int
    /// Video only: the frame for a 16:9 source (height kept, aspect preserved) and the H.264 profile.
    var width: Int?
    var height: Int?
    var h264Profile: String?
}

/// The standard ingest profiles the mock supports (Ingest Profiles API, reference §4): fixed
/// ladders of H.264 and AAC renditions in 2 s segments, with a poster and a thumbnail.
struct IngestProfile: Sendable {
    var id: String
    var name: String
    var displayName: String
    var description: String
    var renditions: [IngestRendition]
    /// When the standard profile was made and last changed (epoch ms, as the API writes them).
    var dateCreated: Int64
    var dateLastModified: Int64
    var version: Int

    static func audio(_ kbps: Int) -> IngestRendition { IngestRendition(id: "default/audio\(kbps)", kind: .audio, kilobitsPerSecond: kbps) }
    static func video(_ kbps: Int, _ width: Int, _ height: Int, _ profile: String) -> IngestRendition {
        IngestRendition(id: "default/video\(kbps)", kind: .video, kilobitsPerSecond: kbps, width: width, height: height, h264Profile: profile)
    }

    /// `multi-platform-standard-static`: the real service's fixed ladder (its id and renditions).
    static let standardStatic = IngestProfile(
        id: "6198c17bbbdc42a4bb60a41f", name: "multi-platform-standard-static", displayName: "Multiplatform Standard",
        description: "Deliver a wide range of content types across a variety of platforms on mobile and desktop.",
        renditions: [audio(64), audio(96), audio(128), video(450, 480, 270, "baseline"), video(700, 640, 360, "baseline"),
                     video(900, 640, 360, "main"), video(1200, 960, 540, "main"), video(1700, 960, 540, "main"),
                     video(2000, 1280, 720, "main")],
        dateCreated: 1495114240899, dateLastModified: 1510693542451, version: 4)

    /// `mock-fast-static`: the mock's own small ladder, for tests that ingest in seconds.
    static let fastStatic = IngestProfile(
        id: "6d6f636b66617374737461e1", name: "mock-fast-static", displayName: "Mock fast (tests)",
        description: "The mock's small ladder for fast tests: one audio rendition and two small video renditions.",
        renditions: [audio(64), video(450, 480, 270, "baseline"), video(700, 640, 360, "baseline")],
        dateCreated: 1798761600000, dateLastModified: 1798761600000, version: 1)

    /// Every standard profile, in the order the API lists them.
    static let standard = [standardStatic, fastStatic]
    /// The profile an account uses until its configuration names another (reference §4.1: the fixed ladder).
    static let systemDefault = standardStatic

    /// A profile by name or id (the API takes either).
    static func named(_ nameOrID: String) -> IngestProfile? {
        standard.first { $0.name == nameOrID || $0.id == nameOrID }
    }
}

/// An account's Ingest Profiles configuration (its default profile), kept in its catalog entry.
struct IngestConfiguration: Codable, Sendable, Equatable {
    var id: String
    var defaultProfileID: String
    var dateCreated: Int64
    var dateLastModified: Int64
    var version: Int64

    enum CodingKeys: String, CodingKey {
        case id, version
        case defaultProfileID = "default_profile_id", dateCreated = "date_created", dateLastModified = "date_last_modified"
    }
}
