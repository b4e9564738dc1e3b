import Foundation
import WireModels

/// Makes a media asset from an ingest request, in a folder of its own that the caller renames
/// into the media folder when everything is there: the source fetched (or read from an allowed
/// folder), transcoded by one ffmpeg run into the profile's ladder (H.264 + AAC, 2 s MPEG-TS
/// segments, one audio rendition per audio stream of the source) and an HEVC ladder of the same
/// sizes (the CMAF sources' `hvc1` renditions), the poster and thumbnail
/// captured at the middle or made from the given images, the WebVTT text tracks fetched and
/// cut into segments, and `asset.json` written as `MediaAsset` reads it (the fixture layout).
struct IngestTranscoder {
    let tools: Subprocesses
    let allowedDirectories: [URL]

    /// What the asset holds, for the notifications and the video.
    struct Made {
        struct Rendition { var id: String; var kilobitsPerSecond: Int; var width: Int?; var height: Int?; var language: String? }
        var audio: [Rendition]
        var video: [Rendition]
        var textTracks: [IngestRequest.TextTrack]
        var duration: Double
    }

    static let segmentSeconds = 2

    func make(_ request: IngestRequest, in directory: URL) throws(IngestFailure) -> Made {
        guard let profile = IngestProfile.named(request.profile) else { throw IngestFailure("ProfileError", "no profile \(request.profile)") }
        let fm = FileManager.default
        try? fm.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = try fetch(request.masterURL, to: directory.appendingPathComponent(".source"))
        let probe = try probeSource(source)

        // The ladder: the profile's video renditions no taller than the source (at least the smallest).
        let ladder = profile.renditions.filter { $0.kind == .video }
        var videos = ladder.filter { ($0.height ?? 0) <= probe.height }
        if videos.isEmpty, let first = ladder.first { videos = [first] }
        let audioKbps = profile.renditions.filter { $0.kind == .audio }.map(\.kilobitsPerSecond).max() ?? 128
        var languages: [String] = []
        for tag in probe.audioLanguages {
            var language = tag, n = 2
            while languages.contains(language) { language = "\(tag)\(n)"; n += 1 }
            languages.append(language)
        }

        var arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", source.path]
        let hls = { (dir: String) -> [String] in
            ["-f", "hls", "-hls_time", "\(Self.segmentSeconds)", "-hls_playlist_type", "vod", "-hls_segment_type", "mpegts",
             "-hls_segment_filename", directory.appendingPathComponent("\(dir)/seg_%03d.ts").path,
             directory.appendingPathComponent("\(dir)/index.m3u8").path]
        }
        // One output per rendition: `codec` at `kbps` (capped at 1.5x), scaled to the rendition's
        // height, a keyframe on every segment boundary.
        let video = { (rendition: IngestRendition, dir: String, kbps: Int, codec: [String]) -> [String] in
            try? fm.createDirectory(at: directory.appendingPathComponent(dir), withIntermediateDirectories: true)
            return ["-map", "0:v:0", "-an", "-sn", "-dn", "-map_metadata", "-1"] + codec
                + ["-pix_fmt", "yuv420p", "-vf", "scale=-2:\(rendition.height ?? 270)",
                   "-b:v", "\(kbps)k", "-maxrate", "\(kbps * 3 / 2)k", "-bufsize", "\(kbps * 2)k",
                   "-force_key_frames", "expr:gte(t,n_forced*\(Self.segmentSeconds))"] + hls(dir)
        }
        var videoDirs: [String] = []
        for rendition in videos {
            let dir = "video/\(rendition.kilobitsPerSecond)"
            videoDirs.append(dir)
            arguments += video(rendition, dir, rendition.kilobitsPerSecond,
                               ["-c:v", "libx264", "-preset", "veryfast", "-profile:v", rendition.h264Profile ?? "main", "-sc_threshold", "0"])
        }
        // The HEVC ladder beside it (the CMAF sources of an account with HEVC delivery list it), the
        // same sizes at 60 % of the H.264 rate.
        var hevcDirs: [String] = []
        for rendition in videos {
            let kbps = max(1, rendition.kilobitsPerSecond * 3 / 5)
            let dir = "video-hevc/\(kbps)"
            hevcDirs.append(dir)
            arguments += video(rendition, dir, kbps,
                               ["-c:v", "libx265", "-preset", "veryfast", "-profile:v", "main", "-x265-params", "scenecut=0:open-gop=0:log-level=error"])
        }
        for (index, language) in languages.enumerated() {
            let dir = "audio/\(language)"
            try? fm.createDirectory(at: directory.appendingPathComponent(dir), withIntermediateDirectories: true)
            arguments += ["-map", "0:a:\(index)", "-vn", "-sn", "-dn", "-map_metadata", "-1",
                          "-c:a", "aac", "-b:a", "\(audioKbps)k", "-ar", "48000", "-ac", "2"] + hls(dir)
        }
        let run = try tools.run("ffmpeg", arguments)
        guard run.status == 0 else { throw IngestFailure("TranscodeError", "ffmpeg could not transcode the source: \(run.stderrTail)") }

        // Every rendition gets as many segments as the shortest has (an audio tail of a few ms past the video's end is dropped).
        let dirs = videoDirs + hevcDirs + languages.map { "audio/\($0)" }
        var playlists: [String: [WireModels.Segment]] = [:]
        for dir in dirs {
            let url = directory.appendingPathComponent("\(dir)/index.m3u8")
            guard let text = try? String(contentsOf: url, encoding: .utf8), let playlist = try? MediaPlaylist(parsing: text) else {
                throw IngestFailure("TranscodeError", "ffmpeg wrote no playlist for \(dir)")
            }
            playlists[dir] = playlist.segments
        }
        let count = playlists.values.map(\.count).min() ?? 0
        guard count > 0 else { throw IngestFailure("TranscodeError", "the source gave no segments (is it empty?)") }
        for dir in dirs {
            let segments = Array(playlists[dir]!.prefix(count))
            for extra in playlists[dir]!.dropFirst(count) { try? fm.removeItem(at: directory.appendingPathComponent("\(dir)/\(extra.uri)")) }
            try write(Self.playlist(segments.map { ($0.uri, $0.duration) }), to: directory.appendingPathComponent("\(dir)/index.m3u8"))
        }
        let videoSegments = playlists[videoDirs[0]]!.prefix(count).map(\.duration)
        let duration = videoSegments.reduce(0, +)

        // Measured from the output: the first video PTS, each rendition's size and avc1 codec string.
        let firstSegment = directory.appendingPathComponent("\(videoDirs[0])/\(playlists[videoDirs[0]]![0].uri)")
        let mpegtsStart = try firstVideoPTS(firstSegment)
        var videoJSON: [[String: Any]] = [], madeVideos: [Made.Rendition] = []
        for (rendition, dir) in zip(videos, videoDirs) {
            let info = try probeVideoStream(directory.appendingPathComponent("\(dir)/\(playlists[dir]![0].uri)"))
            videoJSON.append(["name": "\(info.width)x\(info.height)", "dir": dir, "width": info.width, "height": info.height,
                              "frame_rate": info.frameRate, "codecs": info.codecs, "bitrate": rendition.kilobitsPerSecond * 1000])
            madeVideos.append(.init(id: rendition.id, kilobitsPerSecond: rendition.kilobitsPerSecond, width: info.width, height: info.height))
        }
        var hevcJSON: [[String: Any]] = []
        for dir in hevcDirs {
            let info = try probeVideoStream(directory.appendingPathComponent("\(dir)/\(playlists[dir]![0].uri)"))
            hevcJSON.append(["name": "\(info.width)x\(info.height)", "dir": dir, "width": info.width, "height": info.height,
                             "frame_rate": info.frameRate])
        }
        let audioJSON: [[String: Any]] = languages.map {
            ["language": $0, "name": Locale(identifier: "en").localizedString(forLanguageCode: $0) ?? $0, "dir": "audio/\($0)",
             "codecs": "mp4a.40.2", "channels": "2", "bitrate": audioKbps * 1000]
        }

        // Poster and thumbnail: from the given images, else a frame at the middle.
        let middle = String(format: "%.3f", probe.duration / 2)
        for (label, url, width, height) in [("poster", request.posterURL, 1280, 720), ("thumbnail", request.thumbnailURL, 160, 90)] {
            var input = ["-ss", middle, "-i", source.path]
            if let url { input = ["-i", try fetch(url, to: directory.appendingPathComponent(".\(label).source")).path] }
            let fit = "scale=\(width):\(height):force_original_aspect_ratio=decrease,pad=\(width):\(height):(ow-iw)/2:(oh-ih)/2,setsar=1,format=yuvj420p"
            let image = try tools.run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + input
                                      + ["-frames:v", "1", "-vf", fit, "-update", "1", directory.appendingPathComponent("\(label).jpg").path])
            guard image.status == 0 else { throw IngestFailure("ImageError", "cannot make the \(label): \(image.stderrTail)") }
        }

