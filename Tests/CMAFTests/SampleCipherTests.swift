import Crypto
import _CryptoExtras
import Foundation
@testable import CMAF
import TestKit
import Testing

/// The sample ciphers against `openssl enc` (an AES implementation of its own): the test
/// works out, from the subsample entries and the scheme's rules, which bytes should be
/// encrypted and in which chains, gathers them, has openssl encrypt each chain, and puts
/// the result back; the sample the cipher encrypted in place must be byte for byte that.
@Suite struct SampleCipherTests {
    static let key: [UInt8] = (0 ..< 16).map { UInt8($0 * 13 + 5) }
    static let constantIV: [UInt8] = (0 ..< 16).map { UInt8(0xC0 | $0) }

    /// A byte range of a sample.
    struct Chain {
        var ranges: [Range<Int>]
    }

    /// The cbcs chains of a sample: one per subsample with at least one whole block, each
    /// made of the blocks i (from the start of the protected range) with i mod (crypt +
    /// skip) < crypt, among the whole blocks only (0:0 meaning all of them).
    static func cbcsChains(_ subsamples: [Subsample], crypt: Int, skip: Int) -> [Chain] {
        var chains: [Chain] = []
        var offset = 0
        for entry in subsamples {
            offset += entry.clear
            var ranges: [Range<Int>] = []
            for block in 0 ..< entry.protected / 16 where crypt + skip == 0 || skip == 0 || block % (crypt + skip) < crypt {
                ranges.append(offset + block * 16 ..< offset + block * 16 + 16)
            }
            if !ranges.isEmpty { chains.append(Chain(ranges: ranges)) }
            offset += entry.protected
        }
        return chains
    }

    /// `plain` with each chain's bytes replaced by openssl's encryption of them (`cipher`
    /// with `iv`, restarted per chain).
    static func expected(_ plain: [UInt8], chains: [Chain], cipher: String, iv: [UInt8]) async throws -> [UInt8] {
        var out = plain
        for chain in chains {
            let gathered = chain.ranges.flatMap { plain[$0] }
            let encrypted = try await Tools.openssl(cipher, key: key, iv: iv, gathered)
            #expect(encrypted.count == gathered.count)
            var read = 0
            for range in chain.ranges {
                out.replaceSubrange(range, with: encrypted[read ..< read + range.count])
                read += range.count
            }
        }
        return out
    }

    /// A real sample: the fixture's second access unit (a P slice), in MP4 form, and its entries.
    static func fixtureSample(_ scheme: ProtectionScheme, index: Int = 1) throws -> ([UInt8], [Subsample]) {
        let accessUnits = try TransportStreamVideo.accessUnits(MediaFixtures.bytes("video/960x540/seg_000.ts"))
        var sets = VideoParameterSets.h264(H264ParameterSets())
        var entries: [Subsample] = []
        var sample: [UInt8] = []
        for units in accessUnits[0 ... index] {
            sample = AnnexB.lengthPrefixed(units)
            entries = try Subsample.video(sample: sample, scheme: scheme, parameterSets: &sets)
        }
        return (sample, entries)
    }

    @Test(arguments: [0, 1, 2])
    func cbcsVideoSampleMatchesOpenSSL(index: Int) async throws {
        let (plain, entries) = try Self.fixtureSample(.cbcs, index: index)
        var sample = plain
        try SampleCipher(key: Self.key).cbcs(&sample, subsamples: entries, iv: Self.constantIV, .encrypt)
        let expected = try await Self.expected(plain, chains: Self.cbcsChains(entries, crypt: 1, skip: 9), cipher: "-aes-128-cbc", iv: Self.constantIV)
        #expect(sample == expected)
        #expect(sample != plain)
        try SampleCipher(key: Self.key).cbcs(&sample, subsamples: entries, iv: Self.constantIV, .decrypt)
        #expect(sample == plain)
    }

