import Crypto
import _CryptoExtras
import Foundation
import Testing
@testable import SampleAES

/// Segments whose NAL units change length under decryption, through `SegmentDecryption`: the
/// general path (`SegmentTransformer`, kept as the reference implementation) and the clear
/// segment must both agree with it byte for byte, and the fast path must answer (not give up).
///
/// The segments are made from fixtures by replacing the first protected NAL unit of several
/// video PES packets with a 20 000-byte slice whose encrypted blocks are chosen, block by block
/// along the CBC chain, so that emulation-prevention bytes appear, disappear or stay put.
@Suite("SAMPLE-AES decryption when NAL units change length: the general path's bytes, in one pass")
struct LengthChangeTests {
    /// What decryption does to one encrypted block of a synthetic slice.
    enum Block {
        /// Clear zeros, random-looking ciphertext: emulation-prevention bytes appear on decryption.
        case appear
        /// Zero ciphertext, random-looking clear bytes: they disappear.
        case disappear
        /// Random-looking both ways (and three zeros in the clear bytes before the block, which
        /// are escaped on both sides): the unit keeps its length although it is escaped.
        case keep
    }

    static let zero = [UInt8](repeating: 0, count: 16)

    /// One CBC step under the fixture key: E(block ^ previous), or D(block) ^ previous.
    static func cbc(_ block: [UInt8], previous: [UInt8], encrypt: Bool) throws -> [UInt8] {
        let key = SymmetricKey(data: Fixtures.key)
        let iv = try AES._CBC.IV(ivBytes: previous)
        return Array(encrypt ? try AES._CBC.encrypt(block, using: key, iv: iv, noPadding: true)
                             : try AES._CBC.decrypt(block, using: key, iv: iv, noPadding: true))
    }

    /// A clear (unescaped) slice of `length` bytes starting with `head`, its encrypted blocks
    /// following `pattern` (cycled).
    static func slice(head: [UInt8], length: Int, pattern: [Block]) throws -> [UInt8] {
        var raw = head + [UInt8](repeating: 0x55, count: length - head.count)
        var previous = Fixtures.iv
        for (position, offset) in H264SampleEncryption.encryptedBlockOffsets(length: raw.count).enumerated() {
            let plain: [UInt8]
            switch pattern[position % pattern.count] {
            case .appear: plain = zero
            case .disappear: plain = try cbc(zero, previous: previous, encrypt: false)
            case .keep:
                plain = (0 ..< 16).map { UInt8(0x11 + (position * 3 + $0) % 200) }
                raw[offset - 4] = 0
                raw[offset - 3] = 0
                raw[offset - 2] = 0
            }
            raw.replaceSubrange(offset ..< offset + 16, with: plain)
            previous = try cbc(plain, previous: previous, encrypt: true)
        }
        return raw
    }

