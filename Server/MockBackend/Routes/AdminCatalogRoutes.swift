import Foundation
import GRDB
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
            do {
                try app.reset()
                return HTTPResponse(status: 204)
            } catch {
                return APIResponse.error(500, PlaybackAPIErrorCode.serverError, nil, "cannot reset: \(error)")
            }
        }
        addAdminAccountRoutes(to: &router)
        addAdminVideoRoutes(to: &router)
        addAdminPlaylistRoutes(to: &router)
    }

    /// Restores the file's catalog and forgets every license, license event, device and used
    /// nonce (keys, certificates, URL secret and admin token stay).
    func reset() throws {
        try live.reset(now: clock.now()) { db in try LicenseStore.forgetAll(db) }
    }

    // MARK: Accounts

    private static func addAdminAccountRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/accounts") { app, _, _ in
            APIResponse.json(["accounts": app.live.document.accounts])
        }
        router.add(["GET"], "/_admin/v1/accounts/:account") { app, _, p in
            app.adminEdit { () throws(CatalogEditError) in APIResponse.json(try app.adminAccount(p["account"], in: app.live.document)) }
        }
        router.add(["PATCH"], "/_admin/v1/accounts/:account") { app, request, p in
            app.adminEdit { () throws(CatalogEditError) in
                let patch = try JSONBody.object(request.body, example: #"{"manifest_token_ttl_seconds": 120}"#)
                let edit = try app.live.edit(now: app.clock.now()) { document throws(CatalogEditError) in
                    let current = try app.adminAccount(p["account"], in: document)
                    let merged = JSONBody.mergePatch(JSONBody.encodeObject(current), patch)
                    let account = try JSONBody.decode(CatalogFile.Account.self, from: merged, subcode: "INVALID_ACCOUNT")
                    guard account.id == current.id else { throw CatalogEditError(400, "INVALID_ACCOUNT", "id cannot change") }
                    guard account.fairplay == current.fairplay else {
                        throw CatalogEditError(400, "INVALID_ACCOUNT", "fairplay is fixed by the catalog file (its certificate is made at start)")
                    }
                    return .account(account)
                }
                guard case .account(let account) = edit else { return HTTPResponse(status: 500) }
                return APIResponse.json(account)
            }
        }
    }

    private func adminAccount(_ id: String, in document: CatalogFile) throws(CatalogEditError) -> CatalogFile.Account {
        guard let account = document.accounts.first(where: { $0.id == id }) else {
            throw CatalogEditError(404, "ACCOUNT_NOT_FOUND", "No account \(id)")
        }
        return account
    }

    // MARK: Videos

    private static func addAdminVideoRoutes(to router: inout Router<MockBackendApp>) {
        let example = #"{"name": "My video", "asset": "bars", "protection": "clear", "offline_enabled": true}"#
        router.add(["GET"], "/_admin/v1/accounts/:account/videos") { app, _, p in
            app.adminEdit { () throws(CatalogEditError) in
                let document = app.live.document
                _ = try app.adminAccount(p["account"], in: document)
                return APIResponse.json(["videos": document.videos.filter { $0.accountID == p["account"] }])
            }
        }
        router.add(["POST"], "/_admin/v1/accounts/:account/videos") { app, request, p in
            app.adminEdit { () throws(CatalogEditError) in
                let body = try JSONBody.object(request.body, example: example)
                let video = try app.saveVideo(account: p["account"], id: body["id"] as? String, body: body, mode: .create)
                return APIResponse.json(video, status: 201)
            }
        }
        router.add(["GET"], "/_admin/v1/accounts/:account/videos/:video") { app, _, p in
            app.adminEdit { () throws(CatalogEditError) in
                APIResponse.json(try app.adminVideo(account: p["account"], id: p["video"], in: app.live.document))
            }
        }
        router.add(["PUT"], "/_admin/v1/accounts/:account/videos/:video") { app, request, p in
            app.adminEdit { () throws(CatalogEditError) in
                let body = try JSONBody.object(request.body, example: example)
                let existed = app.live.document.videos.contains { $0.id == p["video"] }
                let video = try app.saveVideo(account: p["account"], id: p["video"], body: body, mode: .replace)
                return APIResponse.json(video, status: existed ? 200 : 201)
            }
        }
        router.add(["PATCH"], "/_admin/v1/accounts/:account/videos/:video") { app, request, p in
            app.adminEdit { () throws(CatalogEditError) in
                let body = try JSONBody.object(request.body, example: #"{"offline_enabled": false}"#)
                return APIResponse.json(try app.saveVideo(account: p["account"], id: p["video"], body: body, mode: .patch))
            }
        }
        router.add(["DELETE"], "/_admin/v1/accounts/:account/videos/:video") { app, _, p in
            app.adminEdit { () throws(CatalogEditError) in
                try app.live.edit(now: app.clock.now()) { document throws(CatalogEditError) in
                    _ = try app.adminVideo(account: p["account"], id: p["video"], in: document)
                    let holding = document.playlists.filter { $0.videoIDs.contains(p["video"]) }.map(\.id)
                    guard holding.isEmpty else {
                        throw CatalogEditError(409, "VIDEO_IN_PLAYLIST",
                                               "Video \(p["video"]) is in playlists \(holding.joined(separator: ", ")); take it out of them first")
                    }
                    return .video(id: p["video"], nil)
                }
                return HTTPResponse(status: 204)
            }
        }
    }

    /// How a body becomes a video: a new one (an id may be given), a whole replacement
    /// (created when missing), or a merge patch of the current one.
    private enum SaveMode { case create, replace, patch }

    private func saveVideo(account: String, id: String?, body: [String: Any], mode: SaveMode) throws(CatalogEditError) -> CatalogFile.Video {
        let now = WireDate.string(from: clock.now())
        let edit = try live.edit(now: clock.now()) { document throws(CatalogEditError) -> LiveCatalog.Edit in
            _ = try adminAccount(account, in: document)
            if let given = body["account_id"], given as? String != account {
                throw CatalogEditError(400, "INVALID_VIDEO", "account_id must be \(account) (the account in the path) or left out")
            }
            let existing = id.flatMap { id in document.videos.first { $0.id == id } }
            if let existing, existing.accountID != account {
                throw CatalogEditError(409, "VIDEO_EXISTS", "Video \(existing.id) belongs to account \(existing.accountID)")
            }
            var base: [String: Any]
            switch mode {
            case .create:
                if let existing { throw CatalogEditError(409, "VIDEO_EXISTS", "A video \(existing.id) exists already; PUT or PATCH it") }
                base = ["id": id ?? Self.nextID(document.videos.map(\.id)), "protection": "clear", "offline_enabled": true,
                        "asset": "bars", "created_at": now, "updated_at": now, "published_at": now]
            case .replace:
                base = ["id": id ?? "", "created_at": existing?.createdAt ?? now, "updated_at": now, "published_at": existing?.publishedAt ?? now]
            case .patch:
                guard let existing else { throw CatalogEditError(404, "VIDEO_NOT_FOUND", "No video \(id ?? "") in account \(account)") }
                base = JSONBody.encodeObject(existing)
                base["updated_at"] = now
            }
            base["account_id"] = account
            let merged = JSONBody.mergePatch(base, body)
            let video = try JSONBody.decode(CatalogFile.Video.self, from: merged, subcode: "INVALID_VIDEO")
            if let id, video.id != id { throw CatalogEditError(400, "INVALID_VIDEO", "id must be \(id) (the id in the path) or left out") }
            guard Self.validID(video.id) else {
                throw CatalogEditError(400, "INVALID_VIDEO", "id must be 1-64 letters, digits, - or _ (not starting with ref:)")
            }
            return .video(id: video.id, video)
        }
        guard case .video(_, let video?) = edit else { throw CatalogEditError(500, "STORAGE_FAILED", "the edit was lost") }
        return video
    }

    private func adminVideo(account: String, id: String, in document: CatalogFile) throws(CatalogEditError) -> CatalogFile.Video {
        _ = try adminAccount(account, in: document)
        guard let video = document.videos.first(where: { $0.id == id && $0.accountID == account }) else {
            throw CatalogEditError(404, "VIDEO_NOT_FOUND", "No video \(id) in account \(account)")
        }
        return video
    }

    // MARK: Playlists

    private static func addAdminPlaylistRoutes(to router: inout Router<MockBackendApp>) {
        let example = #"{"name": "My playlist", "video_ids": ["6415818918101"]}"#
        router.add(["GET"], "/_admin/v1/accounts/:account/playlists") { app, _, p in
            app.adminEdit { () throws(CatalogEditError) in
                let document = app.live.document
                _ = try app.adminAccount(p["account"], in: document)
                return APIResponse.json(["playlists": document.playlists.filter { $0.accountID == p["account"] }])
            }
        }
        router.add(["POST"], "/_admin/v1/accounts/:account/playlists") { app, request, p in
            app.adminEdit { () throws(CatalogEditError) in
                let body = try JSONBody.object(request.body, example: example)
                return APIResponse.json(try app.savePlaylist(account: p["account"], id: body["id"] as? String, body: body, mode: .create), status: 201)
            }
        }
        router.add(["GET"], "/_admin/v1/accounts/:account/playlists/:playlist") { app, _, p in
            app.adminEdit { () throws(CatalogEditError) in
                APIResponse.json(try app.adminPlaylist(account: p["account"], id: p["playlist"], in: app.live.document))
            }
        }
        router.add(["PUT"], "/_admin/v1/accounts/:account/playlists/:playlist") { app, request, p in
            app.adminEdit { () throws(CatalogEditError) in
                let body = try JSONBody.object(request.body, example: example)
                let existed = app.live.document.playlists.contains { $0.id == p["playlist"] }
                let playlist = try app.savePlaylist(account: p["account"], id: p["playlist"], body: body, mode: .replace)
                return APIResponse.json(playlist, status: existed ? 200 : 201)
            }
        }
        router.add(["PATCH"], "/_admin/v1/accounts/:account/playlists/:playlist") { app, request, p in
            app.adminEdit { () throws(CatalogEditError) in
                let body = try JSONBody.object(request.body, example: #"{"video_ids": []}"#)
                return APIResponse.json(try app.savePlaylist(account: p["account"], id: p["playlist"], body: body, mode: .patch))
            }
        }
        router.add(["DELETE"], "/_admin/v1/accounts/:account/playlists/:playlist") { app, _, p in
            app.adminEdit { () throws(CatalogEditError) in
                try app.live.edit(now: app.clock.now()) { document throws(CatalogEditError) in
                    _ = try app.adminPlaylist(account: p["account"], id: p["playlist"], in: document)
                    return .playlist(id: p["playlist"], nil)
                }
                return HTTPResponse(status: 204)
            }
        }
    }

    private func savePlaylist(account: String, id: String?, body: [String: Any], mode: SaveMode) throws(CatalogEditError) -> CatalogFile.Playlist {
        let now = WireDate.string(from: clock.now())
        let edit = try live.edit(now: clock.now()) { document throws(CatalogEditError) -> LiveCatalog.Edit in
            _ = try adminAccount(account, in: document)
            if let given = body["account_id"], given as? String != account {
                throw CatalogEditError(400, "INVALID_PLAYLIST", "account_id must be \(account) (the account in the path) or left out")
            }
            let existing = id.flatMap { id in document.playlists.first { $0.id == id } }
            if let existing, existing.accountID != account {
                throw CatalogEditError(409, "PLAYLIST_EXISTS", "Playlist \(existing.id) belongs to account \(existing.accountID)")
            }
            var base: [String: Any]
            switch mode {
            case .create:
                if let existing { throw CatalogEditError(409, "PLAYLIST_EXISTS", "A playlist \(existing.id) exists already; PUT or PATCH it") }
                base = ["id": id ?? Self.nextID(document.playlists.map(\.id)), "type": "EXPLICIT", "video_ids": [String](),
                        "created_at": now, "updated_at": now]
            case .replace:
                base = ["id": id ?? "", "type": "EXPLICIT", "created_at": existing?.createdAt ?? now, "updated_at": now]
            case .patch:
                guard let existing else { throw CatalogEditError(404, "PLAYLIST_NOT_FOUND", "No playlist \(id ?? "") in account \(account)") }
                base = JSONBody.encodeObject(existing)
                base["updated_at"] = now
            }
            base["account_id"] = account
            let playlist = try JSONBody.decode(CatalogFile.Playlist.self, from: JSONBody.mergePatch(base, body), subcode: "INVALID_PLAYLIST")
            if let id, playlist.id != id { throw CatalogEditError(400, "INVALID_PLAYLIST", "id must be \(id) (the id in the path) or left out") }
            guard Self.validID(playlist.id) else {
                throw CatalogEditError(400, "INVALID_PLAYLIST", "id must be 1-64 letters, digits, - or _ (not starting with ref:)")
            }
            return .playlist(id: playlist.id, playlist)
        }
        guard case .playlist(_, let playlist?) = edit else { throw CatalogEditError(500, "STORAGE_FAILED", "the edit was lost") }
        return playlist
    }

    private func adminPlaylist(account: String, id: String, in document: CatalogFile) throws(CatalogEditError) -> CatalogFile.Playlist {
        _ = try adminAccount(account, in: document)
        guard let playlist = document.playlists.first(where: { $0.id == id && $0.accountID == account }) else {
            throw CatalogEditError(404, "PLAYLIST_NOT_FOUND", "No playlist \(id) in account \(account)")
        }
        return playlist
    }

    // MARK: Shared

    /// Runs an admin handler; a refusal becomes its error array.
    func adminEdit(_ body: () throws(CatalogEditError) -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch {
            let code = switch error.status {
            case 404: PlaybackAPIErrorCode.notFound
            case 409: "CONFLICT"
            case 500...: PlaybackAPIErrorCode.serverError
            default: PlaybackAPIErrorCode.badRequest
            }
            return APIResponse.error(error.status, code, error.subcode, error.message)
        }
    }

    /// One more than the largest numeric id (13 digits, as Video Cloud's), for a new video or playlist.
    private static func nextID(_ ids: [String]) -> String {
        String((ids.compactMap { Int($0) }.max() ?? 1_000_000_000_000) + 1)
    }

    private static func validID(_ id: String) -> Bool {
        (1...64).contains(id.count) && !id.hasPrefix("ref:")
            && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }
}
