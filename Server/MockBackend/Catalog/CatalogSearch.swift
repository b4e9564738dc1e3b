import Foundation
import WireModels

/// The Playback API's search: `q` in the CMS search syntax (a subset), `sort`, paging.
///
/// `q` is a list of terms separated by spaces. A term is `word`, `"a phrase"` or
/// `field:value` (fields: name, description, tags, tag, reference_id, id, and
/// custom field names); a leading `+` makes a term required, `-` excludes it. Without any
/// `+` term, a video matches when it matches at least one plain term. Matching is
/// case-insensitive substring matching, except tags and ids, which match whole values.
struct CatalogSearch: Sendable {
    enum Requirement: Sendable { case optional, required, excluded }

    struct Term: Sendable {
        var field: String?
        var value: String
        var requirement: Requirement
    }

    static let sortFields = ["name", "reference_id", "created_at", "updated_at", "published_at", "duration", "plays_total"]

    var terms: [Term]

    /// Parses `q`; an unterminated quote or an empty field value is `INVALID_SEARCH`.
    init(query: String) throws(HTTPError) {
        terms = []
        var index = query.startIndex
        func fail(_ why: String) -> HTTPError {
            HTTPError(400, PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.invalidSearch, "Invalid search q=\(query): \(why)")
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
            var inQuotes = false
            while index < query.endIndex {
                let c = query[index]
                if c == "\"" { inQuotes.toggle() } else if c == " " && !inQuotes { break }
                else if c == ":" && !inQuotes && field == nil { field = value.lowercased(); value = "" }
                else { value.append(c) }
                index = query.index(after: index)
            }
            if inQuotes { throw fail("unterminated quote") }
            if value.isEmpty { throw fail(field.map { "no value for field \($0)" } ?? "empty term") }
            terms.append(Term(field: field, value: value.lowercased(), requirement: requirement))
        }
    }

    /// Whether `video` satisfies the query. An empty query matches everything.
    func matches(_ video: CatalogVideo) -> Bool {
        var anyOptional = false, matchedOptional = false
        for term in terms {
            let hit = CatalogSearch.matches(term, video)
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

    private static func matches(_ term: Term, _ video: CatalogVideo) -> Bool {
        let v = term.value
        switch term.field {
        case nil:
            return video.name.lowercased().contains(v) || (video.description?.lowercased().contains(v) ?? false)
                || video.tags.contains { $0.lowercased() == v }
        case "name": return video.name.lowercased().contains(v)
        case "description": return (video.description?.lowercased().contains(v) ?? false)
            || (video.longDescription?.lowercased().contains(v) ?? false)
        case "tags", "tag": return video.tags.contains { $0.lowercased() == v }
        case "reference_id": return video.referenceID?.lowercased() == v
        case "id": return video.id == v
        case let field?:
            return video.customFields.first { $0.key.lowercased() == field }?.value.lowercased().contains(v) ?? false
        }
    }

    /// Sorts by `sort` (`field` ascending or `-field` descending); ties keep catalog order.
    static func sort(_ videos: [CatalogVideo], by sort: String) throws(HTTPError) -> [CatalogVideo] {
        let descending = sort.hasPrefix("-")
        let field = descending ? String(sort.dropFirst()) : sort
        guard sortFields.contains(field) else {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.invalidSort,
                                "Invalid sort '\(sort)'; use one of \(sortFields.joined(separator: ", ")), with '-' for descending")
        }
        func less(_ a: CatalogVideo, _ b: CatalogVideo) -> Bool {
            switch field {
            case "name": a.name.lowercased() < b.name.lowercased()
            case "reference_id": (a.referenceID ?? "") < (b.referenceID ?? "")
            case "created_at": a.createdAt < b.createdAt
            case "updated_at": a.updatedAt < b.updatedAt
            case "published_at": a.publishedAt < b.publishedAt
            case "duration": a.durationMilliseconds < b.durationMilliseconds
            default: false  // plays_total: every mock video has 0 plays
            }
        }
        let indexed = Array(videos.enumerated())
        return indexed.sorted { x, y in
            if less(x.element, y.element) { return !descending }
            if less(y.element, x.element) { return descending }
            return x.offset < y.offset
        }.map(\.element)
    }
}
