import Foundation
import MicroHTTP
import WireModels

/// Static URL delivery, as the real Playback API offers it: URLs a client can write itself from
/// an account and a video id (or `ref:`), authorised by a playback-restriction JWT in the
/// `bcov_auth` query parameter (or `BCOV-Auth`, `Authorization: Bearer`) instead of a policy
/// key, with no Playback API call first:
///
/// - `master.m3u8`: the HLS master playlist, the same body as the signed one in `sources[].src`
///   (its rendition URLs are signed as usual);
/// - `high.mp4`, `low.mp4`: progressive MP4 of the highest and lowest rendition (made once by
///   the fixture script; one pass over the asset, however often the video repeats it);
/// - `manifest.mpd`: the DASH MPD, the same body as the signed one in `sources[].src` (404 when
///   the account does not deliver DASH).
///
/// - `hls.vmap`, `dash.vmap`: a VMAP for server-side ad insertion (`VMAPDocument`) whose content is
///   the HLS master or the DASH MPD; the JWT must carry `vod.ssai`, without it the documented 500.
///
/// Clear videos only: an AES-128 or FairPlay video answers 403 `ACCESS_DENIED`/`VIDEO_NOT_PLAYABLE`
/// (its protected sources come from the Playback API, with their keys and licenses).
extension MockBackendApp {
    static func addStaticURLRoutes(to router: inout Router<MockBackendApp>) {
        let base = "/playback/v1/accounts/:account/videos/:video/"
        router.add(["GET"], base + "master.m3u8") { app, request, p in
            try app.masterPlaylistResponse(app.staticVideo(request, p), request)
        }
        for name in ["high", "low"] {
            router.add(["GET"], base + name + ".mp4") { app, request, p in
                let video = try app.staticVideo(request, p)
                guard let path = video.asset.progressivePaths[name] else {
                    throw HTTPError(404, PlaybackAPIErrorCode.notFound, nil, "Video \(video.id) has no progressive \(name).mp4 rendition")
                }
                return try MediaResponse.fixtureFile(path, of: video, contentType: "video/mp4", request)
            }
        }
        router.add(["GET"], base + "manifest.mpd") { app, request, p in
            let video = try app.staticVideo(request, p)
            guard app.catalog.accounts[video.accountID]?.deliveryFormats.contains(.dash) == true, app.servesCMAF(video) else {
                throw HTTPError(404, PlaybackAPIErrorCode.notFound, nil,
                                "Video \(video.id) has no DASH manifest: account \(video.accountID) is not set up for DASH delivery")
            }
            return try app.dashManifestResponse(video, request)
        }
        router.add(["GET"], base + "hls.vmap") { app, request, p in try app.vmapResponse(request, p, dash: false) }
        router.add(["GET"], base + "dash.vmap") { app, request, p in try app.vmapResponse(request, p, dash: true) }
    }

    /// `hls.vmap` or `dash.vmap`: the JWT's `vod.ssai` names the ad configuration; the content
    /// URL is the video's signed master or MPD.
    private func vmapResponse(_ request: HTTPRequest, _ p: RouteParameters, dash: Bool) throws(HTTPError) -> HTTPResponse {
        let (video, caller) = try staticVideoAndCaller(request, p)
        guard let adConfig = caller.token?.ssaiConfigID, !adConfig.isEmpty else {
            throw HTTPError(500, PlaybackAPIErrorCode.serverError, nil,
                            "A VMAP needs a JWT whose vod.ssai claim names an SSAI ad configuration; this token has none")
        }
        let formats = catalog.accounts[video.accountID]?.deliveryFormats ?? []
        guard dash ? formats.contains(.dash) && servesCMAF(video) : formats.contains(.tsHLS) else {
            throw HTTPError(404, PlaybackAPIErrorCode.notFound, nil,
                            "Video \(video.id) has no \(dash ? "DASH" : "HLS") source: account \(video.accountID) does not deliver it")
        }
        let now = clock.now()
        let expiry = Links.expiry(now: now, ttl: catalog.accounts[video.accountID]?.manifestTokenTTL ?? 21600)
        let links = links(for: request)
        let content = links.signed(dash ? Links.dashManifestPath(video) : Links.masterPath(video), expiresAt: expiry)
        let body = Array(VMAPDocument(contentURL: content, adConfigID: adConfig, video: video).render().utf8)
        return MediaResponse.bytes(body, digest: ReprDigest(of: body), contentType: VMAPDocument.contentType)
    }

    /// The checks every static URL shares, in the Playback API's order: no repeated parameters,
    /// a token that verifies for the account, a video it may see, and clear content.
    private func staticVideo(_ request: HTTPRequest, _ p: RouteParameters) throws(HTTPError) -> CatalogVideo {
        try staticVideoAndCaller(request, p).video
    }

    /// The same, with the caller the token made (its claims).
    private func staticVideoAndCaller(_ request: HTTPRequest, _ p: RouteParameters) throws(HTTPError) -> (video: CatalogVideo, caller: PlaybackCaller) {
        try refuseDuplicateParameters(request)
        let caller = try PlaybackAuth.authenticateToken(request, accountID: p["account"], catalog: catalog,
                                                        restrictions: restrictions, now: clock.now())
        let video = try playbackVideo(caller, p["video"])
        guard video.protection == .clear else {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.videoNotPlayable,
                            "Static URL delivery serves clear videos only; video \(video.id) is \(video.protection.rawValue): "
                                + "fetch it from the Playback API for its protected sources")
        }
        return (video, caller)
    }
}
