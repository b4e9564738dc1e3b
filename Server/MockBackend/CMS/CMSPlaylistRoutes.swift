import Foundation
import MicroHTTP
import WireModels

/// The CMS API's playlists (`/v1/accounts/{account}/playlists…`, reference §2.9): manual
/// (EXPLICIT, ordered `video_ids`) and smart (a tag search and an order). They are the catalog's
/// playlists, the ones the Playback API serves and the admin API edits.
extension MockBackendApp {
    static func addCMSPlaylistRoutes(to router: inout Router<MockBackendApp>) {
        let account = "/v1/accounts/:account"
        router.add(["GET"], "\(account)/playlists") { app, request, p in
            try app.cms(request, p) { account in try app.cmsPlaylistSearch(request, account: account, counting: false) }
        }
        router.add(["GET"], "\(account)/counts/playlists") { app, request, p in
            try app.cms(request, p) { account in try app.cmsPlaylistSearch(request, account: account, counting: true) }
        }
        router.add(["POST"], "\(account)/playlists") { app, request, p in
            try app.cms(request, p) { account in
                let body = try Self.cmsBody(request)
                return APIResponse.json(CMSPlaylistBody(playlist: try app.saveCMSPlaylist(account: account, id: nil, body: body)), status: 201)
            }
        }
        router.add(["GET"], "\(account)/playlists/:playlist") { app, request, p in
            try app.cms(request, p) { account in
                let ids = try Self.cmsVideoIDs(p["playlist"])
                guard ids.count > 1 else { return APIResponse.json(CMSPlaylistBody(playlist: try app.cmsPlaylist(ids[0], account: account))) }
                return APIResponse.json(ids.compactMap { try? app.cmsPlaylist($0, account: account) }.map(CMSPlaylistBody.init))
            }
        }
        router.add(["PATCH"], "\(account)/playlists/:playlist") { app, request, p in
            try app.cms(request, p) { account in
                let body = try Self.cmsBody(request)
                let id = try app.cmsPlaylist(p["playlist"], account: account).id
                return APIResponse.json(CMSPlaylistBody(playlist: try app.saveCMSPlaylist(account: account, id: id, body: body)))
            }
        }
        router.add(["DELETE"], "\(account)/playlists/:playlist") { app, request, p in
            try app.cms(request, p) { account in
                let id = try app.cmsPlaylist(p["playlist"], account: account).id
                try app.live.edit(now: app.clock.now()) { _ throws(CatalogEditError) in .playlist(id: id, nil) }
                return HTTPResponse(status: 204)
            }
        }
        router.add(["GET"], "\(account)/playlists/:playlist/videos") { app, request, p in
            try app.cms(request, p) { account in
                let videos = try app.cmsPlaylistVideos(p["playlist"], account: account)
                let (limit, offset) = try Self.cmsPaging(request, defaultLimit: 100)
                return APIResponse.json(videos.dropFirst(offset).prefix(limit).map { app.cmsVideoBody($0, account: account, request: request) })
            }
        }
        router.add(["GET"], "\(account)/counts/playlists/:playlist/videos") { app, request, p in
            try app.cms(request, p) { account in APIResponse.json(["count": try app.cmsPlaylistVideos(p["playlist"], account: account).count]) }
        }
    }

    /// A playlist of `account` by id or `ref:`; else 404.
    private func cmsPlaylist(_ idOrReference: String, account: Account) throws(CMSError) -> CMSPlaylist {
        let reference = idOrReference.hasPrefix("ref:") ? String(idOrReference.dropFirst(4)) : nil
        guard let entry = live.document.playlists.first(where: { playlist in
            playlist.accountID == account.id && (reference.map { playlist.referenceID == $0 } ?? (playlist.id == idOrReference))
        }) else { throw CMSError.notFound("playlist \(idOrReference)") }
        return CMSPlaylist(entry)
    }

