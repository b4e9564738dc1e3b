import Foundation

/// A smart playlist's rule (reference §2.9): the videos whose tags its `search` names, in the
/// order its type says, at most `limit`. One rule for the Playback API (playable videos) and the
/// CMS API (every video of the account).
struct SmartPlaylist: Sendable {
    /// The smart types and the search order each stands for.
    static let orders: [String: String] = [
        "ACTIVATED_OLDEST_TO_NEWEST": "published_at", "ACTIVATED_NEWEST_TO_OLDEST": "-published_at",
        "ALPHABETICAL": "name", "PLAYS_TOTAL": "-plays_total", "PLAYS_TRAILING_WEEK": "-plays_trailing_week",
        "START_DATE_OLDEST_TO_NEWEST": "schedule.starts_at", "START_DATE_NEWEST_TO_OLDEST": "-schedule.starts_at",
    ]
    /// The most videos a smart playlist holds.
    static let maximumLimit = 1000

    var sort: CatalogSort
    /// The tags, lower-cased; empty: every video.
    var tags: [String]
    /// Whether a video needs every tag (`+tags:a,b`) or any (`tags:a,b`).
    var requiresAll: Bool
    var limit: Int

    /// The rule of a playlist of `type` with `search` (`tags:a,b` or `+tags:a,b`; nil or empty:
    /// every video); nil when the type is not a smart one or the search is not a v1 tag search.
    init?(type: String, search: String?, limit: Int?) {
        guard let order = SmartPlaylist.orders[type], let sort = try? CatalogSort(order) else { return nil }
        self.sort = sort
        self.limit = min(max(limit ?? 100, 1), SmartPlaylist.maximumLimit)
        var text = (search ?? "").trimmingCharacters(in: .whitespaces)
        requiresAll = text.hasPrefix("+")
        if requiresAll { text.removeFirst() }
        guard !text.isEmpty else {
            guard !requiresAll else { return nil }
            tags = []
            return
        }
        guard text.lowercased().hasPrefix("tags:") else { return nil }
        let list = text.dropFirst(5).split(separator: ",", omittingEmptySubsequences: false).map { $0.lowercased() }
        guard !list.isEmpty, !list.contains(where: \.isEmpty) else { return nil }
        tags = list
    }

    /// The playlist's videos among `videos` (catalog order), sorted and cut to its limit.
    func videos<Video: SearchableVideo>(among videos: [Video], plays: () throws -> CatalogSort.Plays) rethrows -> [Video] {
        let matching = videos.filter { video in
            guard !tags.isEmpty else { return true }
            let own = Set(video.tags.map { $0.lowercased() })
            return requiresAll ? tags.allSatisfy(own.contains) : tags.contains(where: own.contains)
        }
        return Array(sort.sorted(matching, plays: sort.needsPlays ? try plays() : CatalogSort.Plays()).prefix(limit))
    }
}
