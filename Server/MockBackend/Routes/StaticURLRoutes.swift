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
/// - `licenses/fairplay`, `licenses/cenc/clearkey`, `../fairplay_app_cert`: the licenses and the
///   certificate of DRM videos, authorised by the same JWT, as the real static URLs serve DRM VOD.
///
/// Manifests and VMAPs serve every protection (AES-128 keys and ClearKey license URLs are signed
/// inside them; FairPlay's `skd://` key is licensed at `licenses/fairplay`). The progressive MP4s
/// are clear videos' only: a protected video's answer 403 `ACCESS_DENIED`/`VIDEO_NOT_PLAYABLE`,
/// as DRM videos have no MP4 renditions on the real service.
extension MockBackendApp {
    static func addStaticURLRoutes(to router: inout Router<MockBackendApp>) {
        let base = "/playback/v1/accounts/:account/videos/:video/"
        router.add(["GET"], base + "master.m3u8") { app, request, p in
            try app.masterPlaylistResponse(app.staticVideo(request, p, protected: true), request)
        }
        router.add(["POST"], base + "licenses/fairplay") { app, request, p in
            let video = try app.staticVideo(request, p, protected: true)
            guard video.protection == .fairplay, let key = app.contentKeys[video.id] else {
                throw HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound, "Video \(video.id) is not a FairPlay video")
            }
            return try app.fairPlayLicense(request, accountID: video.accountID, videoUUID: video.uuid, keyID: key.keyID)
        }
        router.add(["POST"], base + "licenses/cenc/clearkey") { app, request, p in
            let video = try app.staticVideo(request, p, protected: true)
            return try app.clearKeyLicense(request, accountID: video.accountID, videoUUID: video.uuid)
        }
        router.add(["GET"], "/playback/v1/accounts/:account/fairplay_app_cert") { app, request, p in
            try app.refuseDuplicateParameters(request)
            _ = try PlaybackAuth.authenticateToken(request, accountID: p["account"], catalog: app.catalog,
                                                   restrictions: app.restrictions, now: app.clock.now())
            return try app.fairPlayCertificate(request, accountID: p["account"])
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
            let video = try app.staticVideo(request, p, protected: true)
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
        let (video, caller) = try staticVideoAndCaller(request, p, protected: true)
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
    /// a token that verifies for the account, a video it may see, and clear content unless
    /// `protected` ones are served too.
    private func staticVideo(_ request: HTTPRequest, _ p: RouteParameters, protected: Bool = false) throws(HTTPError) -> CatalogVideo {
        try staticVideoAndCaller(request, p, protected: protected).video
    }

    /// The same, with the caller the token made (its claims).
    private func staticVideoAndCaller(_ request: HTTPRequest, _ p: RouteParameters,
                                      protected: Bool) throws(HTTPError) -> (video: CatalogVideo, caller: PlaybackCaller) {
        try refuseDuplicateParameters(request)
        let caller = try PlaybackAuth.authenticateToken(request, accountID: p["account"], catalog: catalog,
                                                        restrictions: restrictions, now: clock.now())
        let video = try playbackVideo(caller, p["video"])
        guard protected || video.protection == .clear else {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.videoNotPlayable,
                            "Video \(video.id) is \(video.protection.rawValue): protected videos have no progressive MP4; "
                                + "play its master.m3u8 or manifest.mpd")
        }
        return (video, caller)
    }
}
