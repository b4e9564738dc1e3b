import Crypto
import _CryptoExtras
import Foundation
import Testing
@testable import SampleAES

/// Emulation prevention makes encrypted NAL units longer or shorter than clear ones, which
/// moves PES packets across TS packets. The fixtures barely do that, so these segments are
/// made to: an IDR slice of 20 000 bytes whose encryption removes or adds hundreds of
/// emulation-prevention bytes.
@Suite("SAMPLE-AES re-packetizing when NAL units change length")
struct RepacketizingTests {
    /// The first video PES of a fixture segment with its IDR slice replaced by `raw`
    /// (unescaped, 20 000 bytes, the original slice header first), escaped and laid out again.
    static func synthetic(_ fill: (inout [UInt8], [Int]) throws -> Void) throws -> [UInt8] {
        let clear = try Fixtures.bytes("video/416x234/seg_000.ts")
        let packets = try TransportStream.packets(of: clear)
        let unit = try #require(PESUnit.units(pid: 0x100, in: packets).first)
        var pes = unit.bytes(in: packets)
        let header = try PESHeader(pes, pid: 0x100)
        try #require(header.packetLength == 0, "video PES are unbounded in the fixtures")
        let stream = Array(pes[header.length...])
        let idr = try #require(H264SampleEncryption.nalUnits(stream).first { $0.type == 5 })
        var raw = Array(H264SampleEncryption.unescape(stream[idr.start ..< idr.end]).prefix(32))
        raw += [UInt8](repeating: 0x55, count: 20_000 - 32)
        try fill(&raw, H264SampleEncryption.encryptedBlockOffsets(length: raw.count))
        let escaped = H264SampleEncryption.escape(raw)
        try #require(H264SampleEncryption.unescape(escaped[...]) == raw)
        pes.replaceSubrange(header.length..., with: Array(stream[..<idr.start]) + escaped + Array(stream[idr.end...]))
        return try unit.layout(pes, in: packets).write(packets)
    }

    @Test("ciphertext with fewer emulation-prevention bytes: packets are dropped, and decryption puts them back exactly")
    func shrinking() throws {
        let clear = try Self.synthetic { raw, _ in
            for index in 32 ..< raw.count { raw[index] = 0 }
        }
        try RoundTripTests.expectClearValid(clear)
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        #expect(encrypted.count <= clear.count - 3 * 188, "\(clear.count) → \(encrypted.count)")
        try RoundTripTests.expectValid(encrypted, isVideo: true)
        #expect(try SampleAES.decrypt(segment: encrypted, key: Fixtures.key, iv: Fixtures.iv) == clear)
    }

    @Test("ciphertext with more emulation-prevention bytes (blocks that encrypt to zeros): packets are inserted, and removed again")
    func growing() throws {
        // CBC: c_i = E(p_i ^ c_(i-1)); for c_i = 0 take p_0 = D(0) ^ IV and p_i = D(0).
        let zero = [UInt8](repeating: 0, count: 16)
        let decryptedZero = Array(try AES._CBC.decrypt(zero, using: SymmetricKey(data: Fixtures.key), iv: AES._CBC.IV(ivBytes: zero), noPadding: true))
        let clear = try Self.synthetic { raw, offsets in
            for (position, offset) in offsets.enumerated() {
                for byte in 0 ..< 16 {
                    raw[offset + byte] = decryptedZero[byte] ^ (position == 0 ? Fixtures.iv[byte] : 0)
                }
            }
        }
        try RoundTripTests.expectClearValid(clear)
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        #expect(encrypted.count >= clear.count + 3 * 188, "\(clear.count) → \(encrypted.count)")
        try RoundTripTests.expectValid(encrypted, isVideo: true)
        #expect(try SampleAES.decrypt(segment: encrypted, key: Fixtures.key, iv: Fixtures.iv) == clear)
    }
}

extension RoundTripTests {
    /// Sync bytes and continuity counters of a clear segment.
    static func expectClearValid(_ segment: [UInt8]) throws {
        let demuxed = Demuxed(segment)
        #expect(stride(from: 0, to: segment.count, by: 188).allSatisfy { segment[$0] == 0x47 })
        var last: [Int: Int] = [:]
        for packet in demuxed.packets {
            if let previous = last[packet.pid] { #expect(packet.counter == (packet.hasPayload ? (previous + 1) & 15 : previous)) }
            last[packet.pid] = packet.counter
        }
    }
}
