import Foundation

/// What search (`CatalogSearch`) and sorting (`CatalogSort`) read of a video: the one search
/// implementation behind the Playback API (its playable videos) and the CMS API (every video
/// of the account, complete or not).
protocol SearchableVideo {
    var id: String { get }
    var name: String { get }
    var description: String? { get }
    var longDescription: String? { get }
    var referenceID: String? { get }
    var tags: [String] { get }
    var customFields: [String: String] { get }
    var createdAt: Date { get }
    var updatedAt: Date { get }
    var publishedAt: Date { get }
    var state: VideoState { get }
    /// Whether it has renditions.
    var isComplete: Bool { get }
    var startsAt: Date? { get }
    var endsAt: Date? { get }
    /// The duration in milliseconds (0 before it has media).
    var sortDuration: Int { get }
}

extension SearchableVideo {
    /// `VideoAvailability` at `now`.
    func isPlayable(at now: Date) -> Bool {
        VideoAvailability.isPlayable(state: state, complete: isComplete, starts: startsAt, ends: endsAt, now: now)
    }
}

extension CatalogVideo: SearchableVideo {
    var isComplete: Bool { true }
    var sortDuration: Int { durationMilliseconds }
}
