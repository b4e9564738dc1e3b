import MicroHTTP
import WireModels

/// A media body as the mock sends it (segments, playlists, AES-128 keys, images, sideband text
/// tracks): with RFC 9530's `Repr-Digest` of the whole representation and a strong `ETag` made
/// from that digest (`ReprDigest.etag`). The one place both headers are set.
///
/// They describe what the body should be, whatever happens to it next: a `206` keeps them (the
/// whole file's digest, not the range's) and so does a `304` (`HTTPResponse+Conditional`), and a
/// fault rule that cuts or corrupts the body leaves them as they were (`FaultInjector.apply`),
/// which is how a client tells.
enum MediaResponse {
    /// A whole file of `size` bytes whose digest is `digest`.
    static func file(path: String, size: UInt64, digest: ReprDigest, contentType: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: headers(contentType: contentType, digest: digest),
                     body: .file(path: path, offset: 0, length: size))
    }

    /// Bytes in memory whose digest is `digest` (computed once where the bytes are kept).
    static func bytes(_ bytes: [UInt8], digest: ReprDigest, contentType: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: headers(contentType: contentType, digest: digest), body: .bytes(bytes))
    }

    /// A body made for the range asked for (`RangedBody`) whose whole has the digest `digest`.
    static func ranged(_ body: RangedBody, digest: ReprDigest, contentType: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: headers(contentType: contentType, digest: digest), body: .ranged(body))
    }

    private static func headers(contentType: String, digest: ReprDigest) -> HTTPHeaders {
        var headers = HTTPHeaders([("Content-Type", contentType)])
        headers.add("ETag", digest.etag)
        headers.add("Repr-Digest", digest.headerValue)
        return headers
    }
}
