import Foundation
import WireModels

/// A video's thumbnail track as the package keeps it (Dynamic Delivery's scrubbing previews:
/// the `text_tracks` entry labelled `thumbnails`, a WebVTT file whose cues are sprite image
/// URLs with a `#xywh=` fragment picking a tile): the sprites in `thumbnails/`, each once, and
/// a local WebVTT whose cues name them by relative path, written last (its presence says the
/// track is whole). Pure: the fetching is `OfflineDownloads.fetchThumbnails`.
enum ThumbnailTrackFile {
    /// The local WebVTT, inside the package folder.
    static let trackFile = "thumbnails/thumbnails.vtt"
    /// The folder of the sprites (and the WebVTT) inside the package folder.
    static let folder = "thumbnails"

    /// One cue: its times in seconds, its image URL (without the fragment) and tile.
    struct Cue: Sendable, Equatable {
        var start: Double
        var end: Double
        var image: String
        var tile: OfflineThumbnail.Tile?
    }

    /// Why a thumbnail WebVTT cannot be kept.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// The video's thumbnail track, when the download asked for it and the video has one.
    static func track(of video: PlaybackVideo, asked: Bool) -> TextTrack? {
        guard asked else { return nil }
        return video.textTracks.first { $0.isThumbnailTrack && !$0.src.isEmpty }
    }

    /// Bytes the track adds to a download's estimate: its `bandwidth` over the video's duration.
    static func estimatedBytes(of video: PlaybackVideo, asked: Bool) -> Int64 {
        guard let track = track(of: video, asked: asked), let bandwidth = track.bandwidth, bandwidth > 0 else { return 0 }
        return Int64((Double(bandwidth) * Double(video.video.duration) / 1000 / 8).rounded(.up))
    }

    /// The cues of a WebVTT body: blocks separated by blank lines, a cue's timing line
    /// (`[HH:]MM:SS.mmm --> [HH:]MM:SS.mmm`, settings after it ignored) followed by its payload,
    /// one URL with an optional `#xywh=x,y,w,h`. The header, NOTE, STYLE and REGION blocks are
    /// skipped. Throws for a body that is not WebVTT, a cue without an image, an unusable time
    /// or tile, or no cue at all.
    static func cues(_ body: String) throws(Malformed) -> [Cue] {
        let text = body.hasPrefix("\u{FEFF}") ? String(body.dropFirst()) : body
        guard text.hasPrefix("WEBVTT") else { throw Malformed(description: "it does not start with WEBVTT") }
        var cues: [Cue] = []
        let blocks = text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n\n")
        for block in blocks.dropFirst() {
            let lines = block.split(separator: "\n", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
            guard let timing = lines.firstIndex(where: { $0.contains("-->") }) else { continue }
            let times = lines[timing].components(separatedBy: "-->").map { $0.trimmingCharacters(in: .whitespaces) }
            guard times.count == 2, let start = time(times[0]),
                  let end = time(times[1].split(separator: " ").first.map(String.init) ?? ""), end >= start else {
                throw Malformed(description: "a cue's times are unusable: \(lines[timing])")
            }
            guard timing + 1 < lines.count, !lines[timing + 1].isEmpty else {
                throw Malformed(description: "the cue at \(times[0]) names no image")
            }
            let payload = lines[timing + 1]
            let parts = payload.split(separator: "#", maxSplits: 1).map(String.init)
            var tile: OfflineThumbnail.Tile?
            if parts.count == 2 {
                let numbers = parts[1].hasPrefix("xywh=") ? parts[1].dropFirst(5).split(separator: ",").compactMap { Int($0) } : []
                guard numbers.count == 4, numbers.allSatisfy({ $0 >= 0 }), numbers[2] > 0, numbers[3] > 0 else {
                    throw Malformed(description: "the cue at \(times[0]) has an unusable tile: \(payload)")
                }
                tile = OfflineThumbnail.Tile(x: numbers[0], y: numbers[1], width: numbers[2], height: numbers[3])
            }
            cues.append(Cue(start: start, end: end, image: parts[0], tile: tile))
        }
        guard !cues.isEmpty else { throw Malformed(description: "it has no cue") }
        return cues
    }

    /// The remote track's cues made local: each distinct image (resolved against the track's
    /// URL, http or https only) gets a file `thumbnails/sprite-N.ext` (its extension kept when
    /// it has a short one, else `.jpg`), in the order first named. Returns the sprites to fetch
    /// and the local WebVTT.
    static func localize(_ body: String, trackURL: String) throws(Malformed) -> (sprites: [(url: String, file: String)], local: String) {
        var sprites: [(url: String, file: String)] = [], fileOfURL: [String: String] = [:]
        var local = "WEBVTT\n"
        for cue in try cues(body) {
            let url = DownloadPlanner.resolve(cue.image, against: trackURL)
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw Malformed(description: "the cue at \(timestamp(cue.start)) names an image that is not an http(s) URL: \(cue.image)")
            }
            let file: String
            if let known = fileOfURL[url] {
                file = known
            } else {
                file = "sprite-\(sprites.count + 1).\(imageExtension(of: url))"
                fileOfURL[url] = file
                sprites.append((url, "\(folder)/\(file)"))
            }
            local += "\n\(timestamp(cue.start)) --> \(timestamp(cue.end))\n\(file)"
            if let tile = cue.tile { local += "#xywh=\(tile.x),\(tile.y),\(tile.width),\(tile.height)" }
            local += "\n"
        }
        return (sprites, local)
    }

