import Crypto
import _CryptoExtras
import Foundation
import Testing
@testable import SampleAES

@Suite("SAMPLE-AES patterns: what is clear and what is encrypted")
struct PatternTests {
    /// AES-128-CBC without padding of `blocks` (gathered), independently of the module's cipher.
    static func cbc(_ blocks: [UInt8]) throws -> [UInt8] {
        Array(try AES._CBC.encrypt(blocks, using: SymmetricKey(data: Fixtures.key), iv: AES._CBC.IV(ivBytes: Fixtures.iv), noPadding: true))
    }

    @Test("H.264: slices keep 32 clear bytes, then 1 encrypted block in 10 (CBC over them from the IV), a clear tail; other NAL units untouched",
          arguments: ["video/416x234/seg_000.ts", "video/960x540/seg_003.ts"])
    func h264Pattern(name: String) throws {
        let clear = try Fixtures.bytes(name)
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        let before = Demuxed(clear).elementaryStreams(0x100)
        let after = Demuxed(encrypted).elementaryStreams(0x100)
        try #require(before.count == after.count && !before.isEmpty)
        var protected = 0, untouched = 0, blocks = 0
        for (a, b) in zip(before, after) {
            let unitsA = H264SampleEncryption.nalUnits(a), unitsB = H264SampleEncryption.nalUnits(b)
            try #require(unitsA.count == unitsB.count)
            for (ua, ub) in zip(unitsA, unitsB) {
                #expect(ua.type == ub.type)
                let nalA = Array(a[ua.start ..< ua.end]), nalB = Array(b[ub.start ..< ub.end])
                guard ua.type == 1 || ua.type == 5 else {
                    #expect(nalA == nalB, "NAL type \(ua.type) must be untouched")
                    untouched += 1
                    continue
                }
                let rawA = H264SampleEncryption.unescape(nalA[...]), rawB = H264SampleEncryption.unescape(nalB[...])
                #expect(rawA.count == rawB.count)
                guard rawA.count > 48 else {
                    #expect(nalA == nalB, "a slice of 48 bytes or fewer stays clear")
                    continue
                }
                protected += 1
                #expect(rawA[..<32] == rawB[..<32], "32-byte clear lead")
                let offsets = H264SampleEncryption.encryptedBlockOffsets(length: rawA.count)
                // The pattern: block k*160 after the lead is encrypted, the next 144 bytes clear.
                #expect(offsets == Array(stride(from: 32, to: rawA.count - 16, by: 160)))
                let encryptedSet = Set(offsets)
                var position = 32
                while position < rawA.count {
                    let end = min(position + 16, rawA.count)
                    if encryptedSet.contains(position) {
                        #expect(rawA[position ..< end] != rawB[position ..< end], "encrypted block at \(position) differs")
                    } else {
                        #expect(rawA[position ..< end] == rawB[position ..< end], "clear block at \(position)")
                    }
                    position = end
                }
                #expect(rawA.last == rawB.last, "the last byte is always clear")
                let gathered = offsets.flatMap { rawA[$0 ..< $0 + 16] }
                #expect(try Self.cbc(gathered) == offsets.flatMap { rawB[$0 ..< $0 + 16] }, "CBC from the IV per NAL unit")
                blocks += offsets.count
            }
        }
        #expect(protected > 0 && untouched > 0 && blocks > protected)
    }

    @Test("AAC: per ADTS frame the header and 16 bytes are clear, whole blocks encrypted (CBC from the IV per frame), the tail clear",
          arguments: ["audio/en/seg_000.ts", "audio/es/seg_005.ts"])
    func adtsPattern(name: String) throws {
        let clear = try Fixtures.bytes(name)
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        let before = Demuxed(clear).elementaryStreams(0x100)
        let after = Demuxed(encrypted).elementaryStreams(0x100)
        try #require(before.count == after.count && !before.isEmpty)
        var frameCount = 0
        for (a, b) in zip(before, after) {
            #expect(a.count == b.count)
            let frames = try ADTSSampleEncryption.frames(a[...])
            #expect(frames.count > 1, "several frames per PES, each with its own CBC chain")
            for frame in frames {
                frameCount += 1
                let lead = min(frame.start + frame.headerLength + 16, frame.start + frame.length)
                #expect(a[frame.start ..< lead] == b[frame.start ..< lead], "header + 16 bytes clear")
                let blockCount = max(0, frame.length - frame.headerLength - 16) / 16
                let encryptedEnd = lead + blockCount * 16
                #expect(a[encryptedEnd ..< frame.start + frame.length] == b[encryptedEnd ..< frame.start + frame.length], "partial tail clear")
                if blockCount > 0 {
                    #expect(try Self.cbc(Array(a[lead ..< encryptedEnd])) == Array(b[lead ..< encryptedEnd]))
                }
            }
        }
        #expect(frameCount > 50)
    }

    @Test("emulation prevention: unescape undoes escape, and escaped bytes never hold 00 00 00/01/02")
    func escaping() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0 ..< 2000 {
            let bytes = (0 ..< Int.random(in: 0 ... 64, using: &generator)).map { _ -> UInt8 in
                Bool.random(using: &generator) ? 0 : UInt8.random(in: 0 ... 4, using: &generator)
            }
            let escaped = H264SampleEncryption.escape(bytes)
            #expect(H264SampleEncryption.unescape(escaped[...]) == bytes)
            for index in escaped.indices.dropLast(2) where escaped[index] == 0 && escaped[index + 1] == 0 {
                #expect(escaped[index + 2] >= 3, "\(escaped)")
            }
        }
        #expect(H264SampleEncryption.escape([0, 0, 1, 0, 0, 0]) == [0, 0, 3, 1, 0, 0, 3, 0])
        #expect(H264SampleEncryption.unescape([0, 0, 3, 1, 9][...]) == [0, 0, 1, 9])
        // A final 00 00 03 (cabac_zero_word padding) is kept as it is, both ways.
        #expect(H264SampleEncryption.unescape([5, 0, 0, 3][...]) == [5, 0, 0, 3])
        #expect(H264SampleEncryption.escape([5, 0, 0, 3]) == [5, 0, 0, 3])
    }

    @Test("NAL units split at 3- and 4-byte start codes")
    func nalSplitting() {
        let bytes: [UInt8] = [0, 0, 0, 1, 9, 0xF0, 0, 0, 1, 0x65, 1, 2, 3, 0, 0, 0, 1, 0x41, 7]
        let units = H264SampleEncryption.nalUnits(bytes)
        #expect(units.map(\.type) == [9, 5, 1])
        #expect(units.map(\.length) == [2, 4, 2])
    }
}
