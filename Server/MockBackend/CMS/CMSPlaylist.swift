import Foundation
import WireModels

/// A playlist as the CMS API sees and searches it: the catalog's entry. Search reads it through
/// `SearchableVideo` (the one search implementation): its name, description and reference id,
/// and `type:` (read as a field of its own).
struct CMSPlaylist: SearchableVideo {
    var entry: CatalogFile.Playlist
    var createdAt: Date
    var updatedAt: Date

    init(_ entry: CatalogFile.Playlist) {
        self.entry = entry
        createdAt = WireDate.date(from: entry.createdAt) ?? .distantPast
        updatedAt = WireDate.date(from: entry.updatedAt) ?? .distantPast
    }

    var id: String { entry.id }
    var name: String { entry.name }
    var description: String? { entry.description }
    var longDescription: String? { nil }
    var referenceID: String? { entry.referenceID }
    var tags: [String] { [] }
    var customFields: [String: String] { ["type": entry.type ?? "EXPLICIT"] }
    var publishedAt: Date { createdAt }
    var state: VideoState { .active }
    var isComplete: Bool { true }
    var startsAt: Date? { nil }
    var endsAt: Date? { nil }
    var sortDuration: Int { 0 }
    var isExplicit: Bool { (entry.type ?? "EXPLICIT") == "EXPLICIT" }
}

/// The CMS API's playlist object (reference §2.9): `video_ids` on a manual playlist, `search`
/// and `limit` on a smart one.
struct CMSPlaylistBody: Encodable {
    var playlist: CMSPlaylist

    enum Keys: String, CodingKey {
        case id, name, description, type, favorite, search, limit
        case accountID = "account_id", createdAt = "created_at", updatedAt = "updated_at", referenceID = "reference_id", videoIDs = "video_ids"
    }

    func encode(to encoder: any Encoder) throws {
        let entry = playlist.entry
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(entry.id, forKey: .id)
        try c.encode(entry.accountID, forKey: .accountID)
        try c.encode(entry.createdAt, forKey: .createdAt)
        try c.encode(entry.description, forKey: .description)
        try c.encode(entry.favorite ?? false, forKey: .favorite)
        try c.encode(entry.name, forKey: .name)
        try c.encode(entry.referenceID, forKey: .referenceID)
        try c.encode(entry.type ?? "EXPLICIT", forKey: .type)
        try c.encode(entry.updatedAt, forKey: .updatedAt)
        if playlist.isExplicit {
            try c.encode(entry.videoIDs, forKey: .videoIDs)
        } else {
            try c.encode(entry.search ?? "", forKey: .search)
            try c.encode(entry.limit ?? 100, forKey: .limit)
        }
    }
}

/// A playlist create or PATCH body laid over its catalog entry: `name` and `type` (create),
/// `description`, `reference_id`, `favorite`; `video_ids` (≤ 1000, manual only); `search` and
/// `limit` (≤ 1000, smart only). A playlist stays manual or smart.
struct CMSPlaylistChanges {
    var body: [String: Any]

    static let members: Set<String> = ["name", "type", "description", "reference_id", "favorite", "video_ids", "search", "limit"]

    func apply(to entry: inout CatalogFile.Playlist, creating: Bool) throws(CatalogEditError) {
        func invalid(_ message: String) -> CatalogEditError { CMSVideoChanges.invalid(message) }
        for key in body.keys.sorted() where !Self.members.contains(key) {
            if key == "account_id", body[key] as? String == entry.accountID { continue }
            throw invalid(key == "id" ? "Invalid keys: id" : "\(key): ILLEGAL_FIELD")
        }
        if let name: String = try CMSVideoChanges.member("name", of: body) {
            guard (1...255).contains(name.count) else { throw invalid("name: 1-255 characters") }
            entry.name = name
        } else if creating || body.keys.contains("name") {
            throw invalid("name: REQUIRED_FIELD")
        }
        if let type: String = try CMSVideoChanges.member("type", of: body) {
            guard type == "EXPLICIT" || SmartPlaylist.orders[type] != nil else {
                throw invalid("type: EXPLICIT or one of \(SmartPlaylist.orders.keys.sorted().joined(separator: ", "))")
            }
            if !creating, (type == "EXPLICIT") != ((entry.type ?? "EXPLICIT") == "EXPLICIT") {
                throw invalid("type: a playlist cannot change between EXPLICIT and smart")
            }
            entry.type = type
        } else if creating || body.keys.contains("type") {
            throw invalid("type: REQUIRED_FIELD")
        }
        let explicit = (entry.type ?? "EXPLICIT") == "EXPLICIT"
        for (key, value) in body where value is NSNull && ["favorite", "video_ids", "limit"].contains(key) {
            throw invalid("\(key): must not be null")
        }
        if body.keys.contains("description") {
            let text: String? = try CMSVideoChanges.member("description", of: body)
            if let text, text.count > 250 { throw invalid("description: at most 250 characters") }
            entry.description = text.flatMap { $0.isEmpty ? nil : $0 }
        }
        if body.keys.contains("reference_id") {
            let text: String? = try CMSVideoChanges.member("reference_id", of: body)
            if let text, text.count > 150 { throw invalid("reference_id: at most 150 characters") }
            entry.referenceID = text.flatMap { $0.isEmpty ? nil : $0 }
        }
        if let favorite: Bool = try CMSVideoChanges.member("favorite", of: body) { entry.favorite = favorite }
        if let ids: [String] = try CMSVideoChanges.member("video_ids", of: body) {
            guard explicit else { throw invalid("video_ids: ILLEGAL_FIELD on a smart playlist") }
            guard ids.count <= 1000 else { throw invalid("video_ids: at most 1000") }
            entry.videoIDs = ids
        }
        if body.keys.contains("search") {
            guard !explicit else { throw invalid("search: ILLEGAL_FIELD on an EXPLICIT playlist") }
            entry.search = try CMSVideoChanges.member("search", of: body)
        }
        if let limit: Int = try CMSVideoChanges.member("limit", of: body) {
            guard !explicit else { throw invalid("limit: ILLEGAL_FIELD on an EXPLICIT playlist") }
            guard (1...SmartPlaylist.maximumLimit).contains(limit) else { throw invalid("limit: 1-\(SmartPlaylist.maximumLimit)") }
            entry.limit = limit
        }
        if !explicit, SmartPlaylist(type: entry.type ?? "", search: entry.search, limit: entry.limit) == nil {
            throw invalid("search: a v1 tag search, tags:a,b (any) or +tags:a,b (all)")
        }
    }
}