    /// Several subsamples in one sample: the IV restarts at each (chaining across them would
    /// give other bytes from the second one on), with partial blocks and short patterns.
    @Test(arguments: [(1, 9), (5, 5), (2, 0), (0, 0), (3, 1)])
    func cbcsRestartsTheIVAtEverySubsample(crypt: Int, skip: Int) async throws {
        let entries = [Subsample(clear: 7, protected: 15), Subsample(clear: 3, protected: 16), Subsample(clear: 0, protected: 17),
                       Subsample(clear: 12, protected: 160), Subsample(clear: 1, protected: 161), Subsample(clear: 65535, protected: 0),
                       Subsample(clear: 9, protected: 175), Subsample(clear: 2, protected: 16 * 13 + 3), Subsample(clear: 4, protected: 0)]
        let plain = randomBytes(entries.reduce(0) { $0 + $1.clear + $1.protected })
        var sample = plain
        let pattern = try SampleCipher.Pattern(crypt: crypt, skip: skip)
        try SampleCipher(key: Self.key).cbcs(&sample, subsamples: entries, iv: Self.constantIV, pattern: pattern, .encrypt)
        let chains = Self.cbcsChains(entries, crypt: crypt, skip: skip)
        #expect(sample == (try await Self.expected(plain, chains: chains, cipher: "-aes-128-cbc", iv: Self.constantIV)))
        // Exactly the chained bytes changed (a changed byte elsewhere would show here).
        let touched = Set(chains.flatMap { $0.ranges.flatMap { Array($0) } })
        for index in plain.indices where !touched.contains(index) { #expect(sample[index] == plain[index]) }
        try SampleCipher(key: Self.key).cbcs(&sample, subsamples: entries, iv: Self.constantIV, pattern: pattern, .decrypt)
        #expect(sample == plain)
    }

    /// Protected ranges of 15…176 bytes one at a time under 1:9: 15 nothing, 16 and 17 one
    /// block, 160 and 161 and 175 still one block (blocks 1-9 skipped), 176 blocks 0 and 10.
    @Test(arguments: [15, 16, 17, 160, 161, 175, 176, 335])
    func cbcsPartialBlocksAndPatterns(protected: Int) async throws {
        let entries = [Subsample(clear: 5, protected: protected)]
        let plain = randomBytes(5 + protected)
        var sample = plain
        try SampleCipher(key: Self.key).cbcs(&sample, subsamples: entries, iv: Self.constantIV, .encrypt)
        let blocks = Self.cbcsChains(entries, crypt: 1, skip: 9).first?.ranges.count ?? 0
        #expect(blocks == [15: 0, 16: 1, 17: 1, 160: 1, 161: 1, 175: 1, 176: 2, 335: 2][protected])
        #expect(sample == (try await Self.expected(plain, chains: Self.cbcsChains(entries, crypt: 1, skip: 9), cipher: "-aes-128-cbc", iv: Self.constantIV)))
        #expect(sample[(5 + protected / 16 * 16)...] == plain[(5 + protected / 16 * 16)...])
    }

    @Test(arguments: [0, 15, 16, 1000, 4099])
    func cbcsAudioIsWholeBlocksOfTheWholeSample(size: Int) async throws {
        let plain = randomBytes(size)
        var sample = plain
        try SampleCipher(key: Self.key).cbcsFullSample(&sample, iv: Self.constantIV, .encrypt)
        let whole = size / 16 * 16
        let chains = whole > 0 ? [Chain(ranges: (0 ..< whole / 16).map { $0 * 16 ..< $0 * 16 + 16 })] : []
        #expect(sample == (try await Self.expected(plain, chains: chains, cipher: "-aes-128-cbc", iv: Self.constantIV)))
        try SampleCipher(key: Self.key).cbcsFullSample(&sample, iv: Self.constantIV, .decrypt)
        #expect(sample == plain)
    }

    /// cenc: all protected ranges of the sample gathered into one CTR stream from the 8-byte
    /// IV and eight zero bytes, as one openssl run (a keystream restarted per subsample would
    /// differ from the second range on).
    @Test(arguments: [0, 1, 2])
    func cencVideoSampleMatchesOpenSSL(index: Int) async throws {
        let (plain, entries) = try Self.fixtureSample(.cenc, index: index)
        let iv: [UInt8] = [0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0]
        var sample = plain
        try SampleCipher(key: Self.key).cenc(&sample, subsamples: entries, iv: iv)
        var ranges: [Range<Int>] = []
        var offset = 0
        for entry in entries {
            offset += entry.clear
            ranges.append(offset ..< offset + entry.protected)
            offset += entry.protected
        }
        #expect(sample == (try await Self.expected(plain, chains: [Chain(ranges: ranges)], cipher: "-aes-128-ctr", iv: iv + [UInt8](repeating: 0, count: 8))))
        try SampleCipher(key: Self.key).cenc(&sample, subsamples: entries, iv: iv)
        #expect(sample == plain)
    }

    @Test func cencKeystreamRunsOnAcrossSubsamples() async throws {
        let entries = [Subsample(clear: 10, protected: 32), Subsample(clear: 3, protected: 48), Subsample(clear: 70000 - 65535, protected: 17),
                       Subsample(clear: 5, protected: 0)]
        let plain = randomBytes(entries.reduce(0) { $0 + $1.clear + $1.protected })
        let iv = randomBytes(8)
        var sample = plain
        try SampleCipher(key: Self.key).cenc(&sample, subsamples: entries, iv: iv)
        let ranges = [10 ..< 42, 45 ..< 93, 93 + 4465 ..< 93 + 4465 + 17]
        #expect(sample == (try await Self.expected(plain, chains: [Chain(ranges: ranges)], cipher: "-aes-128-ctr", iv: iv + [UInt8](repeating: 0, count: 8))))
    }

    @Test(arguments: [1, 16, 1000, 4099])
    func cencAudioIsTheWholeSample(size: Int) async throws {
        let plain = randomBytes(size)
        let iv = randomBytes(8)
        var sample = plain
        try SampleCipher(key: Self.key).cencFullSample(&sample, iv: iv)
        #expect(sample == (try await Tools.openssl("-aes-128-ctr", key: Self.key, iv: iv + [UInt8](repeating: 0, count: 8), plain)))
        try SampleCipher(key: Self.key).cencFullSample(&sample, iv: iv)
        #expect(sample == plain)
    }

    /// A 16-byte IV whose lower half is one block from overflowing: the block counter is the
    /// lower 64 bits, so the third block's counter is the upper half and zeros (openssl's
    /// 128-bit counter would carry into the upper half instead).
    @Test func cencSixteenByteIVCountsInItsLowerHalf() async throws {
        let upper: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let iv = upper + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]
        let plain = randomBytes(50)
        var sample = plain
        try SampleCipher(key: Self.key).cencFullSample(&sample, iv: iv)
        let head = try await Tools.openssl("-aes-128-ctr", key: Self.key, iv: iv, Array(plain[..<32]))
        let tail = try await Tools.openssl("-aes-128-ctr", key: Self.key, iv: upper + [UInt8](repeating: 0, count: 8), Array(plain[32...]))
        #expect(sample == head + tail)
    }

