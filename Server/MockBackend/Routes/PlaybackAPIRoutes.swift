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
        router.add(["GET"], "/playback/v1/accounts/:account/videos/:video/related") { app, request, parameters in
            try app.relatedResponse(app.playbackCaller(request, account: parameters["account"]), request, idOrReference: parameters["video"])
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
        try refuseDuplicateParameters(request)
        return try PlaybackAuth.authenticate(request, accountID: account, catalog: catalog, restrictions: restrictions, now: clock.now())
    }

    /// A parameter given twice is 400 `DUPLICATE_PARAMETERS`, as the real Playback API answers.
    func refuseDuplicateParameters(_ request: HTTPRequest) throws(HTTPError) {
        let duplicates = request.duplicateQueryNames
        guard duplicates.isEmpty else {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.duplicateParameters,
                            "Parameters may be given once: \(duplicates.joined(separator: ", "))")
        }
    }

    /// The most ids one get may name (`videos/a,b,…`), as the real service allows.
    static let maxVideosPerGet = 10

    private func videoResponse(_ caller: PlaybackCaller, _ request: HTTPRequest, idOrReference: String) throws(HTTPError) -> HTTPResponse {
        // A `ref:` is one video, whatever its reference id holds.
        guard idOrReference.contains(","), !idOrReference.hasPrefix("ref:") else {
            let video = try playbackVideo(caller, idOrReference)
            return .bytes(videoJSON(video, account: caller.account, links: links(for: request)), contentType: "application/json; charset=utf-8")
        }
        // Several ids: an array of the videos in the order asked, unknown ids left out.
        let ids = idOrReference.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        func illegal(_ why: String) -> HTTPError { HTTPError(400, PlaybackAPIErrorCode.badRequest, "ILLEGAL_PATH", "ILLEGAL_PATH: \(why)") }
        guard ids.count <= Self.maxVideosPerGet else { throw illegal("A request for more than \(Self.maxVideosPerGet) videos is not supported") }
        guard !ids.contains(where: \.isEmpty) else { throw illegal("an empty video id in '\(idOrReference)'") }
        guard !ids.contains(where: { $0.hasPrefix("ref:") }) else { throw illegal("a ref: id must be asked for alone") }
        var seen = Set<String>(), videos: [CatalogVideo] = []
        let now = clock.now()
        for id in ids where seen.insert(id).inserted {
            // Only playable videos, as the real service filters: the others are left out like unknown ids.
            guard let video = catalog.video(account: caller.account.id, idOrReference: id), video.isPlayable(now: now) else { continue }
            try PlaybackAuth.checkContent(caller.token, video)
            videos.append(video)
        }
        return videoArray(videos, caller: caller, request: request, wrappedWithCount: nil)
    }

    /// A video of the caller's account, which its token (if any) may see; else 404 `VIDEO_NOT_FOUND`.
    /// One that is not playable now (INACTIVE, outside its schedule on the mock's clock, or without
    /// media yet) is 403 `ACCESS_DENIED`/`VIDEO_NOT_PLAYABLE`.
    func playbackVideo(_ caller: PlaybackCaller, _ idOrReference: String) throws(HTTPError) -> CatalogVideo {
        let catalog = self.catalog
        guard let video = catalog.video(account: caller.account.id, idOrReference: idOrReference) else {
            if catalog.hasIncompleteVideo(account: caller.account.id, idOrReference: idOrReference) {
                throw Self.notPlayable(idOrReference, "has no renditions yet (ingest a source)")
            }
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound,
                                "No video \(idOrReference) in account \(caller.account.id)")
        }
        try PlaybackAuth.checkContent(caller.token, video)
        let now = clock.now()
        guard video.isPlayable(now: now) else {
            throw Self.notPlayable(idOrReference, video.state == .inactive ? "is INACTIVE"
                : "is outside its schedule at \(WireDate.string(from: now)) (the mock's clock)")
        }
        return video
    }

    private static func notPlayable(_ idOrReference: String, _ why: String) -> HTTPError {
        HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.videoNotPlayable, "Video \(idOrReference) is not playable: it \(why)")
    }

    /// Refuses a policy key that may not search (search and related videos need one).
    private func requireSearch(_ caller: PlaybackCaller) throws(HTTPError) {
        guard caller.searchEnabled else {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.api,
                                "This policy key is not search-enabled")
        }
    }

    private func searchResponse(_ caller: PlaybackCaller, _ request: HTTPRequest) throws -> HTTPResponse {
        try requireSearch(caller)
        let now = clock.now()
        let search = try CatalogSearch(query: request.queryValue("q") ?? "", now: now)
        let sort = try request.queryValue("sort").flatMap { $0.isEmpty ? nil : $0 }.map { try CatalogSort($0) }
        let catalog = self.catalog
        let (limit, offset) = try paging(request, defaultLimit: 20)
        let matches = try CatalogSort.order(catalog.videoOrder.compactMap { catalog.videos[$0] }
            .filter { $0.accountID == caller.account.id && $0.isPlayable(now: now) && search.matches($0) },
                                            search: search, sort: sort) { try plays(account: caller.account.id) }
        return videoArray(Array(matches.dropFirst(offset).prefix(limit)), caller: caller, request: request, wrappedWithCount: matches.count)
    }

    /// `GET …/videos/{id}/related`: the videos `RelatedVideos` picks, paged like a search.
    private func relatedResponse(_ caller: PlaybackCaller, _ request: HTTPRequest, idOrReference: String) throws(HTTPError) -> HTTPResponse {
        try requireSearch(caller)
        let (limit, offset) = try paging(request, defaultLimit: 20)
        let video = try playbackVideo(caller, idOrReference)
        let catalog = self.catalog
        let now = clock.now()
        let related = RelatedVideos.pick(for: video, among: catalog.videoOrder.compactMap { catalog.videos[$0] }.filter { $0.isPlayable(now: now) })
        return videoArray(Array(related.dropFirst(offset).prefix(limit)), caller: caller, request: request, wrappedWithCount: related.count)
    }

    /// Play counts from the analytics collector's `play_started` events of an account (the
    /// stand-in for the real service's play counts; see `CatalogSort`).
    func plays(account: String) throws(CatalogEditError) -> CatalogSort.Plays {
        let events = try CatalogEditError.storage { try tracker.events(TrackerFilter(accountID: account, event: "play_started"), limit: 100_000).events }
        return CatalogSort.Plays(events: events.map(\.event), now: clock.now())
    }

    /// Videos as a JSON array, or as `{"count":N,"videos":[…]}` when `count` is given.
    private func videoArray(_ videos: [CatalogVideo], caller: PlaybackCaller, request: HTTPRequest, wrappedWithCount count: Int?) -> HTTPResponse {
        let links = links(for: request)
        var body = count.map { Array(#"{"count":\#($0),"videos":["#.utf8) } ?? [UInt8(ascii: "[")]
        for (index, video) in videos.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += videoJSON(video, account: caller.account, links: links)
        }
        body += Array((count == nil ? "]" : "]}").utf8)
        return .bytes(body, contentType: "application/json; charset=utf-8")
    }

    private func playlistResponse(_ caller: PlaybackCaller, _ request: HTTPRequest, idOrReference: String) throws -> HTTPResponse {
        let catalog = self.catalog
        guard let playlist = catalog.playlist(account: caller.account.id, idOrReference: idOrReference) else {
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.playlistNotFound,
                                "No playlist \(idOrReference) in account \(caller.account.id)")
        }
        let (limit, offset) = try paging(request, defaultLimit: 20)
        let now = clock.now()
        let links = links(for: request)
        // A manual playlist's videos in its order; a smart one's by its rule; only playable ones either way.
        let members = try playlist.smart.map { smart in
            try smart.videos(among: catalog.videoOrder.compactMap { catalog.videos[$0] }
                .filter { $0.accountID == playlist.accountID && $0.isPlayable(now: now) }) { try plays(account: playlist.accountID) }
        } ?? playlist.videoIDs.compactMap { catalog.videos[$0] }.filter { $0.isPlayable(now: now) }
        let videos = members.dropFirst(offset).prefix(limit)
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
