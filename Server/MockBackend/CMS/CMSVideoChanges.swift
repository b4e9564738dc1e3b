import Foundation
import WireModels

/// A CMS API create or PATCH body laid over a video's catalog entry (reference §2.3–2.4): only
/// the members sent change; `null` clears a nullable one; every refusal is 422
/// `VALIDATION_ERROR` naming the member (`name: REQUIRED_FIELD`, `foo: ILLEGAL_FIELD`).
struct CMSVideoChanges {
    /// What `POST /videos` takes.
    static let createFields: Set<String> = ["name", "description", "long_description", "reference_id", "state", "tags", "custom_fields",
                                            "cue_points", "geo", "schedule", "economics", "drm_disabled", "offline_enabled"]
    /// What `PATCH /videos/{id}` takes.
    static let updateFields = createFields.union(["link", "ad_keys", "published_at", "text_tracks"])

    var body: [String: Any]
    var account: CatalogFile.Account
    /// The account's custom fields: values for others are dropped, as the real service does.
    var definitions: [CustomFieldDefinition]
    /// The languages of the asset's sideband text tracks the video offers now (a PATCH's
    /// `text_tracks` keeps those it names by id).
    var offeredSideband: [String] = []

    /// The members of the object-valued members (and of each cue point): others are `ILLEGAL_FIELD`.
    static let objectMembers: [String: Set<String>] = [
        "geo": ["countries", "exclude_countries", "restricted"], "schedule": ["starts_at", "ends_at"], "link": ["url", "text"],
        "cue_points": ["id", "name", "type", "time", "metadata", "force_stop"],
    ]

    /// The members that take no `null` (the others clear with it).
    static let notNullable: Set<String> = ["state", "economics", "offline_enabled", "drm_disabled", "published_at"]

    /// `entry` with the body's members applied; `creating` is a `POST` (another set of members).
    func apply(to entry: inout CatalogFile.Video, creating: Bool) throws(CatalogEditError) {
        if let key = Self.notNullable.sorted().first(where: { body[$0] is NSNull }) { throw Self.invalid("\(key): must not be null") }
        for (key, members) in Self.objectMembers {
            let objects = (body[key] as? [Any])?.compactMap { $0 as? [String: Any] } ?? (body[key] as? [String: Any]).map { [$0] } ?? []
            for object in objects {
                if let unknown = object.keys.sorted().first(where: { !members.contains($0) }) { throw Self.invalid("\(key).\(unknown): ILLEGAL_FIELD") }
            }
        }
        let allowed = creating ? Self.createFields : Self.updateFields
        for key in body.keys.sorted() where !allowed.contains(key) {
            switch key {
            case "id": throw Self.invalid("Invalid keys: id")
            case "account_id" where body[key] as? String == account.id: continue
            case "account_id": throw Self.invalid("account_id: WRONG_ACCOUNT")
            default: throw Self.invalid("\(key): ILLEGAL_FIELD")
            }
        }
        if let name: String = try value("name") {
            guard !name.isEmpty else { throw Self.invalid("name: REQUIRED_FIELD") }
            guard name.count <= 255 else { throw Self.invalid("name: must be at most 255 characters") }
            entry.name = name
        } else if body.keys.contains("name") || creating {
            throw Self.invalid("name: REQUIRED_FIELD")
        }
        try text("description", max: 250) { entry.description = $0 }
        try text("long_description", max: 5000) { entry.longDescription = $0 }
        try text("reference_id", max: 150) { entry.referenceID = $0 }
        try text("ad_keys", max: 2048) { entry.adKeys = $0 }
        if let state: String = try value("state") {
            guard let parsed = VideoState(rawValue: state) else { throw Self.invalid("state: must be ACTIVE or INACTIVE") }
            entry.state = parsed == .active ? nil : parsed
        }
        if let economics: String = try value("economics") {
            guard ["AD_SUPPORTED", "FREE"].contains(economics) else { throw Self.invalid("economics: must be AD_SUPPORTED or FREE") }
            entry.economics = economics
        }
        if let offline: Bool = try value("offline_enabled") { entry.offlineEnabled = offline }
        if let disabled: Bool = try value("drm_disabled"), account.fairplay, entry.protection != .aes128 {
            entry.protection = disabled ? .clear : .fairplay
        }
        if body.keys.contains("tags") { entry.tags = try tags() }
        if body.keys.contains("custom_fields") { entry.customFields = try customFields(merging: entry.customFields ?? [:]) }
        if body.keys.contains("cue_points") { entry.cuePoints = try cuePoints() }
        if body.keys.contains("schedule") { entry.schedule = try schedule() }
        if body.keys.contains("geo") {
            let geo: VideoGeo? = try value("geo")
            if let geo, let bad = geo.countries.first(where: { $0.count != 2 || !$0.allSatisfy { $0.isASCII && $0.isLowercase } }) {
                throw Self.invalid("geo.countries: '\(bad)' is not a lower-case ISO 3166 code")
            }
            entry.geo = geo
        }
        if body.keys.contains("link") {
            let link: Link? = try value("link")
            if let link, link.url.count > 255 || link.text.count > 255 { throw Self.invalid("link: url and text are at most 255 characters each") }
            entry.link = link
        }
        if body.keys.contains("text_tracks") { try textTracks(of: &entry) }
        if let published: String = try value("published_at") {
            guard let date = WireDate.date(from: published) else { throw Self.invalid("published_at: '\(published)' is not an ISO-8601 date") }
            entry.publishedAt = WireDate.string(from: date)
        }
        if entry.state ?? .active == .active,
           let missing = definitions.first(where: { $0.required && (entry.customFields?[$0.id] ?? "").isEmpty }) {
            throw Self.invalid("custom_fields.\(missing.id): REQUIRED_FIELD (a required custom field keeps a video from being ACTIVE)")
        }
    }

