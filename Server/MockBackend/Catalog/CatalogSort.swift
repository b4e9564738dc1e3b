import Foundation
import WireModels

/// The `sort` of a search: every field the Playback API documents, `-` for descending.
///
/// `schedule.starts_at`/`schedule_starts_at` put unscheduled videos (no start) first,
/// `schedule.ends_at`/`schedule_ends_at` put videos that never end last; `state` is ACTIVE before
/// INACTIVE. Where the mock has no data of its own it says what stands in (README, "Search"):
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

    /// The order of a search's `matches` (which came in catalog order): newest `updated_at` first,
    /// then the `sort` asked, or relevance when there is a `q` and no `sort` (most terms matched
    /// first). `plays` is read only when the sort needs play counts.
    static func order<Video: SearchableVideo>(_ matches: [Video], search: CatalogSearch, sort: CatalogSort?,
                                              plays: () throws -> Plays) rethrows -> [Video] {
        let newestFirst = defaultOrder.sorted(matches)
        if let sort { return sort.sorted(newestFirst, plays: sort.needsPlays ? try plays() : Plays()) }
        guard !search.terms.isEmpty else { return newestFirst }
        return newestFirst.enumerated().map { ($0.element, search.relevance($0.element), $0.offset) }
            .sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.2 < $1.2 }.map(\.0)
    }

    /// `videos` in this order; equal values keep their order.
    func sorted<Video: SearchableVideo>(_ videos: [Video], plays: Plays = Plays()) -> [Video] {
        func less(_ a: Video, _ b: Video) -> Bool {
            switch field {
            case "name": a.name.lowercased() < b.name.lowercased()
            case "reference_id": (a.referenceID ?? "") < (b.referenceID ?? "")
            case "created_at": a.createdAt < b.createdAt
            case "updated_at": a.updatedAt < b.updatedAt
            case "published_at": a.publishedAt < b.publishedAt
            case "duration": a.sortDuration < b.sortDuration
            case "schedule.starts_at", "schedule_starts_at": (a.startsAt ?? .distantPast) < (b.startsAt ?? .distantPast)
            case "schedule.ends_at", "schedule_ends_at": (a.endsAt ?? .distantFuture) < (b.endsAt ?? .distantFuture)
            case "state": a.state.rawValue < b.state.rawValue
            case "plays_total": plays.total[a.id, default: 0] < plays.total[b.id, default: 0]
            case "plays_trailing_week": plays.trailingWeek[a.id, default: 0] < plays.trailingWeek[b.id, default: 0]
            default: false
            }
        }
        return videos.enumerated().sorted { x, y in
            if less(x.element, y.element) { return !descending }
            if less(y.element, x.element) { return descending }
            return x.offset < y.offset
        }.map(\.element)
    }
}
