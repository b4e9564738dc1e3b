import Foundation
import WireModels

/// The Playback API's search: `q` in the CMS search syntax (v1, a subset), `sort`, paging.
///
/// `q` is a list of terms separated by spaces. A term is `word`, `"a phrase"` or
/// `field:value`; a leading `+` makes a term required, `-` excludes it. Without any `+`
/// term, a video matches when it matches at least one plain term. Fields: `name`, `text`
/// (name and both descriptions), `description`, `tags` (`tag`), `reference_id`, `id`,
/// `custom_fields` (any custom field), a custom field's name, and the exact fields `state`
/// (ACTIVE, INACTIVE), `complete` (has media) and `playable` (`VideoAvailability` at `now`). Matching is
/// case-insensitive substring matching, except tags and ids, which match whole values;
/// `tags:a,b` matches either tag, `tags:"a,b"` the one tag `a,b`.
///
/// Date fields (`created_at`, `updated_at`, `published_at`, and `schedule.starts_at`/`ends_at`,
/// which an unscheduled video does not have, so they match none) take a `SearchDateRange`
/// (`created_at:2018-01-01..2018-02-01`, `updated_at:-2days`, `published_at:..NOW`), `NOW` being
/// the backend clock's.
///
/// A query that does not parse (an unclosed quote, a field without a value, a lone `+`, an
/// empty tag in a list such as a trailing comma, a date field's value that is no date range)
/// is 400 `ILLEGAL_QUERY`; a value an exact
/// field cannot take (`state:SOON`) is 400 `INVALID_SEARCH`.
struct CatalogSearch: Sendable {
    enum Requirement: Sendable { case optional, required, excluded }

    struct Term: Sendable {
        var field: String?
        var value: String
        var requirement: Requirement
        /// Whether any part of the value was quoted (a quoted comma is part of a tag).
        var quoted = false
        /// The range of a date field's term.
        var dates: SearchDateRange?
    }

    var terms: [Term]
    /// What `NOW`, relative dates and `playable:` are read against.
    var now: Date

    /// Parses `q`; `now` is what `NOW` and relative dates count from.
    init(query: String, now: Date) throws(HTTPError) {
        terms = []
        self.now = now
        var index = query.startIndex
        func illegal(_ why: String) -> HTTPError {
            HTTPError(400, PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.illegalQuery, "Illegal query q=\(query): \(why)")
        }
        while index < query.endIndex {
            while index < query.endIndex, query[index] == " " { index = query.index(after: index) }
            guard index < query.endIndex else { break }
            var requirement = Requirement.optional
            if query[index] == "+" || query[index] == "-" {
                requirement = query[index] == "+" ? .required : .excluded
                index = query.index(after: index)
            }
            var field: String?
            var value = ""
            var inQuotes = false, quoted = false
            while index < query.endIndex {
                let c = query[index]
                if c == "\"" { inQuotes.toggle(); quoted = true }
                else if c == " " && !inQuotes { break }
                else if c == ":" && !inQuotes && field == nil && !quoted { field = value.lowercased(); value = "" }
                else { value.append(c) }
                index = query.index(after: index)
            }
            if inQuotes { throw illegal("unclosed quote") }
            if field?.isEmpty == true { throw illegal("a ':' without a field name") }
            if value.isEmpty {
                throw illegal(field.map { "no value for field \($0)" } ?? (quoted ? "an empty phrase" : "a '+' or '-' without a term"))
            }
            var term = Term(field: field, value: value.lowercased(), requirement: requirement, quoted: quoted)
            if let field, CatalogSearch.dateFields.contains(field) {
                guard let dates = SearchDateRange(value, now: now) else {
                    throw illegal("'\(value)' is not a date range for \(field) (2018-01-01..2018-02-01, 2012-08-01T00:00:00Z.., -2days, ..NOW)")
                }
                term.dates = dates
            }
            if term.isTagList, term.value.split(separator: ",", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
                throw illegal("an empty tag in '\(value)' (a leading, trailing or doubled comma)")
            }
            if let allowed = CatalogSearch.exactFields[field ?? ""], !allowed.contains(term.value) {
                throw HTTPError(400, PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.invalidSearch,
                                "Invalid search q=\(query): \(field ?? "") must be one of \(allowed.joined(separator: ", "))")
            }
            terms.append(term)
        }
    }

    /// The exact fields and the values they take (lower-cased).
    static let exactFields = [
        "state": ["active", "inactive", "pending", "deleted"],
        "complete": ["true", "false"],
        "playable": ["true", "false"],
    ]

    /// The fields that take a date range.
    static let dateFields: Set<String> = ["created_at", "updated_at", "published_at", "schedule.starts_at", "schedule.ends_at"]

    /// A date field's value of `video`; nil for a schedule end it does not have.
    private static func date(_ field: String, of video: some SearchableVideo) -> Date? {
        switch field {
        case "created_at": video.createdAt
        case "updated_at": video.updatedAt
        case "published_at": video.publishedAt
        case "schedule.starts_at": video.startsAt
        case "schedule.ends_at": video.endsAt
        default: nil
        }
    }

    /// Whether `video` satisfies the query. An empty query matches everything.
    func matches(_ video: some SearchableVideo) -> Bool {
        var anyOptional = false, matchedOptional = false
        for term in terms {
            let hit = matches(term, video)
            switch term.requirement {
            case .required where !hit: return false
            case .excluded where hit: return false
            case .optional:
                anyOptional = true
                matchedOptional = matchedOptional || hit
            default: break
            }
        }
        return !anyOptional || matchedOptional || terms.contains { $0.requirement == .required }
    }

    /// How well `video` matches: the number of (not excluded) terms it matches. The order of
    /// a search with `q` and no `sort` (relevance), most first.
    func relevance(_ video: some SearchableVideo) -> Int {
        terms.filter { $0.requirement != .excluded && matches($0, video) }.count
    }

    private func matches(_ term: Term, _ video: some SearchableVideo) -> Bool {
        if let dates = term.dates, let field = term.field { return dates.contains(CatalogSearch.date(field, of: video)) }
        let v = term.value
        switch term.field {
        case nil:
            return video.name.lowercased().contains(v) || (video.description?.lowercased().contains(v) ?? false)
                || video.tags.contains { $0.lowercased() == v }
        case "name": return video.name.lowercased().contains(v)
        case "text": return video.name.lowercased().contains(v) || (video.description?.lowercased().contains(v) ?? false)
            || (video.longDescription?.lowercased().contains(v) ?? false)
        case "description": return (video.description?.lowercased().contains(v) ?? false)
            || (video.longDescription?.lowercased().contains(v) ?? false)
        case "tags", "tag":
            let wanted = term.quoted ? [v] : v.split(separator: ",").map(String.init)
            return video.tags.contains { wanted.contains($0.lowercased()) }
        case "reference_id": return video.referenceID?.lowercased() == v
        case "id": return video.id == v
        case "state": return v == video.state.rawValue.lowercased()
        case "complete": return v == String(video.isComplete)
        case "playable": return v == String(video.isPlayable(at: now))
        case "custom_fields": return video.customFields.values.contains { $0.lowercased().contains(v) }
        case let field?:
            return video.customFields.first { $0.key.lowercased() == field }?.value.lowercased().contains(v) ?? false
        }
    }
}

extension CatalogSearch.Term {
    /// A `tags:` value that lists tags separated by commas (unquoted).
    var isTagList: Bool { (field == "tags" || field == "tag") && !quoted }
}
