import Foundation
import TestKit
import Testing
@testable import SampleAES

@Suite("One-pass SAMPLE-AES decryption: the general path's bytes, faster")
struct SegmentDecryptionTests {
    static func general(_ segment: [UInt8], key: [UInt8] = Fixtures.key) -> Result<[UInt8], SampleAESError> {
        Result { () throws(SampleAESError) in
            try SegmentTransformer(cipher: PatternCipher(key: key, iv: Fixtures.iv, direction: .decrypt)).transform(segment)
        }
    }

    static func inPlace(_ segment: [UInt8], key: [UInt8] = Fixtures.key) -> Result<[UInt8]?, SampleAESError> {
        Result { () throws(SampleAESError) in try SegmentDecryption.decrypt(segment, key: key, iv: Fixtures.iv) }
    }

    @Test("every fixture segment, the 960x540 ones included: the clear segment exactly, in one pass")
    func fixtures() throws {
        for name in Fixtures.segments {
            let clear = try Fixtures.bytes(name)
            let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
            let fast = try #require(try SegmentDecryption.decrypt(encrypted, key: Fixtures.key, iv: Fixtures.iv), "\(name): the one pass gave up")
            #expect(fast == clear, "\(name)")
            #expect(try SampleAES.decrypt(segment: encrypted, key: Fixtures.key, iv: Fixtures.iv) == clear, "\(name)")
        }
        // Clear segments (nothing to decrypt) come back unchanged.
        let clear = try Fixtures.bytes("video/416x234/seg_000.ts")
        #expect(try SegmentDecryption.decrypt(clear, key: Fixtures.key, iv: Fixtures.iv) == clear)
    }

    @Test("a wrong key: the same garbage as the general path (or the general path), never a different answer")
    func wrongKey() throws {
        let wrong = [UInt8](repeating: 7, count: 16)
        for name in Fixtures.segments.prefix(12) {
            let encrypted = try SampleAES.encrypt(segment: try Fixtures.bytes(name), key: Fixtures.key, iv: Fixtures.iv)
            if case .success(let fast?) = Self.inPlace(encrypted, key: wrong) {
                #expect(Self.general(encrypted, key: wrong) == .success(fast), "\(name)")
            }
        }
    }

    @Test("damaged segments: where the one-pass decryption answers, it is the general path's answer; where it throws, so does the general path")
    func damaged() async throws {
        // Thousands of decryptions: on a thread of their own, so the test pool stays free.
        let (answered, disagreements) = try await offPool { () throws -> (Int, [String]) in
            var generator = SplitMix(state: 2026)
            var answered = 0
            var disagreements: [String] = []
            // Fixtures, and a segment whose NAL units change length both ways (the re-layout under damage).
            let mixed = try LengthChangeTests.segment("video/416x234/seg_003.ts", patterns: [[.appear, .disappear], [.keep], [.disappear]])
            let clears = try ["video/416x234/seg_001.ts", "video/640x360/seg_001.ts", "video/960x540/seg_001.ts", "audio/fr/seg_004.ts"]
                .map { ($0, try Fixtures.bytes($0)) } + [("length-changing", mixed)]
            for (name, clear) in clears {
                let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
                for round in 0..<200 {
                    var damaged = encrypted
                    for _ in 0..<Int.random(in: 1...4, using: &generator) {
                        let index = Int.random(in: 0..<damaged.count, using: &generator)
                        damaged[index] = UInt8.random(in: 0...255, using: &generator)
                    }
                    let general = Self.general(damaged)
                    switch Self.inPlace(damaged) {
                    case .success(let fast?):
                        answered += 1
                        if (try? general.get()) != fast {
                            disagreements.append("\(name) round \(round): the general path gives "
                                                 + ((try? general.get()).map { "\($0.count) other bytes" } ?? "\(general)"))
                        }
                    case .success(nil):
                        break
                    case .failure(let error):
                        if (try? general.get()) != nil { disagreements.append("\(name) round \(round): in place threw \(error), the general path did not") }
                    }
                }
            }
            return (answered, disagreements)
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
        #expect(answered > 200)
    }

    /// Emulation prevention byte by byte, as the spec words it: the reference for the word-at-a-time versions.
    static func referenceUnescape(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [], index = 0
        while index < bytes.count {
            if bytes.count - index > 3, bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 3 {
                out += [0, 0]
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }

    static func referenceEscape(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [], zeros = 0
        for (index, byte) in bytes.enumerated() {
            if zeros >= 2, byte <= 3, !(byte == 3 && index == bytes.count - 1) {
                out.append(3)
                zeros = 0
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }

    @Test("escape and unescape give the byte-by-byte reference's bytes: zeros and 03s among long runs without a zero")
    func emulationPrevention() {
        var generator = SplitMix(state: 27)
        for round in 0..<2_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...12, using: &generator) {
                // A run of small values (zeros, 03s), then a run of bytes that are never zero.
                bytes += (0..<Int.random(in: 0...6, using: &generator)).map { _ in UInt8.random(in: 0...3, using: &generator) }
                bytes += (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 1...255, using: &generator) }
            }
            #expect(H264SampleEncryption.escape(bytes) == Self.referenceEscape(bytes), "round \(round): \(bytes)")
            #expect(H264SampleEncryption.unescape(bytes[...]) == Self.referenceUnescape(bytes), "round \(round): \(bytes)")
            let inner = bytes.dropFirst(min(3, bytes.count))
            #expect(H264SampleEncryption.unescape(inner) == Self.referenceUnescape(Array(inner)), "round \(round), a slice")
        }
    }

    @Test("NAL unit boundaries are the general scanner's, on random bytes full of zeros and on runs without a zero; a unit not flagged for zero pairs holds none")
    func scanner() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<600 {
            // Even rounds: bytes 0...3 only. Odd rounds: runs of 1...40 bytes without a zero
            // between short runs of 0...3, so the 16- and 8-byte skips meet every alignment.
            var bytes: [UInt8] = []
            let length = Int.random(in: 0...300, using: &generator)
            while bytes.count < length {
                if round % 2 == 1, Bool.random(using: &generator) {
                    bytes += (0 ..< Int.random(in: 1...40, using: &generator)).map { _ in UInt8.random(in: 1...255, using: &generator) }
                } else {
                    bytes += (0 ..< Int.random(in: 1...6, using: &generator)).map { _ in UInt8.random(in: 0...3, using: &generator) }
                }
            }
            let expected = H264SampleEncryption.nalUnits(bytes).map { $0.start ..< $0.end }
            let found = bytes.withUnsafeBufferPointer { NALScanner.units($0, 0 ..< bytes.count) }
            #expect(found.map(\.range) == expected, "\(bytes)")
            // A unit not flagged holds no two zeros with another of its bytes after them.
            for unit in found where !unit.hasZeroPair {
                #expect(!(unit.range.lowerBound ..< max(unit.range.lowerBound, unit.range.upperBound - 2)).contains { bytes[$0] == 0 && bytes[$0 + 1] == 0 },
                        "\(bytes)")
            }
            let escaping = bytes.withUnsafeBufferPointer { buffer in
                found.map { NALScanner.needsEscaping(buffer, $0.range, positions: $0.range) }
            }
            #expect(escaping == expected.map { H264SampleEncryption.escape(Array(bytes[$0])) != Array(bytes[$0])
                || H264SampleEncryption.unescape(bytes[$0]) != Array(bytes[$0]) })
            // Without a zero pair, nothing to escape.
            for (unit, escapes) in zip(found, escaping) where !unit.hasZeroPair { #expect(!escapes, "\(bytes)") }
        }
    }
}

