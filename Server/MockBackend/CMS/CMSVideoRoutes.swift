import Foundation
import MicroHTTP
import WireModels

/// The CMS API's videos (`/v1/accounts/{account}/videos…`, reference §2): list and search,
/// counts, create, get one or several, PATCH, delete, sources and images. Every call needs an
/// OAuth token for the account. The videos are the catalog's own (the file with its edits, as
/// the admin API and the dashboard edit them): a video made here is one more catalog entry,
/// stored and announced to every instance like any edit.
extension MockBackendApp {
    static func addCMSVideoRoutes(to router: inout Router<MockBackendApp>) {
        let account = "/v1/accounts/:account"
        router.add(["GET"], "\(account)/videos") { app, request, p in
            try app.cms(request, p) { account in try app.cmsSearch(request, account: account, counting: false) }
        }
        router.add(["GET"], "\(account)/counts/videos") { app, request, p in
            try app.cms(request, p) { account in try app.cmsSearch(request, account: account, counting: true) }
        }
        router.add(["POST"], "\(account)/videos") { app, request, p in
            try app.cms(request, p) { account in
                let body = try Self.cmsBody(request)
                let video = try app.saveCMSVideo(account: account, id: nil) { entry, changes throws(CatalogEditError) in
                    try changes(body).apply(to: &entry, creating: true)
                }
                return APIResponse.json(app.cmsVideoBody(video, account: account, request: request), status: 201)
            }
        }
        router.add(["GET"], "\(account)/videos/:video") { app, request, p in
            try app.cms(request, p) { account in try app.cmsGetVideos(request, account: account, ids: p["video"]) }
        }
        router.add(["PATCH"], "\(account)/videos/:video") { app, request, p in
            try app.cms(request, p) { account in
                let body = try Self.cmsBody(request)
                let id = try app.cmsVideo(p["video"], account: account).id
                let video = try app.saveCMSVideo(account: account, id: id) { entry, changes throws(CatalogEditError) in
                    try changes(body).apply(to: &entry, creating: false)
                }
                // 202 when text tracks change, as the real API answers (it applies them later; the mock already has).
                return APIResponse.json(app.cmsVideoBody(video, account: account, request: request), status: body.keys.contains("text_tracks") ? 202 : 200)
            }
        }
        router.add(["DELETE"], "\(account)/videos/:video") { app, request, p in
            try app.cms(request, p) { account in
                try app.deleteCMSVideos(account: account, ids: p["video"])
                return HTTPResponse(status: 204)
            }
        }
        router.add(["GET"], "\(account)/videos/:video/sources") { app, request, p in
            try app.cms(request, p) { account in
                let video = try app.cmsVideo(p["video"], account: account)
                return APIResponse.json(app.cmsVideoBody(video, account: account, request: request).rendered?.sources ?? [])
            }
        }
        router.add(["GET"], "\(account)/videos/:video/images") { app, request, p in
            try app.cms(request, p) { account in
                let video = try app.cmsVideo(p["video"], account: account)
                return APIResponse.json(CMSImages(app.cmsVideoBody(video, account: account, request: request).rendered))
            }
        }
    }

    /// What every CMS call does first: no repeated parameters, a token for the account; then
    /// `body`, its refusals in the CMS API's form.
    func cms(_ request: HTTPRequest, _ p: RouteParameters, _ body: (Account) throws -> HTTPResponse) throws -> HTTPResponse {
        try CMSError.translating {
            let account = try backOfficeAccount(request, accountID: p["account"], api: .cms)
            try refuseDuplicateParameters(request)
            return try body(account)
        }
    }