    /// A playlist's videos as the CMS API lists them: a manual one's in its order, a smart one's by
    /// its rule, over every video of the account (the Playback API keeps only the playable ones).
    private func cmsPlaylistVideos(_ idOrReference: String, account: Account) throws -> [CMSVideo] {
        let playlist = try cmsPlaylist(idOrReference, account: account)
        let all = CMSVideo.all(of: account.id, document: live.document, catalog: catalog)
        guard let smart = SmartPlaylist(type: playlist.entry.type ?? "EXPLICIT", search: playlist.entry.search, limit: playlist.entry.limit) else {
            return playlist.entry.videoIDs.compactMap { id in all.first { $0.id == id } }
        }
        return try smart.videos(among: all) { try plays(account: account.id) }
    }

    /// `GET /playlists` (a page) or `GET /counts/playlists`: `q` in the search syntax over name,
    /// description and reference id, and `type:`; `sort` by `name`, `created_at` or `updated_at`.
    private func cmsPlaylistSearch(_ request: HTTPRequest, account: Account, counting: Bool) throws -> HTTPResponse {
        let search = try CatalogSearch(query: request.queryValue("q") ?? "", now: clock.now())
        let all = live.document.playlists.filter { $0.accountID == account.id }.map(CMSPlaylist.init).filter(search.matches)
        if counting { return APIResponse.json(["count": all.count]) }
        let sort = try request.queryValue("sort").map { text throws(HTTPError) -> CatalogSort in
            let sort = try CatalogSort(text)
            guard ["name", "created_at", "updated_at"].contains(sort.field) else {
                throw HTTPError(400, PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.invalidSort,
                                "attempted to sort by invalid property: '\(sort.field)'; playlists sort by name, created_at or updated_at")
            }
            return sort
        }
        let (limit, offset) = try Self.cmsPaging(request, defaultLimit: 20)
        let ordered = CatalogSort.order(all, search: search, sort: sort) { CatalogSort.Plays() }
        return APIResponse.json(ordered.dropFirst(offset).prefix(limit).map(CMSPlaylistBody.init))
    }

    /// Creates (`id` nil) or changes a playlist through the catalog's edit (which checks that its
    /// videos are the account's); a reference id another playlist holds is 409.
    private func saveCMSPlaylist(account: Account, id: String?, body: [String: Any]) throws -> CMSPlaylist {
        let now = WireDate.string(from: clock.now())
        let edit = try live.edit(now: clock.now()) { document throws(CatalogEditError) -> LiveCatalog.Edit in
            var entry: CatalogFile.Playlist
            if let id {
                guard let existing = document.playlists.first(where: { $0.id == id && $0.accountID == account.id }) else {
                    throw CatalogEditError(.notFound, "RESOURCE_NOT_FOUND", "Resource does not exist: playlist \(id)")
                }
                entry = existing
                entry.updatedAt = now
            } else {
                entry = CatalogFile.Playlist(id: Self.newCMSID(taken: Set(document.playlists.map(\.id))), accountID: account.id, referenceID: nil, name: "", description: nil, type: nil,
                                             videoIDs: [], createdAt: now, updatedAt: now)
            }
            try CMSPlaylistChanges(body: body).apply(to: &entry, creating: id == nil)
            if let unknown = entry.videoIDs.first(where: { id in !document.videos.contains { $0.id == id && $0.accountID == account.id } }) {
                throw CMSVideoChanges.invalid("video_ids: \(unknown) is not a video of account \(account.id)")
            }
            if let ref = entry.referenceID,
               document.playlists.contains(where: { $0.accountID == account.id && $0.referenceID == ref && $0.id != entry.id }) {
                throw CatalogEditError(.conflict, "REFERENCE_ID_IN_USE", "Reference id \(ref) is already in use.")
            }
            return .playlist(id: entry.id, entry)
        }
        guard case .playlist(_, let entry?) = edit else { throw CatalogEditError(.storageFailed, "STORAGE_FAILED", "the edit was lost") }
        return CMSPlaylist(entry)
    }
}
