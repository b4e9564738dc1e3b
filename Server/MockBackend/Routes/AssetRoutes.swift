import Foundation
import MicroHTTP
import WireModels

/// Poster and thumbnail images, and sideband WebVTT text tracks. Public, like a CDN's.
extension MockBackendApp {
    static func addAssetRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/image/v1/:account/:video/:size/image.jpg") { app, request, p in
            guard let video = app.catalog.video(uuid: p["video"]), video.accountID == p["account"] else {
                throw HTTPError.notFound(request)
            }
            let path: String
            switch p["size"] {
            case "1280x720": path = video.asset.posterPath
            case "160x90": path = video.asset.thumbnailPath
            default: throw HTTPError.notFound(request)
            }
            guard let response = HTTPResponse.file(at: path, contentType: "image/jpeg") else { throw HTTPError.notFound(request) }
            return response
        }
        router.add(["GET"], "/text/v1/:account/:video/:language/subtitles.vtt") { app, request, p in
            guard let video = app.catalog.video(uuid: p["video"]), video.accountID == p["account"],
                  let track = video.sidebandSubtitles.lazy.map({ video.asset.subtitles[$0] }).first(where: { $0.language == p["language"] })
            else { throw HTTPError.notFound(request) }
            guard let response = HTTPResponse.file(at: track.sidebandPath, contentType: "text/vtt; charset=utf-8") else {
                throw HTTPError.notFound(request)
            }
            return response
        }
    }
}
