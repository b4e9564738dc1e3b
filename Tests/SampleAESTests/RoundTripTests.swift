import Foundation
import Testing
@testable import SampleAES

@Suite("SAMPLE-AES segments: round trip and stream validity")
struct RoundTripTests {
    @Test("decrypt(encrypt(x)) is x byte for byte, and the encrypted segment differs", arguments: Fixtures.segments)
    func roundTrip(name: String) throws {
        let clear = try Fixtures.bytes(name)
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        #expect(encrypted != clear)
        #expect(try SampleAES.decrypt(segment: encrypted, key: Fixtures.key, iv: Fixtures.iv) == clear)
    }

    @Test("the encrypted segment is valid TS: sync bytes, continuous counters, PES lengths, PMT with CRC, types and descriptors",
          arguments: Fixtures.segments)
    func validTransportStream(name: String) throws {
        let clear = try Fixtures.bytes(name)
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        try Self.expectValid(encrypted, isVideo: name.hasPrefix("video"))
        // Same PIDs in the same order of first appearance, same PES count per PID.
        let before = Demuxed(clear), after = Demuxed(encrypted)
        #expect(Set(before.packets.map(\.pid)) == Set(after.packets.map(\.pid)))
        #expect(before.pes.mapValues(\.count) == after.pes.mapValues(\.count))
        // PES headers (PTS/DTS) are untouched.
        for (pid, list) in before.pes {
            for (a, b) in zip(list, after.pes[pid] ?? []) {
                let headerLength = 9 + Int(a[8])
                #expect(Array(a[6 ..< headerLength]) == Array(b[6 ..< headerLength]))
            }
        }
    }

