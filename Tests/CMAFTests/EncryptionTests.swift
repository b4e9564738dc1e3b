@testable import CMAF
import Foundation
import TestKit
import Testing

/// CMAF tracks encrypted with cbcs and cenc, decrypted by ffmpeg's mov demuxer
/// (`-decryption_key`, the input piped: ffmpeg 5.1 misreads a seekable multi-fragment encrypted
/// file): the decoded frames and audio equal the clear track's.
@Suite struct EncryptionTests {
    static let key: [UInt8] = Array(0x10 ... 0x1F)
    static let keyID: [UInt8] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF]
    static let iv: [UInt8] = Array(0xA0 ... 0xAF)

    static func write(_ track: DemuxedTrack, encryptor: FragmentEncryptor?, to file: URL) throws {
        var bytes = InitSegment.bytes(track.format, protection: encryptor?.protection(psshBoxes: [
            TrackProtection.pssh(systemID: TrackProtection.commonSystemID, keyIDs: [keyID]),
        ]))
        var sample: UInt64 = 0
        for (index, fragment) in track.fragments(origin: 118_800).enumerated() {
            if let encryptor {
                let (encrypted, info) = try encryptor.encrypt(fragment, firstSample: sample)
                #expect(encrypted.data != fragment.data && encrypted.data.count == fragment.data.count)
                bytes += MediaSegment.bytes(encrypted, sequenceNumber: UInt32(index + 1), encryption: info)
            } else {
                bytes += MediaSegment.bytes(fragment, sequenceNumber: UInt32(index + 1))
            }
            sample += UInt64(fragment.samples.count)
        }
        try Data(bytes).write(to: file)
    }

    static func hashes(_ file: URL, key: [UInt8]?) async throws -> [String] {
        let decryption = key.map { "-decryption_key " + $0.map { String(format: "%02x", $0) }.joined() } ?? ""
        let output = try await Run.process("/bin/sh", ["-c", "cat '\(file.path)' | ffmpeg -nostdin -v error \(decryption) -i - -map 0:0 -f framemd5 -"])
        #expect(output.exitCode == 0, "\(output.stderrText)")
        return output.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }
            .compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    @Test(arguments: [("video/416x234", ProtectionScheme.cbcs), ("video/960x540", .cenc), ("audio/en", .cbcs), ("audio/fr", .cenc)])
    func ffmpegDecryptsToTheClearFrames(_ dir: String, _ scheme: ProtectionScheme) async throws {
        let track = try TrackRemuxer.demux(segments: RemuxTests.segments(dir))
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let clear = folder.url.appendingPathComponent("clear.mp4"), encrypted = folder.url.appendingPathComponent("encrypted.mp4")
        try Self.write(track, encryptor: nil, to: clear)
        let encryptor = try FragmentEncryptor(format: track.format, scheme: scheme, key: Self.key, keyID: Self.keyID, iv: Self.iv, ivSalt: 7)
        try Self.write(track, encryptor: encryptor, to: encrypted)
        let expected = try await Self.hashes(clear, key: nil)
        #expect(expected.count > 100)
        #expect(try await Self.hashes(encrypted, key: Self.key) == expected)
        // The wrong key does not give the clear frames.
        let wrong = try await Run.process("/bin/sh", ["-c", "cat '\(encrypted.path)' | ffmpeg -nostdin -v error -decryption_key "
            + String(repeating: "ab", count: 16) + " -i - -map 0:0 -f framemd5 -"])
        let wrongHashes = wrong.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }
            .compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
        #expect(wrongHashes != expected)
    }

    @Test("cenc IVs: the rendition's salt above, the sample's number below, never repeated within a track")
    func cencIVs() throws {
        #expect(FragmentEncryptor.cencIV(salt: 0x0102_0304, sample: 5) == [1, 2, 3, 4, 0, 0, 0, 5])
        let track = try TrackRemuxer.demux(segments: RemuxTests.segments("audio/en"))
        let encryptor = try FragmentEncryptor(format: track.format, scheme: .cenc, key: Self.key, keyID: Self.keyID, iv: [], ivSalt: 9)
        var seen = Set<[UInt8]>()
        var sample: UInt64 = 0
        for fragment in track.fragments(origin: 0) {
            let (_, info) = try encryptor.encrypt(fragment, firstSample: sample)
            #expect(info.subsamples == nil && info.initializationVectors.count == fragment.samples.count)
            for iv in info.initializationVectors { #expect(seen.insert(iv).inserted) }
            sample += UInt64(fragment.samples.count)
        }
    }
}
