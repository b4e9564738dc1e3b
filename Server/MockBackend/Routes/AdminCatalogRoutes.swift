import Foundation
import MicroHTTP
import WireModels

/// The admin API's catalog: the media assets there are to use, accounts (name, manifest
/// TTL, policy keys), videos and playlists created, replaced, patched (RFC 7396 merge patch)
/// and deleted live, in `catalog.json`'s own form; and a reset to the file's catalog.
/// Changes are validated against the whole catalog, kept in SQLite, and served at once.
extension MockBackendApp {
    static func addAdminCatalogRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/assets") { app, _, _ in
            struct Asset: Encodable {
                var name: String
                var durationSeconds: Double
                var renditions: [String]
                var audioLanguages: [String]
                var subtitleLanguages: [String]
                enum CodingKeys: String, CodingKey {
                    case name, renditions
                    case durationSeconds = "duration_seconds", audioLanguages = "audio_languages", subtitleLanguages = "subtitle_languages"
                }
            }
            let assets = app.live.assets.names.compactMap { name -> Asset? in
                guard let asset = try? app.live.assets.asset(named: name) else { return nil }
                return Asset(name: name, durationSeconds: asset.duration, renditions: asset.video.map(\.name),
                             audioLanguages: asset.audio.map(\.language), subtitleLanguages: asset.subtitles.map(\.language))
            }
            return APIResponse.json(["assets": assets])
        }
        router.add(["POST"], "/_admin/v1/reset") { app, _, _ in
            try app.reset()
            return HTTPResponse(status: 204)
        }
        addAdminAccountRoutes(to: &router)
        addAdminItemRoutes(CatalogFile.Video.self, to: &router)
        addAdminItemRoutes(CatalogFile.Playlist.self, to: &router)
    }

    /// Restores the file's catalog and forgets every license, license event, device, used
    /// nonce and analytics event (keys, certificates, URL secret and admin token stay).
    func reset() throws {
        try live.reset(now: clock.now())
    }

    // MARK: Accounts

    private static func addAdminAccountRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/accounts") { app, _, _ in
            APIResponse.json(["accounts": app.live.document.accounts])
        }
        router.add(["GET"], "/_admin/v1/accounts/:account") { app, _, p in
            APIResponse.json(try app.adminAccount(p["account"], in: app.live.document))
        }
        router.add(["PATCH"], "/_admin/v1/accounts/:account") { app, request, p in
            let patch = try JSONBody.object(request.body, example: #"{"manifest_token_ttl_seconds": 120}"#)
            let edit = try app.live.edit(now: app.clock.now()) { document throws(CatalogEditError) in
                let current = try app.adminAccount(p["account"], in: document)
                let merged = JSONBody.mergePatch(JSONBody.encodeObject(current), patch)
                let account = try JSONBody.decode(CatalogFile.Account.self, from: merged, subcode: "INVALID_ACCOUNT")
                guard account.id == current.id else { throw CatalogEditError(.invalid, "INVALID_ACCOUNT", "id cannot change") }
                guard account.fairplay == current.fairplay else {
                    throw CatalogEditError(.invalid, "INVALID_ACCOUNT", "fairplay is fixed by the catalog file (its certificate is made at start)")
                }
                return .account(account)
            }
            guard case .account(let account) = edit else { return HTTPResponse(status: 500) }
            return APIResponse.json(account)
        }
    }

    private func adminAccount(_ id: String, in document: CatalogFile) throws(CatalogEditError) -> CatalogFile.Account {
        guard let account = document.accounts.first(where: { $0.id == id }) else {
            throw CatalogEditError(.notFound, "ACCOUNT_NOT_FOUND", "No account \(id)")
        }
        return account
    }

    // MARK: Videos and playlists

    /// Lists, creates, reads, replaces, patches and deletes one kind of catalog item under
    /// `/_admin/v1/accounts/{account}/{collection}`.
    private static func addAdminItemRoutes<Item: AdminCatalogItem>(_: Item.Type, to router: inout Router<MockBackendApp>) {
        let collection = "/_admin/v1/accounts/:account/\(Item.collection)"
        let one = "\(collection)/:\(Item.noun)"
        router.add(["GET"], collection) { app, _, p in
            let document = app.live.document
            _ = try app.adminAccount(p["account"], in: document)
            return APIResponse.json([Item.collection: Item.items(of: document).filter { $0.accountID == p["account"] }])
        }
        router.add(["POST"], collection) { app, request, p in
            let body = try JSONBody.object(request.body, example: Item.example)
            return APIResponse.json(try app.saveItem(Item.self, account: p["account"], id: body["id"] as? String, body: body, mode: .create),
                                    status: 201)
        }
        router.add(["GET"], one) { app, _, p in
            APIResponse.json(try app.adminItem(Item.self, account: p["account"], id: p[Item.noun], in: app.live.document))
        }
        router.add(["PUT"], one) { app, request, p in
            let body = try JSONBody.object(request.body, example: Item.example)
            let existed = Item.items(of: app.live.document).contains { $0.id == p[Item.noun] }
            let item = try app.saveItem(Item.self, account: p["account"], id: p[Item.noun], body: body, mode: .replace)
            return APIResponse.json(item, status: existed ? 200 : 201)
        }
        router.add(["PATCH"], one) { app, request, p in
            let body = try JSONBody.object(request.body, example: Item.patchExample)
            return APIResponse.json(try app.saveItem(Item.self, account: p["account"], id: p[Item.noun], body: body, mode: .patch))
        }
        router.add(["DELETE"], one) { app, _, p in
            let video = Item.noun == "video" ? app.live.document.videos.first(where: { $0.id == p[Item.noun] && $0.accountID == p["account"] }) : nil
            try app.live.edit(now: app.clock.now()) { document throws(CatalogEditError) in
                _ = try app.adminItem(Item.self, account: p["account"], id: p[Item.noun], in: document)
                try Item.checkDeletable(id: p[Item.noun], in: document)
                return Item.edit(id: p[Item.noun], nil)
            }
            if let video { app.removeIngestedMedia(of: video) }
            return HTTPResponse(status: 204)
        }
    }

    /// How a body becomes an item: a new one (an id may be given), a whole replacement
    /// (created when missing), or a merge patch of the current one.
    enum SaveMode { case create, replace, patch }

    /// Validates and saves a video or playlist (the admin API's POST, PUT and PATCH, and the
    /// dashboard's video form, all come here).
    func saveItem<Item: AdminCatalogItem>(_: Item.Type, account: String, id: String?, body: [String: Any],
                                                  mode: SaveMode) throws(CatalogEditError) -> Item {
        let now = WireDate.string(from: clock.now())
        let noun = Item.noun.uppercased()
        let edit = try live.edit(now: clock.now()) { document throws(CatalogEditError) -> LiveCatalog.Edit in
            _ = try adminAccount(account, in: document)
            if let given = body["account_id"], given as? String != account {
                throw CatalogEditError(.invalid, "INVALID_\(noun)", "account_id must be \(account) (the account in the path) or left out")
            }
            let existing = id.flatMap { id in Item.items(of: document).first { $0.id == id } }
            if let existing, existing.accountID != account {
                throw CatalogEditError(.conflict, "\(noun)_EXISTS", "\(Item.noun.capitalized) \(existing.id) belongs to account \(existing.accountID)")
            }
            var base: [String: Any]
            switch mode {
            case .create:
                if let existing {
                    throw CatalogEditError(.conflict, "\(noun)_EXISTS", "A \(Item.noun) \(existing.id) exists already; PUT or PATCH it")
                }
                base = Item.newDefaults(now: now)
                base["id"] = id ?? Self.nextID(Item.items(of: document).map(\.id))
            case .replace:
                base = Item.replacementBase(existing: existing, now: now)
                base["id"] = id
            case .patch:
                guard let existing else {
                    throw CatalogEditError(.notFound, "\(noun)_NOT_FOUND", "No \(Item.noun) \(id ?? "") in account \(account)")
                }
                base = JSONBody.encodeObject(existing)
                base["updated_at"] = now
            }
            base["account_id"] = account
            let item = try JSONBody.decode(Item.self, from: JSONBody.mergePatch(base, body), subcode: "INVALID_\(noun)")
            if let id, item.id != id { throw CatalogEditError(.invalid, "INVALID_\(noun)", "id must be \(id) (the id in the path) or left out") }
            guard Self.validID(item.id) else {
                throw CatalogEditError(.invalid, "INVALID_\(noun)", "id must be 1-64 letters, digits, - or _ (not starting with ref:)")
            }
            return Item.edit(id: item.id, item)
        }
        guard let item = Item.item(in: edit) else { throw CatalogEditError(.storageFailed, "STORAGE_FAILED", "the edit was lost") }
        return item
    }

    private func adminItem<Item: AdminCatalogItem>(_: Item.Type, account: String, id: String,
                                                   in document: CatalogFile) throws(CatalogEditError) -> Item {
        _ = try adminAccount(account, in: document)
        guard let item = Item.items(of: document).first(where: { $0.id == id && $0.accountID == account }) else {
            throw CatalogEditError(.notFound, "\(Item.noun.uppercased())_NOT_FOUND", "No \(Item.noun) \(id) in account \(account)")
        }
        return item
    }

    // MARK: Shared

    /// One more than the largest numeric id (13 digits, as Video Cloud's), for a new video or playlist.
    private static func nextID(_ ids: [String]) -> String {
        String((ids.compactMap { Int($0) }.max() ?? 1_000_000_000_000) + 1)
    }

    private static func validID(_ id: String) -> Bool {
        (1...64).contains(id.count) && !id.hasPrefix("ref:")
            && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }
}

