@testable import CMAF
import Foundation
import TestKit
import Testing

/// The export: a protected video and audio track, cleared by `ProtectionRemoval` and joined by
/// `FragmentedMP4Join` into one fragmented MP4 that ffprobe reads as two streams of the
/// right duration and whose frames (ffmpeg framemd5) are the clear single tracks' frames.
@Suite struct FragmentedMP4JoinTests {
    /// A rendition as an offline package holds it (protected init and segments), cleared.
    static func cleared(_ dir: String, _ scheme: ProtectionScheme) throws -> (rendition: ProtectionRemovalTests.Protected, initSegment: [UInt8], segments: [[UInt8]]) {
        let rendition = try ProtectionRemovalTests.Protected(dir, scheme)
        let (clearInit, found) = try ProtectionRemoval.clearInit(rendition.protectedInit)
        let info = try #require(found)
        let segments = try rendition.encrypted().enumerated().map { index, pair in
            try ProtectionRemoval.clearSegment(MediaSegment.bytes(pair.0, sequenceNumber: UInt32(index + 1), encryption: pair.1),
                                               protection: info, key: ProtectionRemovalTests.key)
        }
        return (rendition, clearInit, segments)
    }

    /// The clear single-track file the writer makes of `rendition`.
    static func clearTrackFile(_ rendition: ProtectionRemovalTests.Protected) -> [UInt8] {
        var bytes = InitSegment.bytes(rendition.track.format)
        for (index, fragment) in rendition.fragments.enumerated() { bytes += MediaSegment.bytes(fragment, sequenceNumber: UInt32(index + 1)) }
        return bytes
    }