    /// The package's thumbnails from its local WebVTT (`folder` is the package folder); nil when
    /// the package has none, or its WebVTT cannot be read.
    static func thumbnails(inPackage folder: URL, body: String) -> [OfflineThumbnail]? {
        guard let cues = try? cues(body) else { return nil }
        let base = folder.appendingPathComponent(self.folder, isDirectory: true)
        return cues.map { cue in
            OfflineThumbnail(start: cue.start, end: cue.end, imageFile: base.appendingPathComponent(cue.image), tile: cue.tile)
        }
    }

    /// The sprite files a local WebVTT names, inside the package folder.
    static func spriteFiles(local body: String) -> [String] {
        var files: [String] = []
        for cue in (try? cues(body)) ?? [] where !files.contains("\(folder)/\(cue.image)") { files.append("\(folder)/\(cue.image)") }
        return files
    }

    /// `jpg`, `png`, `webp` from the URL's path; `jpg` without a usable one.
    private static func imageExtension(of url: String) -> String {
        let name = URLToken.path(ofURL: url).split(separator: "/").last.map(String.init) ?? ""
        guard let dot = name.lastIndex(of: ".") else { return "jpg" }
        let ext = name[name.index(after: dot)...].lowercased()
        return !ext.isEmpty && ext.count <= 4 && ext.allSatisfy({ $0.isLetter || $0.isNumber }) ? ext : "jpg"
    }

    /// Seconds from `[HH:]MM:SS.mmm`.
    static func time(_ text: String) -> Double? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (2 ... 3).contains(fields.count), let seconds = Double(fields[fields.count - 1]), seconds >= 0, seconds < 60 else { return nil }
        let whole = fields.dropLast().map { Int($0) }
        guard whole.allSatisfy({ $0 != nil && $0! >= 0 }) else { return nil }
        let minutes = whole.last!!, hours = fields.count == 3 ? whole[0]! : 0
        guard minutes < 60 else { return nil }
        return Double(hours * 3600 + minutes * 60) + seconds
    }

    /// `HH:MM:SS.mmm`.
    static func timestamp(_ seconds: Double) -> String {
        let ms = Int((seconds * 1000).rounded())
        let (h, m, s) = (ms / 3_600_000, ms / 60000 % 60, ms / 1000 % 60)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let milli = ms % 1000
        return "\(two(h)):\(two(m)):\(two(s)).\(milli < 10 ? "00" : milli < 100 ? "0" : "")\(milli)"
    }
}