/// A video or a playlist as the admin API edits it: in `catalog.json`'s form, whole.
protocol AdminCatalogItem: Codable, Sendable {
    var id: String { get }
    var accountID: String { get }
    /// "video", "playlist": in messages and (upper-cased) in subcodes.
    static var noun: String { get }
    /// "videos", "playlists": in paths and listings.
    static var collection: String { get }
    static var example: String { get }
    static var patchExample: String { get }
    static func items(of document: CatalogFile) -> [Self]
    static func edit(id: String, _ item: Self?) -> LiveCatalog.Edit
    static func item(in edit: LiveCatalog.Edit) -> Self?
    /// What a new one is made of before the body is merged in.
    static func newDefaults(now: String) -> [String: Any]
    /// What a replacement is made of before the body is merged in (kept from the one it replaces).
    static func replacementBase(existing: Self?, now: String) -> [String: Any]
    /// Refuses deleting it while the catalog still needs it.
    static func checkDeletable(id: String, in document: CatalogFile) throws(CatalogEditError)
}

extension CatalogFile.Video: AdminCatalogItem {
    static let noun = "video"
    static let collection = "videos"
    static let example = #"{"name": "My video", "asset": "bars", "protection": "clear", "offline_enabled": true}"#
    static let patchExample = #"{"offline_enabled": false}"#
    static func items(of document: CatalogFile) -> [Self] { document.videos }
    static func edit(id: String, _ item: Self?) -> LiveCatalog.Edit { .video(id: id, item) }
    static func item(in edit: LiveCatalog.Edit) -> Self? { if case .video(_, let video) = edit { video } else { nil } }
    static func newDefaults(now: String) -> [String: Any] {
        ["protection": "clear", "offline_enabled": true, "asset": "bars", "created_at": now, "updated_at": now, "published_at": now]
    }
    static func replacementBase(existing: Self?, now: String) -> [String: Any] {
        ["created_at": existing?.createdAt ?? now, "updated_at": now, "published_at": existing?.publishedAt ?? now]
    }
    static func checkDeletable(id: String, in document: CatalogFile) throws(CatalogEditError) {
        let holding = document.playlists.filter { $0.videoIDs.contains(id) }.map(\.id)
        guard holding.isEmpty else {
            throw CatalogEditError(.conflict, "VIDEO_IN_PLAYLIST", "Video \(id) is in playlists \(holding.joined(separator: ", ")); take it out of them first")
        }
    }
}

extension CatalogFile.Playlist: AdminCatalogItem {
    static let noun = "playlist"
    static let collection = "playlists"
    static let example = #"{"name": "My playlist", "video_ids": ["6415818918101"]}"#
    static let patchExample = #"{"video_ids": []}"#
    static func items(of document: CatalogFile) -> [Self] { document.playlists }
    static func edit(id: String, _ item: Self?) -> LiveCatalog.Edit { .playlist(id: id, item) }
    static func item(in edit: LiveCatalog.Edit) -> Self? { if case .playlist(_, let playlist) = edit { playlist } else { nil } }
    static func newDefaults(now: String) -> [String: Any] {
        ["type": "EXPLICIT", "video_ids": [String](), "created_at": now, "updated_at": now]
    }
    static func replacementBase(existing: Self?, now: String) -> [String: Any] {
        ["type": "EXPLICIT", "created_at": existing?.createdAt ?? now, "updated_at": now]
    }
    static func checkDeletable(id: String, in document: CatalogFile) throws(CatalogEditError) {}
}