    /// `fixture` with the first protected NAL unit of each of the first video PES packets replaced
    /// by a synthetic slice (one pattern per PES), escaped and laid out again by the one layout
    /// rule; `bounded` sets each replaced PES's PES_packet_length (the fixtures leave it 0).
    static func segment(_ fixture: String, patterns: [[Block]], bounded: Bool = false) throws -> [UInt8] {
        let clear = try Fixtures.bytes(fixture)
        let packets = try TransportStream.packets(of: clear)
        let units = PESUnit.units(pid: 0x100, in: packets)
        try #require(units.count >= patterns.count)
        var layout = PESUnit.Layout()
        for (unit, pattern) in zip(units, patterns) {
            var pes = unit.bytes(in: packets)
            let header = try PESHeader(pes, pid: 0x100)
            let stream = Array(pes[header.length...])
            let nal = try #require(H264SampleEncryption.nalUnits(stream).first {
                H264SampleEncryption.isProtected(type: $0.type, length: $0.length)
            })
            let head = Array(H264SampleEncryption.unescape(stream[nal.start ..< nal.end]).prefix(32))
            let raw = try slice(head: head, length: 20_000, pattern: pattern)
            let escaped = H264SampleEncryption.escape(raw)
            try #require(H264SampleEncryption.unescape(escaped[...]) == raw)
            pes.replaceSubrange(header.length..., with: Array(stream[..<nal.start]) + escaped + Array(stream[nal.end...]))
            if bounded {
                pes[4] = UInt8((pes.count - 6) >> 8)
                pes[5] = UInt8((pes.count - 6) & 0xFF)
            }
            let unitLayout = try unit.layout(pes, in: packets)
            layout.replaced.merge(unitLayout.replaced) { $1 }
            layout.dropped.formUnion(unitLayout.dropped)
            layout.inserted.merge(unitLayout.inserted) { $1 }
        }
        return layout.write(packets)
    }

    /// The reference: the general path's decryption.
    static func general(_ segment: [UInt8]) throws -> [UInt8] {
        try SegmentTransformer(cipher: PatternCipher(key: Fixtures.key, iv: Fixtures.iv, direction: .decrypt)).transform(segment)
    }

    /// Encrypts `clear`, checks the encrypted packets moved by at least `moved` packets (so the
    /// case is what it claims), and that the one-pass decryption answers with the general
    /// path's bytes, which are the clear segment's.
    static func expectDecrypts(_ clear: [UInt8], moved: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try RoundTripTests.expectClearValid(clear)
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        try RoundTripTests.expectValid(encrypted, isVideo: true, sourceLocation: sourceLocation)
        #expect(abs(encrypted.count - clear.count) >= moved * 188 || moved == 0, "\(clear.count) → \(encrypted.count)",
                sourceLocation: sourceLocation)
        let fast = try #require(try SegmentDecryption.decrypt(encrypted, key: Fixtures.key, iv: Fixtures.iv),
                                "the one-pass decryption gave up", sourceLocation: sourceLocation)
        // Compared first, so a failure names the case instead of printing megabytes.
        let reference = try general(encrypted)
        let sameAsGeneral = fast == reference, sameAsClear = fast == clear
        #expect(sameAsGeneral, "not the general path's bytes (\(fast.count) vs \(reference.count))", sourceLocation: sourceLocation)
        #expect(sameAsClear, "not the clear segment (\(fast.count) vs \(clear.count))", sourceLocation: sourceLocation)
    }

    @Test("emulation-prevention bytes appear on decryption: PES packets grow into their stuffing and new packets, counters shift",
          arguments: ["video/416x234/seg_000.ts", "video/960x540/seg_003.ts"])
    func appearing(fixture: String) throws {
        try Self.expectDecrypts(try Self.segment(fixture, patterns: [[.appear], [.appear], [.appear]]), moved: 3)
    }

    @Test("emulation-prevention bytes disappear on decryption: packets are dropped, counters shift back",
          arguments: ["video/416x234/seg_000.ts", "video/960x540/seg_003.ts"])
    func disappearing(fixture: String) throws {
        try Self.expectDecrypts(try Self.segment(fixture, patterns: [[.disappear], [.disappear], [.disappear]]), moved: 3)
    }

    @Test("mixed in one segment and within one unit: growing, shrinking, escaped units that keep their length, untouched PES between")
    func mixed() throws {
        let patterns: [[Block]] = [[.appear, .disappear], [.keep], [.disappear, .disappear, .appear], [.appear], [.keep, .appear]]
        try Self.expectDecrypts(try Self.segment("video/960x540/seg_001.ts", patterns: patterns), moved: 0)
        try Self.expectDecrypts(try Self.segment("video/640x360/seg_002.ts", patterns: patterns), moved: 0)
    }

    @Test("an escaped unit that keeps its length is decrypted where it lies: the segment keeps its length")
    func keepsLength() throws {
        let clear = try Self.segment("video/416x234/seg_002.ts", patterns: [[.keep], [.keep]])
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        #expect(encrypted.count == clear.count)
        try Self.expectDecrypts(clear, moved: 0)
    }

    @Test("bounded PES packets (PES_packet_length set) change length: the field follows",
          arguments: [[LengthChangeTests.Block.appear], [.disappear]])
    func bounded(pattern: [Block]) throws {
        try Self.expectDecrypts(try Self.segment("video/416x234/seg_000.ts", patterns: [pattern, pattern], bounded: true), moved: 2)
    }

    @Test("the changed PES spans over a hundred packets and starts with a PCR in its adaptation field")
    func layoutCovered() throws {
        let clear = try Self.segment("video/960x540/seg_003.ts", patterns: [[.appear]])
        let packets = try TransportStream.packets(of: clear)
        let first = try #require(PESUnit.units(pid: 0x100, in: packets).first)
        #expect(first.packetIndices.count > 100)
        let core = try #require(packets[first.packetIndices[0]].adaptationCore, "the first packet has an adaptation field")
        #expect(core[0] & 0x10 != 0, "with a PCR")
        try Self.expectDecrypts(clear, moved: 3)
    }
}