    static func expectValid(_ segment: [UInt8], isVideo: Bool, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(segment.count % 188 == 0 && !segment.isEmpty, sourceLocation: sourceLocation)
        #expect(stride(from: 0, to: segment.count, by: 188).allSatisfy { segment[$0] == 0x47 }, sourceLocation: sourceLocation)
        let demuxed = Demuxed(segment)
        var last: [Int: Int] = [:]
        for packet in demuxed.packets {
            if let previous = last[packet.pid] {
                let expected = packet.hasPayload ? (previous + 1) & 15 : previous
                #expect(packet.counter == expected, "PID \(packet.pid): CC \(packet.counter) after \(previous)", sourceLocation: sourceLocation)
            }
            last[packet.pid] = packet.counter
        }
        for (pid, list) in demuxed.pes {
            for pes in list {
                #expect(Array(pes[0 ..< 3]) == [0, 0, 1], sourceLocation: sourceLocation)
                let length = Int(pes[4]) << 8 | Int(pes[5])
                if isVideo { #expect(length == 0 || length == pes.count - 6, sourceLocation: sourceLocation) }
                else { #expect(length == pes.count - 6, "audio PES on \(pid)", sourceLocation: sourceLocation) }
            }
        }
        let section = try #require(demuxed.pmtSection, sourceLocation: sourceLocation)
        #expect(CRC32MPEG2.checksum(section) == 0, "PMT CRC", sourceLocation: sourceLocation)
        let map = try ProgramMap(section)
        try #require(map.streams.count == 1, sourceLocation: sourceLocation)
        let stream = map.streams[0]
        if isVideo {
            #expect(stream.streamType == 0xDB, sourceLocation: sourceLocation)
            #expect(stream.descriptors == [0x0F, 4] + Array("zavc".utf8), sourceLocation: sourceLocation)
        } else {
            #expect(stream.streamType == 0xCF, sourceLocation: sourceLocation)
            // private_data_indicator 'aacd', then registration 'apad' with zaac, priming 0, version 1,
            // and the AudioSpecificConfig of AAC-LC 48 kHz stereo (0x11 0x90).
            let expected: [UInt8] = [0x0F, 4] + Array("aacd".utf8)
                + [0x05, 14] + Array("apad".utf8) + Array("zaac".utf8) + [0, 0, 1, 2, 0x11, 0x90]
            #expect(stream.descriptors == expected, sourceLocation: sourceLocation)
        }
    }

    @Test("a wrong key gives a well-formed segment that is not the clear one", arguments: ["video/640x360/seg_002.ts", "audio/fr/seg_003.ts"])
    func wrongKey(name: String) throws {
        let clear = try Fixtures.bytes(name)
        let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
        var wrong = Fixtures.key
        wrong[0] ^= 0x01
        let decrypted = try SampleAES.decrypt(segment: encrypted, key: wrong, iv: Fixtures.iv)
        #expect(decrypted != clear)
        #expect(decrypted.count == clear.count || name.hasPrefix("video"))
        var wrongIV = Fixtures.iv
        wrongIV[15] ^= 0x80
        #expect(try SampleAES.decrypt(segment: encrypted, key: Fixtures.key, iv: wrongIV) != clear)
    }

    @Test("decrypting a clear segment changes nothing but leaves no SAMPLE-AES signalling to act on")
    func decryptClear() throws {
        let clear = try Fixtures.bytes("audio/en/seg_000.ts")
        #expect(try SampleAES.decrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv) == clear)
    }

    @Test("encrypting twice is refused: the segment is already SAMPLE-AES")
    func alreadyEncrypted() throws {
        let encrypted = try SampleAES.encrypt(segment: try Fixtures.bytes("audio/en/seg_000.ts"), key: Fixtures.key, iv: Fixtures.iv)
        #expect(throws: SampleAESError.self) { try SampleAES.encrypt(segment: encrypted, key: Fixtures.key, iv: Fixtures.iv) }
    }

    @Test("malformed input is an error with a code, never a crash")
    func malformed() throws {
        let clear = try Fixtures.bytes("video/416x234/seg_001.ts")
        func code(_ bytes: [UInt8], key: [UInt8] = Fixtures.key, iv: [UInt8] = Fixtures.iv) -> SampleAESError.Code? {
            do {
                _ = try SampleAES.encrypt(segment: bytes, key: key, iv: iv)
                return nil
            } catch { return error.code }
        }
        #expect(code([]) == .malformedTransportStream)
        #expect(code(Array(clear.dropLast(100))) == .malformedTransportStream)
        #expect(code(Array(clear.prefix(187))) == .malformedTransportStream)
        var badSync = clear
        badSync[188 * 7] = 0x48
        #expect(code(badSync) == .malformedTransportStream)
        #expect(code(clear, key: Array(Fixtures.key.prefix(15))) == .invalidKey)
        #expect(code(clear, iv: []) == .invalidKey)
        // The PMT (third packet) with a broken CRC.
        var badCRC = clear
        badCRC[2 * 188 + 20] ^= 0xFF
        #expect(code(badCRC) == .malformedProgramTable)
        // No PAT at all (packet 0 is the SDT, packet 1 the PAT).
        #expect(code(Array(clear[..<188] + clear[376...])) == .malformedProgramTable)
        // A PES cut short: keep only the first packet of the last audio PES (its length no longer adds up).
        let audio = try Fixtures.bytes("audio/en/seg_001.ts")
        let lastStart = try #require(Demuxed(audio).packets.lastIndex { $0.pid == 0x100 && $0.start })
        try #require(lastStart + 1 < audio.count / 188 - 1, "the last audio PES spans several packets")
        #expect(code(Array(audio.prefix(188 * (lastStart + 1)))) == .malformedPES)
        // Random packets with sync bytes: an error of some kind, no trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0 ..< 50 {
            var noise = (0 ..< 188 * 6).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
            for offset in stride(from: 0, to: noise.count, by: 188) { noise[offset] = 0x47 }
            #expect(code(noise) != nil)
            #expect(throws: SampleAESError.self) { try SampleAES.decrypt(segment: Array(noise.prefix(100)), key: Fixtures.key, iv: Fixtures.iv) }
        }
        // Every fixture segment cut at random packet boundaries and mangled inside: never a trap.
        for trial in 0 ..< 40 {
            var mangled = Array(clear.prefix(188 * Int.random(in: 3 ... 40, using: &generator)))
            let position = Int.random(in: 0 ..< mangled.count, using: &generator)
            mangled[position] = UInt8.random(in: 0 ... 255, using: &generator)
            _ = try? SampleAES.encrypt(segment: mangled, key: Fixtures.key, iv: Fixtures.iv)
            _ = try? SampleAES.decrypt(segment: mangled, key: Fixtures.key, iv: Fixtures.iv)
            _ = trial
        }
    }
}