    /// A JSON object body: 415 for another media type, 400 `BAD_VALUE` when it is not a JSON object.
    static func cmsBody(_ request: HTTPRequest) throws(CMSError) -> [String: Any] {
        if let type = request.headers["Content-Type"], !type.lowercased().hasPrefix("application/json") {
            throw CMSError(415, "UNSUPPORTED_MEDIA_TYPE", "Send the body as Content-Type: application/json")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else { throw CMSError.unreadableJSON }
        return object
    }

    /// One video of `account` by id or `ref:{reference_id}`, complete or not; else 404.
    func cmsVideo(_ idOrReference: String, account: Account) throws(CMSError) -> CMSVideo {
        let document = live.document, catalog = self.catalog
        let reference = idOrReference.hasPrefix("ref:") ? String(idOrReference.dropFirst(4)) : nil
        guard let entry = document.videos.first(where: { video in
            video.accountID == account.id && (reference.map { video.referenceID == $0 } ?? (video.id == idOrReference))
        }) else { throw CMSError.notFound("video \(idOrReference)") }
        return CMSVideo(entry, media: catalog.videos[entry.id])
    }

    /// The CMS video object, with the Playback API's images, text tracks and sources when it has media.
    func cmsVideoBody(_ video: CMSVideo, account: Account, request: HTTPRequest) -> CMSVideoBody {
        let rendered = video.media.map { renderer.render($0, account: account, key: contentKeys[$0.id], now: clock.now(), links: links(for: request)) }
        return CMSVideoBody(video: video, fairPlayAccount: account.fairPlay, rendered: rendered)
    }

    /// `GET /videos` (a page, `limit` 1–100, default 20) or `GET /counts/videos` (`{"count":N}`):
    /// every video of the account `q` matches (complete or not, any state), ordered as the
    /// Playback API's search orders (`CatalogSort.order`).
    private func cmsSearch(_ request: HTTPRequest, account: Account, counting: Bool) throws -> HTTPResponse {
        let search = try CatalogSearch(query: request.queryValue("q") ?? "", now: clock.now())
        let all = CMSVideo.all(of: account.id, document: live.document, catalog: catalog).filter(search.matches)
        if counting { return APIResponse.json(["count": all.count]) }
        let sort = try request.queryValue("sort").map { text throws(HTTPError) in try CatalogSort(text) }
        let (limit, offset) = try Self.cmsPaging(request, defaultLimit: 20)
        let ordered = try CatalogSort.order(all, search: search, sort: sort) { try plays(account: account.id) }
        return APIResponse.json(ordered.dropFirst(offset).prefix(limit).map { cmsVideoBody($0, account: account, request: request) })
    }

    /// `GET /videos/{ids}`: one id or `ref:` is the video (404 when unknown); several (up to 10)
    /// an array in the order asked, unknown ids left out.
    private func cmsGetVideos(_ request: HTTPRequest, account: Account, ids text: String) throws -> HTTPResponse {
        let ids = try Self.cmsVideoIDs(text)
        guard ids.count > 1 else { return APIResponse.json(cmsVideoBody(try cmsVideo(ids[0], account: account), account: account, request: request)) }
        return APIResponse.json(ids.compactMap { try? cmsVideo($0, account: account) }.map { cmsVideoBody($0, account: account, request: request) })
    }

    /// The ids of a path that may name several videos: up to 10, a `ref:` alone.
    static func cmsVideoIDs(_ text: String) throws(CMSError) -> [String] {
        if text.hasPrefix("ref:") { return [text] }
        var seen = Set<String>()
        let ids = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init).filter { seen.insert($0).inserted }
        guard ids.count <= maxVideosPerGet else {
            throw CMSError(400, "BAD_REQUEST", "ILLEGAL_PATH: A request for more than \(maxVideosPerGet) videos is not supported")
        }
        guard !ids.contains(where: { $0.isEmpty || $0.hasPrefix("ref:") }) else {
            throw CMSError(400, "BAD_REQUEST", "ILLEGAL_PATH: an empty id, or a ref: among several ids, in '\(text)'")
        }
        return ids
    }

