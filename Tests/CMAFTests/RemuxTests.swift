@testable import CMAF
import Foundation
import TestKit
import Testing

/// The TS fixtures remuxed to CMAF, read back by ffmpeg: the same decoded frames and audio.
@Suite struct RemuxTests {
    static let bars = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fixtures/media/bars")

    static func segments(_ dir: String) throws -> [[UInt8]] {
        try (0 ..< 6).map { try [UInt8](Data(contentsOf: bars.appendingPathComponent(String(format: "\(dir)/seg_%03d.ts", $0)))) }
    }

    /// The hash column of ffmpeg's framemd5 for the first stream of `input`.
    static func frameHashes(_ arguments: [String]) async throws -> [String] {
        let output = try await Run.process("/usr/bin/ffmpeg", ["-nostdin", "-v", "error"] + arguments + ["-map", "0:0", "-f", "framemd5", "-"])
        #expect(output.exitCode == 0, "\(output.stderrText)")
        return output.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last.map { String($0).trimmingCharacters(in: .whitespaces) } }
    }

    @Test(arguments: ["video/416x234", "video/960x540", "audio/en"])
    func remuxedTrackDecodesToTheSameFrames(_ dir: String) async throws {
        let track = try TrackRemuxer.demux(segments: Self.segments(dir))
        let fragments = track.fragments(origin: 118_800)
        #expect(fragments.count == 6)
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        var file = InitSegment.bytes(track.format)
        for (index, fragment) in fragments.enumerated() { file += MediaSegment.bytes(fragment, sequenceNumber: UInt32(index + 1)) }
        let mp4 = folder.url.appendingPathComponent("track.mp4")
        try Data(file).write(to: mp4)
        let ts = (0 ..< 6).map { Self.bars.appendingPathComponent(String(format: "\(dir)/seg_%03d.ts", $0)).path }.joined(separator: "|")
        let expected = try await Self.frameHashes(["-i", "concat:\(ts)"])
        let actual = try await Self.frameHashes(["-i", mp4.path])
        #expect(!expected.isEmpty)
        #expect(actual == expected)
    }
}

