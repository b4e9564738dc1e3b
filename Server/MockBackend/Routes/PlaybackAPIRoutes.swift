import Foundation
import MicroHTTP
import WireModels

/// The Playback API: videos by id or `ref:`, playlists, search. GET and HEAD only (and
/// OPTIONS for CORS); other methods get 405 from the router.
extension MockBackendApp {
    static func addPlaybackAPIRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/playback/v1/accounts/:account/videos/:video") { app, request, parameters in
            try app.videoResponse(app.playbackCaller(request, account: parameters["account"]), request, idOrReference: parameters["video"])
        }
        router.add(["GET"], "/playback/v1/accounts/:account/videos") { app, request, parameters in
            try app.searchResponse(app.playbackCaller(request, account: parameters["account"]), request)
        }
        router.add(["GET"], "/playback/v1/accounts/:account/playlists/:playlist") { app, request, parameters in
            try app.playlistResponse(app.playbackCaller(request, account: parameters["account"]), request,
                                     idOrReference: parameters["playlist"])
        }
    }

    /// The checks every Playback API call shares: no repeated parameters, then credentials.
    private func playbackCaller(_ request: HTTPRequest, account: String) throws(HTTPError) -> PlaybackCaller {
        let duplicates = request.duplicateQueryNames
        guard duplicates.isEmpty else {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.duplicateParameters,
                            "Parameters may be given once: \(duplicates.joined(separator: ", "))")
        }
        return try PlaybackAuth.authenticate(request, accountID: account, catalog: catalog, restrictions: restrictions, now: clock.now())
    }

    private func videoResponse(_ caller: PlaybackCaller, _ request: HTTPRequest, idOrReference: String) throws(HTTPError) -> HTTPResponse {
        guard let video = catalog.video(account: caller.account.id, idOrReference: idOrReference) else {
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound,
                                "No video \(idOrReference) in account \(caller.account.id)")
        }
        try PlaybackAuth.checkContent(caller.token, video)
        return .bytes(videoJSON(video, account: caller.account, links: links(for: request)), contentType: "application/json; charset=utf-8")
    }

    private func searchResponse(_ caller: PlaybackCaller, _ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        guard caller.searchEnabled else {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.api,
                                "This policy key is not search-enabled")
        }
        let search = try CatalogSearch(query: request.queryValue("q") ?? "")
        let catalog = self.catalog
        let (limit, offset) = try paging(request, defaultLimit: 20)
        var matches = catalog.videoOrder.compactMap { catalog.videos[$0] }
            .filter { $0.accountID == caller.account.id && search.matches($0) }
        if let sort = request.queryValue("sort"), !sort.isEmpty { matches = try CatalogSearch.sort(matches, by: sort) }
        let page = matches.dropFirst(offset).prefix(limit)
        let links = links(for: request)
        var body = Array(#"{"count":\#(matches.count),"videos":["#.utf8)
        for (index, video) in page.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += videoJSON(video, account: caller.account, links: links)
        }
        body += Array("]}".utf8)
        return .bytes(body, contentType: "application/json; charset=utf-8")
    }

    private func playlistResponse(_ caller: PlaybackCaller, _ request: HTTPRequest, idOrReference: String) throws(HTTPError) -> HTTPResponse {
        let catalog = self.catalog
        guard let playlist = catalog.playlist(account: caller.account.id, idOrReference: idOrReference) else {
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.playlistNotFound,
                                "No playlist \(idOrReference) in account \(caller.account.id)")
        }
        let (limit, offset) = try paging(request, defaultLimit: 20)
        let now = clock.now()
        let links = links(for: request)
        let videos = playlist.videoIDs.dropFirst(offset).prefix(limit).compactMap { catalog.videos[$0] }
            .map { renderer.render($0, account: caller.account, key: contentKeys[$0.id], now: now, links: links) }
        return APIResponse.json(Playlist(
            id: playlist.id, accountID: playlist.accountID, name: playlist.name, description: playlist.description,
            referenceID: playlist.referenceID, type: playlist.type, createdAt: playlist.createdAt,
            updatedAt: playlist.updatedAt, videos: videos,
            videoIDs: playlist.type == Playlist.explicit ? playlist.videoIDs : nil))
    }

    /// `limit` (1…1000) and `offset` (≥ 0); anything else is `ILLEGAL_QUERY`.
    private func paging(_ request: HTTPRequest, defaultLimit: Int) throws(HTTPError) -> (Int, Int) {
        (try request.integerParameter("limit", in: 1...1000, default: defaultLimit, subcode: PlaybackAPIErrorCode.illegalQuery),
         try request.integerParameter("offset", in: 0...Int(Int32.max), default: 0, subcode: PlaybackAPIErrorCode.illegalQuery))
    }

    /// The video's JSON with URLs from `links`, cached while its signed URLs would come out the same.
    func videoJSON(_ video: CatalogVideo, account: Account, links: Links) -> [UInt8] {
        let now = clock.now()
        let manifestBucket = Int(now.timeIntervalSince1970 / Links.cacheBucket(ttl: account.manifestTokenTTL))
        let mediaBucket = Int(now.timeIntervalSince1970 / Links.cacheBucket(ttl: configuration.mediaTokenTTL))
        let validUntil = min(Links.bucketEnd(now: now, ttl: account.manifestTokenTTL), Links.bucketEnd(now: now, ttl: configuration.mediaTokenTTL))
        return cache.body(for: "video|\(links.base)|\(video.id)|\(video.generation)|\(manifestBucket)|\(mediaBucket)",
                          validUntil: validUntil, now: now) {
            (try? Array(WireJSON.encoder(sortedKeys: true).encode(renderer.render(video, account: account, key: contentKeys[video.id], now: now, links: links)))) ?? []
        }
    }
}
