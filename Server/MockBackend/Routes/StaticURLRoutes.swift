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
    }

    /// The checks every static URL shares, in the Playback API's order: no repeated parameters,
    /// a token that verifies for the account, a video it may see, and clear content.
    private func staticVideo(_ request: HTTPRequest, _ p: RouteParameters) throws(HTTPError) -> CatalogVideo {
        try refuseDuplicateParameters(request)
        let caller = try PlaybackAuth.authenticateToken(request, accountID: p["account"], catalog: catalog,
                                                        restrictions: restrictions, now: clock.now())
        let video = try playbackVideo(caller, p["video"])
        guard video.protection == .clear else {
            throw HTTPError(403, PlaybackAPIErrorCode.accessDenied, PlaybackAPIErrorCode.videoNotPlayable,
                            "Static URL delivery serves clear videos only; video \(video.id) is \(video.protection.rawValue): "
                                + "fetch it from the Playback API for its protected sources")
        }
        return video
    }
}