    @Test func roundTripsOnEveryFixtureSample() throws {
        let cipher = try SampleCipher(key: Self.key)
        var ivs = try CENCIVSequence(start: [0, 0, 0, 0, 0, 0, 0, 1])
        for segment in ["video/416x234/seg_002.ts", "video/640x360/seg_004.ts"] {
            var cbcsSets = VideoParameterSets.h264(H264ParameterSets()), cencSets = cbcsSets
            for units in try TransportStreamVideo.accessUnits(MediaFixtures.bytes(segment)) {
                let plain = AnnexB.lengthPrefixed(units)
                var sample = plain
                let cbcs = try Subsample.video(sample: plain, scheme: .cbcs, parameterSets: &cbcsSets)
                try cipher.cbcs(&sample, subsamples: cbcs, iv: Self.constantIV, .encrypt)
                #expect(sample != plain)
                try cipher.cbcs(&sample, subsamples: cbcs, iv: Self.constantIV, .decrypt)
                #expect(sample == plain)
                let cenc = try Subsample.video(sample: plain, scheme: .cenc, parameterSets: &cencSets)
                let iv = ivs.next()
                try cipher.cenc(&sample, subsamples: cenc, iv: iv)
                #expect(sample != plain)
                try cipher.cenc(&sample, subsamples: cenc, iv: iv)
                #expect(sample == plain)
            }
        }
    }