    /// `text_tracks` replaces the list (reference §2.7): an entry with only an `id` keeps that
    /// track (the asset's own or one added before), an entry with `src` and `srclang` adds one by
    /// URL (`kind` captions by default); a track left out is removed, `[]` removes all.
    private func textTracks(of entry: inout CatalogFile.Video) throws(CatalogEditError) {
        guard let given = body["text_tracks"] as? [Any] else { throw Self.invalid("text_tracks: must be an array") }
        let existing = entry.remoteTextTracks ?? []
        var keep: [String] = [], added: [RemoteTextTrack] = []
        for (index, item) in given.enumerated() {
            guard let track = item as? [String: Any] else { throw Self.invalid("text_tracks[\(index)]: must be an object") }
            let id = track["id"] as? String
            if let id, track["src"] == nil || existing.contains(where: { $0.id == id }) {
                if let language = offeredSideband.first(where: { StableID.uuid("texttrack:\(entry.id):\($0)") == id }) {
                    keep.append(language)
                } else if let old = existing.first(where: { $0.id == id }) {
                    added.append(old)
                } else {
                    throw Self.invalid("text_tracks[\(index)].id: the video has no text track \(id)")
                }
                continue
            }
            guard let src = track["src"] as? String, let url = URL(string: src), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                  url.host != nil, src.count <= 2048 else {
                throw Self.invalid("text_tracks[\(index)].src: REQUIRED_FIELD (an http or https URL of a WebVTT file)")
            }
            guard let language = track["srclang"] as? String, (1...35).contains(language.count) else {
                throw Self.invalid("text_tracks[\(index)].srclang: REQUIRED_FIELD (a BCP-47 language)")
            }
            let kind = track["kind"].map { $0 as? String } ?? "captions"
            guard let kind, CatalogVideo.textTrackKinds.contains(kind) else {
                throw Self.invalid("text_tracks[\(index)].kind: one of \(CatalogVideo.textTrackKinds.joined(separator: ", "))")
            }
            if let label = track["label"], !(label is String) || (label as? String)?.count ?? 0 > 255 {
                throw Self.invalid("text_tracks[\(index)].label: a string of at most 255 characters")
            }
            let isDefault: Bool? = try Self.member("default", of: track)
            added.append(RemoteTextTrack(id: id ?? UUID().uuidString.lowercased(), src: src, srclang: language, label: track["label"] as? String,
                                         kind: kind, isDefault: isDefault ?? false))
        }
        entry.sidebandLanguages = offeredSideband.isEmpty ? entry.sidebandLanguages : keep
        entry.remoteTextTracks = added.isEmpty ? nil : added
    }

    static func invalid(_ message: String) -> CatalogEditError {
        CatalogEditError(.invalid, "VALIDATION_ERROR", message)
    }

    /// The member `key` decoded as `T`; nil when absent or `null`.
    private func value<T: Decodable>(_ key: String) throws(CatalogEditError) -> T? { try Self.member(key, of: body) }

    /// The member `key` of `body` decoded strictly as `T` (`true` is no number, `1` no Boolean); nil when absent or `null`.
    static func member<T: Decodable>(_ key: String, of body: [String: Any]) throws(CatalogEditError) -> T? {
        guard let raw = body[key], !(raw is NSNull) else { return nil }
        do {
            let data = try JSONSerialization.data(withJSONObject: raw, options: .fragmentsAllowed)
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw Self.invalid("\(key): \(JSONBody.describe(error).replacingOccurrences(of: "the body is not valid JSON", with: "wrong type"))")
        } catch {
            throw Self.invalid("\(key): \(error)")
        }
    }