    /// Creates (`id` nil) or changes a video through the catalog's edit: `change` lays the body
    /// over the entry; a reference id another video of the account holds is 409 `REFERENCE_ID_IN_USE`.
    private func saveCMSVideo(account: Account, id: String?,
                              _ change: (inout CatalogFile.Video, ([String: Any]) -> CMSVideoChanges) throws(CatalogEditError) -> Void) throws -> CMSVideo {
        let now = WireDate.string(from: clock.now())
        let edit = try live.edit(now: clock.now()) { document throws(CatalogEditError) -> LiveCatalog.Edit in
            guard let accountEntry = document.accounts.first(where: { $0.id == account.id }) else {
                throw CatalogEditError(.notFound, "RESOURCE_NOT_FOUND", "No account \(account.id)")
            }
            var entry: CatalogFile.Video
            if let id {
                guard let existing = document.videos.first(where: { $0.id == id && $0.accountID == account.id }) else {
                    throw CatalogEditError(.notFound, "RESOURCE_NOT_FOUND", "Resource does not exist: video \(id)")
                }
                entry = existing
                entry.updatedAt = now
            } else {
                entry = CatalogFile.Video.newCMSVideo(id: Self.newCMSID(taken: Set(document.videos.map(\.id))), account: accountEntry, now: now)
            }
            let definitions = CustomFieldDefinition.effective(for: accountEntry, in: document)
            let offered = catalog.videos[entry.id].map { video in video.sidebandSubtitles.map { video.asset.subtitles[$0].language } } ?? []
            try change(&entry) { CMSVideoChanges(body: $0, account: accountEntry, definitions: definitions, offeredSideband: offered) }
            if let ref = entry.referenceID,
               document.videos.contains(where: { $0.accountID == account.id && $0.referenceID == ref && $0.id != entry.id }) {
                throw CatalogEditError(.conflict, "REFERENCE_ID_IN_USE", "Reference id \(ref) is already in use.")
            }
            return .video(id: entry.id, entry)
        }
        guard case .video(let id, let entry?) = edit else { throw CatalogEditError(.storageFailed, "STORAGE_FAILED", "the edit was lost") }
        return CMSVideo(entry, media: catalog.videos[id])
    }

    /// `limit` (1–100) and `offset` of a CMS listing; anything else is 400 `BAD_VALUE`.
    static func cmsPaging(_ request: HTTPRequest, defaultLimit: Int) throws(HTTPError) -> (limit: Int, offset: Int) {
        (try request.integerParameter("limit", in: 1...100, default: defaultLimit, subcode: "BAD_VALUE"),
         try request.integerParameter("offset", in: 0...Int(Int32.max), default: 0, subcode: "BAD_VALUE"))
    }

    /// A new random 13-digit id (as Video Cloud's) for a video or playlist, so instances sharing a store never pick the same one.
    static func newCMSID(taken: Set<String>) -> String {
        while true {
            let id = String(UInt64.random(in: 1_000_000_000_000...9_999_999_999_999))
            if !taken.contains(id) { return id }
        }
    }

    /// `DELETE /videos/{ids}`: every id must name a video of the account (404), none may be in a
    /// manual playlist (409 `REFERENCES_EXIST`); then each is removed from the catalog.
    private func deleteCMSVideos(account: Account, ids text: String) throws {
        let videos = try Self.cmsVideoIDs(text).map { id throws(CMSError) in try cmsVideo(id, account: account) }
        let playlists = live.document.playlists
        for video in videos {
            let holding = playlists.filter { ($0.type ?? "EXPLICIT") == "EXPLICIT" && $0.videoIDs.contains(video.id) }.map(\.id)
            guard holding.isEmpty else {
                throw CMSError(409, "REFERENCES_EXIST", "Video \(video.id) is in playlists \(holding.joined(separator: ", ")); remove it from them first")
            }
        }
        for video in videos {
            let entry = live.document.videos.first { $0.id == video.id }
            try live.edit(now: clock.now()) { _ throws(CatalogEditError) in .video(id: video.id, nil) }
            if let entry { removeIngestedMedia(of: entry) }
        }
    }
}

extension CatalogFile.Video {
    /// A video as `POST /videos` makes it before the body is laid over: no media (not complete),
    /// ACTIVE, not offline-enabled, protected as the account's DRM says (`drm_disabled` turns it off).
    static func newCMSVideo(id: String, account: CatalogFile.Account, now: String) -> CatalogFile.Video {
        CatalogFile.Video(id: id, accountID: account.id, referenceID: nil, name: "", description: nil, longDescription: nil,
                          protection: account.fairplay ? .fairplay : .clear, offlineEnabled: false, asset: nil, repeatCount: nil,
                          renditions: nil, audioLanguages: nil, subtitleLanguages: nil, subtitlesInManifest: nil, sidebandTextTracks: nil,
                          textTrackKinds: nil, tags: nil, customFields: nil, economics: nil, createdAt: now, updatedAt: now, publishedAt: now)
    }
}