    /// A 2 MB sample of many subsamples goes through every cipher and back unchanged. (How fast
    /// is a benchmark's question, never a unit test's: a timed test here failed on a shared machine.)
    @Test func twoMegabytesRoundTrip() throws {
        let cipher = try SampleCipher(key: Self.key)
        let plain = randomBytes(2 << 20)
        // One entry per 20 kB "slice", as a 2 MB segment's samples would have.
        let entries = (0 ..< plain.count / 20480).map { _ in Subsample(clear: 20, protected: 20460) }
            + [Subsample(clear: plain.count % 20480, protected: 0)]
        var sample = plain
        try cipher.cbcs(&sample, subsamples: entries, iv: Self.constantIV, .encrypt)
        #expect(sample != plain && Array(sample.prefix(20)) == Array(plain.prefix(20)), "the clear bytes stay, the protected ones change")
        try cipher.cbcs(&sample, subsamples: entries, iv: Self.constantIV, .decrypt)
        #expect(sample == plain)
        try cipher.cenc(&sample, subsamples: entries, iv: [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(sample != plain)
        try cipher.cenc(&sample, subsamples: entries, iv: [1, 2, 3, 4, 5, 6, 7, 8])
        try cipher.cbcsFullSample(&sample, iv: Self.constantIV, .encrypt)
        try cipher.cbcsFullSample(&sample, iv: Self.constantIV, .decrypt)
        #expect(sample == plain)
    }

    @Test func ivSequenceCountsUpFromItsStart() throws {
        var ivs = try CENCIVSequence(start: [0, 0, 0, 0, 0, 0, 0x01, 0xFE])
        #expect(ivs.next() == [0, 0, 0, 0, 0, 0, 0x01, 0xFE])
        #expect(ivs.next() == [0, 0, 0, 0, 0, 0, 0x01, 0xFF])
        #expect(ivs.next() == [0, 0, 0, 0, 0, 0, 0x02, 0x00])
        var wrapping = CENCIVSequence(start: .max)
        #expect(wrapping.next() == [UInt8](repeating: 0xFF, count: 8))
        #expect(wrapping.next() == [UInt8](repeating: 0, count: 8))
        #expect(throws: CMAFError.self) { try CENCIVSequence(start: [1, 2, 3]) }
    }

    @Test func badKeysIVsPatternsAndLayoutsAreRefused() throws {
        let code = cmafErrorCode
        #expect(code { _ = try SampleCipher(key: [1, 2, 3]) } == .invalidKey)
        let cipher = try SampleCipher(key: Self.key)
        var sample = randomBytes(100)
        #expect(code { try cipher.cbcs(&sample, subsamples: [Subsample(clear: 100, protected: 0)], iv: [1], .encrypt) } == .invalidKey)
        #expect(code { try cipher.cenc(&sample, subsamples: [Subsample(clear: 100, protected: 0)], iv: randomBytes(12)) } == .invalidKey)
        #expect(code { try cipher.cbcs(&sample, subsamples: [Subsample(clear: 10, protected: 80)], iv: Self.constantIV, .encrypt) } == .malformedSample)
        #expect(code { try cipher.cenc(&sample, subsamples: [Subsample(clear: 10, protected: 100)], iv: randomBytes(8)) } == .malformedSample)
        #expect(code { try cipher.cenc(&sample, subsamples: [Subsample(clear: -10, protected: 110)], iv: randomBytes(8)) } == .malformedSample)
        #expect(code { _ = try SampleCipher.Pattern(crypt: 0, skip: 9) } == .invalidPattern)
        #expect(code { _ = try SampleCipher.Pattern(crypt: 16, skip: 0) } == .invalidPattern)
        #expect(code { _ = try SampleCipher.Pattern(crypt: 1, skip: -1) } == .invalidPattern)
    }
}