    /// A nullable string member: set, cleared by `null` (or an empty string), or left alone.
    private func text(_ key: String, max: Int, _ set: (String?) -> Void) throws(CatalogEditError) {
        guard body.keys.contains(key) else { return }
        let given: String? = try value(key)
        if let given, given.count > max { throw Self.invalid("\(key): must be at most \(max) characters") }
        set(given.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// Tags: each 1–128 characters without commas, at most 1200, duplicates dropped, sorted.
    private func tags() throws(CatalogEditError) -> [String]? {
        guard let tags: [String] = try value("tags") else { return nil }
        if let bad = tags.first(where: { $0.isEmpty || $0.count > 128 || $0.contains(",") }) {
            throw Self.invalid("tags: '\(bad)' is not a tag (1-128 characters, no commas)")
        }
        guard tags.count <= 1200 else { throw Self.invalid("tags: at most 1200 tags") }
        var seen = Set<String>()
        return tags.filter { seen.insert($0.lowercased()).inserted }.sorted()
    }

    /// Custom field values merged into `current`: a value set, `null` or `""` removing it; keys that
    /// are not the account's fields are dropped.
    private func customFields(merging current: [String: String]) throws(CatalogEditError) -> [String: String] {
        guard let raw = body["custom_fields"], !(raw is NSNull) else { return [:] }
        guard let given = raw as? [String: Any] else { throw Self.invalid("custom_fields: must be an object of strings") }
        var result = current
        for (key, value) in given {
            guard let field = definitions.first(where: { $0.id == key }) else { continue }
            if value is NSNull { result[key] = nil; continue }
            guard let text = value as? String else { throw Self.invalid("custom_fields.\(key): must be a string") }
            if text.isEmpty { result[key] = nil; continue }
            if let problem = field.problem(with: text) { throw Self.invalid(problem) }
            result[key] = text
        }
        return result
    }

    private func cuePoints() throws(CatalogEditError) -> [CuePoint]? {
        struct Given: Decodable {
            var id: String?
            var name: String?
            var type: String
            var time: Double
            var metadata: String?
            var forceStop: Bool?
            enum CodingKeys: String, CodingKey { case id, name, type, time, metadata, forceStop = "force_stop" }
        }
        for case let (index, point as [String: Any]) in (body["cue_points"] as? [Any] ?? []).enumerated() {
            if let key = point.keys.sorted().first(where: { $0 != "metadata" && point[$0] is NSNull }) {
                throw Self.invalid("cue_points[\(index)].\(key): must not be null")
            }
        }
        guard let given: [Given] = try value("cue_points") else { return nil }
        return try given.enumerated().map { index, point throws(CatalogEditError) in
            guard ["AD", "DATA", "CODE"].contains(point.type) else { throw Self.invalid("cue_points[\(index)].type: must be AD or DATA") }
            guard point.time >= 0, point.time <= 86_400 else { throw Self.invalid("cue_points[\(index)].time: must be seconds from 0 to 86400 (24 hours)") }
            if let metadata = point.metadata, metadata.count > 512 { throw Self.invalid("cue_points[\(index)].metadata: at most 512 characters") }
            return CuePoint(id: point.id ?? String(UInt64.random(in: 1_000_000_000_000...9_999_999_999_999)), name: point.name ?? "",
                            type: point.type, time: point.time, metadata: point.metadata, forceStop: point.forceStop ?? false)
        }
    }

    /// `{starts_at, ends_at}` (either may be null), written back in UTC with milliseconds; null clears it.
    private func schedule() throws(CatalogEditError) -> VideoSchedule? {
        guard let given: VideoSchedule = try value("schedule") else { return nil }
        func utc(_ text: String?, _ what: String) throws(CatalogEditError) -> String? {
            guard let text else { return nil }
            guard let date = WireDate.date(from: text) else { throw Self.invalid("schedule.\(what): '\(text)' is not an ISO-8601 date") }
            return WireDate.string(from: date)
        }
        let schedule = VideoSchedule(startsAt: try utc(given.startsAt, "starts_at"), endsAt: try utc(given.endsAt, "ends_at"))
        if let starts = schedule.window.starts, let ends = schedule.window.ends, ends <= starts {
            throw Self.invalid("schedule: ends_at must be after starts_at")
        }
        return schedule.startsAt == nil && schedule.endsAt == nil ? nil : schedule
    }
}
