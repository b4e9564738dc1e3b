import Foundation
import WireModels

/// The `sort` of a search: every field the Playback API documents, `-` for descending.
///
/// Where the mock has no data of its own it says what stands in (README, "Search"):
/// - `schedule.starts_at`/`schedule_starts_at`, `schedule.ends_at`/`schedule_ends_at`: no
///   mock video has a schedule (all are always in it), so all are equal;
/// - `state`: every mock video is `ACTIVE`, so all are equal;
/// - `plays_total`, `plays_trailing_week`: the `play_started` events the analytics collector
///   (`POST /tracker`) holds for the video, all of them or those whose `time` is within the
///   7 days before the mock's clock.
///
/// Equal values keep the order the videos came in (the default order: `-updated_at`).
struct CatalogSort: Sendable {
    /// The field names `sort` takes (both spellings of the schedule fields).
    static let fields = ["name", "reference_id", "created_at", "published_at", "updated_at",
                         "schedule.starts_at", "schedule_starts_at", "schedule.ends_at", "schedule_ends_at",
                         "state", "plays_total", "plays_trailing_week", "duration"]

    /// The order without `sort` and without `q`.
    static let defaultOrder = CatalogSort(field: "updated_at", descending: true)

    var field: String
    var descending: Bool

    /// Whether sorting needs play counts (so the caller reads the analytics events first).
    var needsPlays: Bool { field == "plays_total" || field == "plays_trailing_week" }

    /// Parses `sort`; an unknown field is 400 `INVALID_SORT`.
    init(_ text: String) throws(HTTPError) {
        descending = text.hasPrefix("-")
        field = descending ? String(text.dropFirst()) : text
        guard CatalogSort.fields.contains(field) else {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.invalidSort,
                            "attempted to sort by invalid property: '\(field)'; use one of \(CatalogSort.fields.joined(separator: ", ")), with '-' for descending")
        }
    }

    private init(field: String, descending: Bool) {
        self.field = field
        self.descending = descending
    }

    /// Play counts of videos by id: all, and within the trailing week.
    struct Plays: Sendable {
        var total: [String: Int] = [:]
        var trailingWeek: [String: Int] = [:]

        /// Counts `play_started` events per video; `now` is the mock's clock.
        init(events: [TrackerEvent], now: Date) {
            let weekAgo = now.addingTimeInterval(-7 * 86_400)
            for event in events where event.event == "play_started" {
                total[event.videoID, default: 0] += 1
                if event.time > weekAgo && event.time <= now { trailingWeek[event.videoID, default: 0] += 1 }
            }
        }

        init() {}
    }

    /// `videos` in this order; equal values keep their order.
    func sorted(_ videos: [CatalogVideo], plays: Plays = Plays()) -> [CatalogVideo] {
        func less(_ a: CatalogVideo, _ b: CatalogVideo) -> Bool {
            switch field {
            case "name": a.name.lowercased() < b.name.lowercased()
            case "reference_id": (a.referenceID ?? "") < (b.referenceID ?? "")
            case "created_at": a.createdAt < b.createdAt
            case "updated_at": a.updatedAt < b.updatedAt
            case "published_at": a.publishedAt < b.publishedAt
            case "duration": a.durationMilliseconds < b.durationMilliseconds
            case "plays_total": plays.total[a.id, default: 0] < plays.total[b.id, default: 0]
            case "plays_trailing_week": plays.trailingWeek[a.id, default: 0] < plays.trailingWeek[b.id, default: 0]
            default: false  // schedule and state: the same for every mock video
            }
        }
        return videos.enumerated().sorted { x, y in
            if less(x.element, y.element) { return !descending }
            if less(y.element, x.element) { return descending }
            return x.offset < y.offset
        }.map(\.element)
    }
}
