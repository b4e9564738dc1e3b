import MicroHTTP
import WireModels

/// The Playback API's MP4 sources (`high.mp4`, `low.mp4` of a clear video that plays its asset
/// once), signed like every media URL. The same files on static URLs, authorised by a JWT, are
/// `StaticURLRoutes`'.
extension MockBackendApp {
    static func addProgressiveMP4Routes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/media/v1/pmp4/static/clear/:account/:video/:name") { app, request, p in
            try app.links.verify(request, now: app.clock.now())
            guard let video = app.catalog.video(uuid: p["video"]), video.accountID == p["account"], video.protection == .clear,
                  p["name"].hasSuffix(".mp4"), let path = video.asset.progressivePaths[String(p["name"].dropLast(4))]
            else { throw HTTPError.notFound(request) }
            return try MediaResponse.fixtureFile(path, of: video, contentType: "video/mp4", request)
        }
    }
}