        // The thumbnail track's sprites, when images are captured (capture-images, true unless a poster or
        // thumbnail is supplied): a 160x90 tile every 5 s, or 10 s from an hour on (as Dynamic Delivery
        // makes them), 5x2 tiles per sprite.
        var thumbnailsJSON: [String: Any]?
        if request.captureImages {
            let interval = probe.duration >= 3600 ? 10 : 5
            try? fm.createDirectory(at: directory.appendingPathComponent("thumbnails"), withIntermediateDirectories: true)
            let tiles = "fps=1/\(interval):round=down,scale=160:90:force_original_aspect_ratio=decrease,pad=160:90:(ow-iw)/2:(oh-ih)/2,setsar=1,"
                + "tile=5x2,format=yuvj420p"
            let sprites = try tools.run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", source.path, "-map", "0:v:0",
                                                   "-vf", tiles, "-q:v", "4", directory.appendingPathComponent("thumbnails/sprite_%03d.jpg").path])
            guard sprites.status == 0 else { throw IngestFailure("ImageError", "cannot make the thumbnail sprites: \(sprites.stderrTail)") }
            let made = ((try? fm.contentsOfDirectory(atPath: directory.appendingPathComponent("thumbnails").path)) ?? [])
                .filter { $0.hasPrefix("sprite_") && $0.hasSuffix(".jpg") }.sorted()
            if !made.isEmpty {
                thumbnailsJSON = ["interval": Double(interval), "width": 160, "height": 90, "columns": 5, "rows": 2,
                                  "sprites": made.map { "thumbnails/\($0)" }]
            }
        }

        // Text tracks: fetched, checked, kept whole (sideband) and cut into the video's segments.
        var subtitleJSON: [[String: Any]] = []
        for track in request.textTracks {
            let whole = try fetch(track.url, to: directory.appendingPathComponent("subtitles/\(track.srclang).vtt"))
            guard let text = try? String(contentsOf: whole, encoding: .utf8), text.hasPrefix("WEBVTT") || text.hasPrefix("\u{FEFF}WEBVTT") else {
                throw IngestFailure("TextTrackError", "text track \(track.srclang) (\(track.url)) is not WebVTT")
            }
            let cues = WebVTTCues(text)
            var start = 0.0, names: [(String, Double)] = []
            for (index, length) in videoSegments.enumerated() {
                let name = String(format: "seg_%03d.vtt", index)
                let inside = cues.blocks.filter { $0.start < start + length && $0.end > start }.map(\.text)
                try write("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:\(mpegtsStart),LOCAL:00:00:00.000\n\n" + inside.map { $0 + "\n\n" }.joined(),
                          to: directory.appendingPathComponent("subtitles/\(track.srclang)/\(name)"))
                names.append((name, length))
                start += length
            }
            try write(Self.playlist(names), to: directory.appendingPathComponent("subtitles/\(track.srclang)/index.m3u8"))
            subtitleJSON.append(["language": track.srclang, "name": track.label ?? track.srclang, "dir": "subtitles/\(track.srclang)",
                                 "sideband": "subtitles/\(track.srclang).vtt"])
        }

        var manifest: [String: Any] = ["name": directory.lastPathComponent, "segment_duration": Double(Self.segmentSeconds),
                                       "segment_count": count, "mpegts_start": mpegtsStart, "video": videoJSON, "hevc": hevcJSON, "audio": audioJSON,
                                       "subtitles": subtitleJSON, "poster": "poster.jpg", "thumbnail": "thumbnail.jpg"]
        if let thumbnailsJSON { manifest["thumbnails"] = thumbnailsJSON }
        guard let data = try? JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys]) else {
            throw IngestFailure("InternalError", "cannot encode asset.json")
        }
        try write(data, to: directory.appendingPathComponent("asset.json"))
        for leftover in [".source", ".poster.source", ".thumbnail.source"] { try? fm.removeItem(at: directory.appendingPathComponent(leftover)) }
        return Made(audio: languages.map { .init(id: "default/audio\(audioKbps)", kilobitsPerSecond: audioKbps, language: $0) },
                    video: madeVideos, textTracks: request.textTracks, duration: duration)
    }

    /// A VOD media playlist naming `segments`.
    static func playlist(_ segments: [(uri: String, duration: Double)]) -> String {
        let target = Int((segments.map(\.duration).max() ?? 0).rounded(.up))
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(target)\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for segment in segments { text += String(format: "#EXTINF:%.6f,\n", segment.duration) + segment.uri + "\n" }
        return text + "#EXT-X-ENDLIST\n"
    }

    /// The file behind `url`: an allowed local file as it is, an http(s) URL downloaded to `destination`.
    func fetch(_ text: String, to destination: URL) throws(IngestFailure) -> URL {
        guard let url = URL(string: text) else { throw IngestFailure("SourceError", "'\(text)' is not a URL") }
        try? FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        if url.scheme?.lowercased() == "file" {
            guard let path = IngestRequest.allowedPath(url.path, allowedDirectories: allowedDirectories) else {
                throw IngestFailure("SourceError", "\(url.path) is not under an --ingest-allow-dir folder")
            }
            guard FileManager.default.isReadableFile(atPath: path) else { throw IngestFailure("SourceError", "cannot read \(path)") }
            if destination.lastPathComponent.hasPrefix(".") { return URL(fileURLWithPath: path) }
            do { try FileManager.default.copyItem(at: URL(fileURLWithPath: path), to: destination) } catch {
                throw IngestFailure("SourceError", "cannot copy \(path): \(error)")
            }
            return destination
        }
        let output = try tools.run("curl", ["--fail", "--silent", "--show-error", "--location", "--proto", "=http,https", "--proto-redir", "=http,https",
                                             "--max-time", "3600", "--output", destination.path, text])
        guard output.status == 0 else {
            throw IngestFailure(output.status == 6 ? "UnableToResolveHostError" : "SourceError",
                                "There was a problem fetching \(text): \(output.stderrTail.isEmpty ? "curl exit \(output.status)" : output.stderrTail)")
        }
        return destination
    }

    private struct SourceProbe { var height: Int; var duration: Double; var audioLanguages: [String] }

    /// The source's video height, duration and audio streams' languages; a file ffprobe cannot
    /// read, or one without video, fails the job.
    private func probeSource(_ source: URL) throws(IngestFailure) -> SourceProbe {
        let output = try tools.run("ffprobe", ["-v", "error", "-show_entries", "format=duration:stream=codec_type,height:stream_tags=language",
                                               "-of", "json", source.path])
        guard output.status == 0, let json = try? JSONSerialization.jsonObject(with: output.stdout) as? [String: Any] else {
            throw IngestFailure("SourceError", "the source is not a media file ffmpeg can read: \(output.stderrTail)")
        }
        let streams = json["streams"] as? [[String: Any]] ?? []
        guard let video = streams.first(where: { $0["codec_type"] as? String == "video" }), let height = video["height"] as? Int, height > 0 else {
            throw IngestFailure("SourceError", "the source has no video stream")
        }
        let duration = Double((json["format"] as? [String: Any])?["duration"] as? String ?? "") ?? 0
        guard duration > 0 else { throw IngestFailure("SourceError", "the source has no duration") }
        let languages = streams.filter { $0["codec_type"] as? String == "audio" }.map { stream -> String in
            let tag = ((stream["tags"] as? [String: Any])?["language"] as? String)?.lowercased() ?? "und"
            return tag.isEmpty ? "und" : tag
        }
        return SourceProbe(height: height, duration: duration, audioLanguages: languages)
    }

    /// The lowest video PTS of a TS segment (the first presented frame).
    private func firstVideoPTS(_ segment: URL) throws(IngestFailure) -> Int {
        let output = try tools.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts", "-of", "csv=p=0", segment.path])
        let values = String(decoding: output.stdout, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard output.status == 0, let first = values.min() else { throw IngestFailure("TranscodeError", "no video timestamps in \(segment.lastPathComponent)") }
        return first
    }

    /// A video rendition's size, frame rate and RFC 6381 codec string, from its first segment (the
    /// codec string is an H.264 one; an HEVC rendition's comes from its SPS when it is packaged).
    private func probeVideoStream(_ segment: URL) throws(IngestFailure) -> (width: Int, height: Int, frameRate: Double, codecs: String) {
        let output = try tools.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height,r_frame_rate,profile,level",
                                               "-of", "json", segment.path])
        guard output.status == 0, let json = try? JSONSerialization.jsonObject(with: output.stdout) as? [String: Any],
              let stream = (json["streams"] as? [[String: Any]])?.first, let width = stream["width"] as? Int, let height = stream["height"] as? Int else {
            throw IngestFailure("TranscodeError", "cannot read the transcoded video: \(output.stderrTail)")
        }
        let rate = (stream["r_frame_rate"] as? String ?? "25/1").split(separator: "/").compactMap { Double($0) }
        let frameRate = rate.count == 2 && rate[1] > 0 ? (rate[0] / rate[1] * 1000).rounded() / 1000 : 25
        let profile: String
        switch stream["profile"] as? String {
        case "Constrained Baseline": profile = "42c0"
        case "Baseline": profile = "4200"
        case "High": profile = "6400"
        default: profile = "4d40"
        }
        let level = stream["level"] as? Int ?? 30
        return (width, height, frameRate, "avc1." + profile + String(format: "%02x", level))
    }

    private func write(_ text: String, to url: URL) throws(IngestFailure) { try write(Data(text.utf8), to: url) }

    private func write(_ data: Data, to url: URL) throws(IngestFailure) {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        } catch {
            throw IngestFailure("InternalError", "cannot write \(url.path): \(error)")
        }
    }
}

/// The cues of a WebVTT file: each block with a timing line, its start and end in seconds.
struct WebVTTCues {
    struct Cue { var start: Double; var end: Double; var text: String }
    var blocks: [Cue] = []

    init(_ text: String) {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        for block in normalized.components(separatedBy: "\n\n") {
            let trimmed = block.trimmingCharacters(in: .newlines)
            guard let timing = trimmed.split(separator: "\n").first(where: { $0.contains("-->") }) else { continue }
            let parts = timing.components(separatedBy: "-->")
            guard parts.count == 2, let start = Self.seconds(parts[0]),
                  let end = Self.seconds(String(parts[1].trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")) else { continue }
            blocks.append(Cue(start: start, end: end, text: trimmed))
        }
    }

    /// `hh:mm:ss.ttt` or `mm:ss.ttt` in seconds.
    static func seconds(_ text: String) -> Double? {
        let fields = text.trimmingCharacters(in: .whitespaces).split(separator: ":")
        guard (2...3).contains(fields.count), let last = Double(fields.last!) else { return nil }
        let whole = fields.dropLast().compactMap { Int($0) }
        guard whole.count == fields.count - 1 else { return nil }
        return whole.reduce(0) { $0 * 60 + Double($1) } * 60 + last
    }
}