    /// The hash column of ffmpeg's framemd5 of stream `map` of `file`.
    static func frameHashes(_ file: URL, map: String) async throws -> [String] {
        let output = try await Run.process("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", file.path, "-map", map, "-f", "framemd5", "-"])
        #expect(output.exitCode == 0, "\(output.stderrText)")
        return output.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }
            .compactMap { $0.split(separator: ",").last.map { String($0).trimmingCharacters(in: .whitespaces) } }
    }

    @Test("a joined export plays both streams for the whole duration, with the clear source's frames")
    func joinedExportPlaysBothStreams() async throws {
        let video = try Self.cleared("video/416x234", .cbcs)
        let audio = try Self.cleared("audio/en", .cbcs)
        // Where each track ends on the shared timeline (the tracks start at the asset's first DTS);
        // the export lasts until the last one ends (the audio, whose last frame ends after the video's).
        let seconds = [video, audio].map { track in
            let last = track.rendition.fragments.last.map { $0.baseDecodeTime + $0.duration } ?? 0
            return Double(last) / Double(track.rendition.track.format.timescale)
        }
        let longest = try #require(seconds.max())
        var join = try FragmentedMP4Join(initSegments: [video.initSegment, audio.initSegment], duration: UInt64((longest * 1000).rounded()),
                                         timescale: 1000)
        var joined = join.initSegment
        for index in 0 ..< max(video.segments.count, audio.segments.count) {
            if index < video.segments.count { joined += try join.segment(video.segments[index], track: 0) }
            if index < audio.segments.count { joined += try join.segment(audio.segments[index], track: 1) }
        }

        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let joinedFile = folder.url.appendingPathComponent("joined.mp4")
        let videoFile = folder.url.appendingPathComponent("video.mp4"), audioFile = folder.url.appendingPathComponent("audio.mp4")
        try Data(joined).write(to: joinedFile)
        try Data(Self.clearTrackFile(video.rendition)).write(to: videoFile)
        try Data(Self.clearTrackFile(audio.rendition)).write(to: audioFile)

        let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", joinedFile.path])
        #expect(probe.exitCode == 0 && probe.stderrText.isEmpty, "ffprobe complained: \(probe.stderrText)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdoutText.utf8)) as? [String: Any])
        let streams = try #require(json["streams"] as? [[String: Any]])
        #expect(streams.compactMap { $0["codec_type"] as? String } == ["video", "audio"])
        #expect(streams.compactMap { $0["codec_name"] as? String } == ["h264", "aac"])
        // ffprobe 5.1 reads every fragment of a seekable file: each stream lasts until its last sample
        // ends, the file until the last stream ends, within a frame.
        let reported = try #require(((json["format"] as? [String: Any])?["duration"] as? String).flatMap { Double($0) })
        #expect(abs(reported - longest) <= 1.0 / 25, "ffprobe says \(reported) s, the longest track lasts \(longest) s")
        let streamSeconds = streams.compactMap { ($0["duration"] as? String).flatMap { Double($0) } }
        #expect(streamSeconds.count == 2 && zip(streamSeconds, seconds).allSatisfy { abs($0 - $1) <= 1.0 / 25 }, "\(streamSeconds) for \(seconds)")

        let videoFrames = try await Self.frameHashes(videoFile, map: "0:0")
        #expect(videoFrames.count > 100)
        #expect(try await Self.frameHashes(joinedFile, map: "0:v:0") == videoFrames)
        let audioFrames = try await Self.frameHashes(audioFile, map: "0:0")
        #expect(!audioFrames.isEmpty)
        #expect(try await Self.frameHashes(joinedFile, map: "0:a:0") == audioFrames)
    }

    @Test("the joined header numbers the tracks 1...N; each moof gets the next sequence number and its track's id")
    func headerAndSegmentsAreRenumbered() throws {
        let video = try Self.cleared("video/416x234", .cenc)
        let audio = try Self.cleared("audio/en", .cenc)
        var join = try FragmentedMP4Join(initSegments: [video.initSegment, audio.initSegment, audio.initSegment], duration: 12000, timescale: 1000)
        #expect(join.trackCount == 3)
        let header = join.initSegment
        // tkhd track_IDs, trex track_IDs, mvhd next_track_ID, mehd duration.
        var ids: [UInt32] = [], extendsIDs: [UInt32] = [], enabled: [Bool] = [], groups: [UInt32] = []
        var nextTrackID: UInt32 = 0, fragmentDuration: UInt64 = 0
        var top = BoxIterator(header)
        while let box = try top.next() {
            guard box.type == "moov" else { continue }
            var movie = BoxIterator(header, in: box.body)
            while let child = try movie.next() {
                switch child.type {
                case "mvhd": nextTrackID = FieldReader.u32(header, at: child.end - 4)
                case "trak":
                    var track = BoxIterator(header, in: child.body)
                    let tkhd = try #require(try track.first("tkhd"))
                    ids.append(FieldReader.u32(header, at: tkhd.body.lowerBound + 12))
                    enabled.append(header[tkhd.body.lowerBound + 3] & 1 != 0)
                    groups.append(FieldReader.u32(header, at: tkhd.body.lowerBound + 32) & 0xFFFF) // layer, alternate_group
                case "mvex":
                    var extends = BoxIterator(header, in: child.body)
                    while let inner = try extends.next() {
                        if inner.type == "mehd" { fragmentDuration = FieldReader.u64(header, at: inner.body.lowerBound + 4) }
                        if inner.type == "trex" { extendsIDs.append(FieldReader.u32(header, at: inner.body.lowerBound + 4)) }
                    }
                default: continue
                }
            }
        }
        #expect(ids == [1, 2, 3] && extendsIDs == [1, 2, 3] && nextTrackID == 4)
        // The audio tracks are alternatives: one group, the second one not enabled.
        #expect(enabled == [true, true, false] && groups == [0, 1, 1])
        #expect(fragmentDuration == 12000) // the clear inits' movie timescale is 1000

        var numbers: [UInt32] = [], tracks: [UInt32] = []
        for (segment, track) in [(video.segments[0], 0), (audio.segments[0], 1), (audio.segments[1], 2), (video.segments[1], 0)] {
            let bytes = try join.segment(segment, track: track)
            var boxes = BoxIterator(bytes)
            var types: [String] = []
            while let box = try boxes.next() {
                types.append("\(box.type)")
                guard box.type == "moof" else { continue }
                let mfhd = try #require(try MalformedBoxTests.find("mfhd", in: bytes))
                let tfhd = try #require(try MalformedBoxTests.find("tfhd", in: bytes))
                numbers.append(FieldReader.u32(bytes, at: mfhd.body.lowerBound + 4))
                tracks.append(FieldReader.u32(bytes, at: tfhd.body.lowerBound + 4))
            }
            #expect(types == ["moof", "mdat"]) // styp dropped
        }
        #expect(numbers == [1, 2, 3, 4] && tracks == [1, 2, 3, 1])
        #expect(cmafErrorCode { _ = try join.segment(video.segments[0], track: 3) } == .unsupportedStream)
    }

    @Test("durations move between timescales rounded, clamped to their field, unknown (all ones) kept")
    func durationsAreRescaled() {
        #expect(FragmentedMP4Join.rescale(12000, from: 1000, to: 90000) == 1_080_000)
        #expect(FragmentedMP4Join.rescale(1_080_001, from: 90000, to: 1000) == 12000)
        #expect(FragmentedMP4Join.rescale(1_080_045, from: 90000, to: 1000) == 12001)
        #expect(FragmentedMP4Join.rescale(UInt64(UInt32.max), from: 1000, to: 90000, width: 4) == UInt64(UInt32.max))
        #expect(FragmentedMP4Join.rescale(100_000_000, from: 1000, to: 90000, width: 4) == UInt64(UInt32.max))
        #expect(FragmentedMP4Join.rescale(UInt64.max, from: 1, to: 90000) == UInt64.max)
    }
}
