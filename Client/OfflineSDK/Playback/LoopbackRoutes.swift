import Foundation
import MicroHTTP

/// What the loopback server of a playback session answers: under `/{secret}/`, the package's
/// playlists as served clear, its clear segments, sideband subtitles (with a playlist each, so a
/// player finds them through the master; the session's subtitle language marked default), images
/// and the thumbnail track's WebVTT and sprites. Nothing else is reachable: every other
/// path, or a wrong secret, is 404.
enum LoopbackRoutes {
    static let playlistType = "application/vnd.apple.mpegurl"

    static func answer(_ request: HTTPRequest, secret: String, reader: ClearMediaReader,
                       sideband: [(language: String, file: String)], defaultSubtitle: String? = nil,
                       images: [String]) async -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPResponse(status: 405, headers: HTTPHeaders([("Allow", "GET, HEAD")]))
        }
        let segments = request.pathSegments
        guard segments.count >= 2, segments[0] == secret else { return notFound }
        let path = segments.dropFirst().joined(separator: "/")

        if path.hasSuffix(".m3u8") {
            if let track = sideband.first(where: { playlistPath($0.file) == path }) {
                return .text(sidebandPlaylist(file: track.file, duration: videoDuration(reader)), contentType: playlistType)
            }
            let listed = sideband.map { (language: $0.language, uri: playlistPath($0.file)) }
            guard let text = reader.clearPlaylist(path, sideband: listed, defaultSubtitle: defaultSubtitle) else { return notFound }
            return .text(text, contentType: playlistType)
        }
        if let (track, sequence) = reader.segment(at: path) {
            do {
                let bytes = try await reader.segment(track, sequence)
                return .bytes(bytes, contentType: track.contentType)
            } catch {
                return .text("\(error.message)\n", status: status(for: error))
            }
        }
        if sideband.contains(where: { $0.file == path }) || images.contains(path) {
            let type = path.hasSuffix(".vtt") ? "text/vtt" : path.hasSuffix(".png") ? "image/png" : path.hasSuffix(".webp") ? "image/webp" : "image/jpeg"
            return HTTPResponse.file(at: reader.folder + "/" + path, contentType: type) ?? notFound
        }
        return notFound
    }

    static let notFound = HTTPResponse.text("not found\n", status: 404)

    /// How a failed segment read is answered: missing or never downloaded 404, a license that
    /// cannot decrypt it 403, anything else (the network, the download) 503.
    static func status(for error: OfflineVideoError) -> Int {
        switch error.reason {
        case .filesMissing, .notDownloaded: 404
        case .license: 403
        default: 503
        }
    }

    /// `sideband/en.vtt` → `sideband/en.m3u8`.
    static func playlistPath(_ file: String) -> String {
        String(file.dropLast(4)) + ".m3u8"
    }

    /// A media playlist of one WebVTT segment lasting the whole video.
    static func sidebandPlaylist(file: String, duration: Double) -> String {
        let name = file.split(separator: "/").last.map(String.init) ?? file
        return """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:\(Int(duration.rounded(.up)))
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXTINF:\(String(format: "%.3f", duration)),
            \(name)
            #EXT-X-ENDLIST

            """
    }

    static func videoDuration(_ reader: ClearMediaReader) -> Double {
        reader.tracks.first { $0.selection.kind == .video }?.durations.reduce(0, +) ?? 0
    }
}
