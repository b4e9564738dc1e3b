import Foundation
import MicroHTTP
import SystemFiles
import WireModels

/// Poster and thumbnail images, and sideband WebVTT text tracks. Public, like a CDN's. It
/// reads the catalog, nothing else.
struct AssetRoutes: Sendable {
    /// The catalog as served now.
    let live: LiveCatalog

    func add(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/image/v1/:account/:video/:size/image.jpg") { _, request, p in
            guard let video = live.snapshot.catalog.video(uuid: p["video"]), video.accountID == p["account"] else {
                throw HTTPError.notFound(request)
            }
            // The poster's and thumbnail's sizes and the others clients derive from them
            // (README, "Images"); any other size is a 404, as the real service refuses it.
            guard let path = video.asset.imagePaths[p["size"]] else { throw HTTPError.notFound(request) }
            return try MediaResponse.fixtureFile(path, of: video, contentType: "image/jpeg", request)
        }
        router.add(["GET"], "/text/v1/:account/:video/:language/subtitles.vtt") { _, request, p in
            guard let video = live.snapshot.catalog.video(uuid: p["video"]), video.accountID == p["account"],
                  let track = video.sidebandSubtitles.lazy.map({ video.asset.subtitles[$0] }).first(where: { $0.language == p["language"] })
            else { throw HTTPError.notFound(request) }
            return try MediaResponse.fixtureFile(track.sidebandPath, of: video, contentType: "text/vtt; charset=utf-8", request)
        }
    }
}

extension MediaResponse {
    /// A fixture file of `video`'s asset served whole, with its digest (hashed on first use);
    /// a 404 when it is not a readable regular file.
    static func fixtureFile(_ path: String, of video: CatalogVideo, contentType: String,
                            _ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        guard let status = FileStatus(path: path), status.isRegularFile,
              let digest = try? video.asset.fileDigests.digest(ofFile: path)
        else { throw HTTPError.notFound(request) }
        return file(path: path, size: UInt64(status.size), digest: digest, contentType: contentType)
    }
}
