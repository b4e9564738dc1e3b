@testable import CMAF
import Foundation
import TestKit
import Testing

/// The box reader on its own (32- and 64-bit sizes, size 0, headers that do not fit), then
/// damaged protected segments and init segments: every cut of a real one, thousands of byte
/// flips, sample sizes past the `mdat`, subsamples that do not add up, a wrong key size.
/// Each must end in a CMAFError or a result, never a trap or a hang.
@Suite struct MalformedBoxTests {
    // MARK: the box reader

    /// The boxes `BoxIterator` finds in `bytes`, as (type, range).
    static func boxes(_ bytes: [UInt8]) throws(CMAFError) -> [(String, Range<Int>)] {
        var iterator = BoxIterator(bytes)
        var found: [(String, Range<Int>)] = []
        while let box = try iterator.next() { found.append(("\(box.type)", box.range)) }
        return found
    }

    @Test func sizesOf32And64BitsAndToTheEndAreRead() throws {
        var writer = BoxWriter()
        writer.box("free") { $0.zeros(4) }
        writer.u32(1); writer.fourCC("skip"); writer.u64(16 + 3); writer.zeros(3) // largesize
        writer.u32(0); writer.fourCC("mdat"); writer.zeros(10) // to the end
        let found = try Self.boxes(writer.bytes)
        #expect(found.map(\.0) == ["free", "skip", "mdat"])
        #expect(found.map(\.1) == [0 ..< 12, 12 ..< 31, 31 ..< 49])
        var iterator = BoxIterator(writer.bytes)
        _ = try iterator.next()
        let large = try #require(try iterator.next())
        #expect(large.hasLargeSize && large.headerSize == 16 && large.body == 28 ..< 31)
        let last = try #require(try iterator.next())
        #expect(last.extendsToEnd && last.body == 39 ..< 49)
        #expect(try iterator.next() == nil)
    }

    @Test(arguments: [
        [0, 0, 0, 7, 0x66, 0x72, 0x65, 0x65],  // smaller than its header
        [0, 0, 0, 9, 0x66, 0x72, 0x65, 0x65],  // past the end
        [0, 0, 0, 8, 0x66, 0x72, 0x65],  // a truncated header
        [0, 0, 0, 1, 0x66, 0x72, 0x65, 0x65, 0, 0, 0, 0],  // a truncated largesize
        [0, 0, 0, 1, 0x66, 0x72, 0x65, 0x65, 0, 0, 0, 0, 0, 0, 0, 8],  // a largesize under 16
        [0, 0, 0, 1, 0x66, 0x72, 0x65, 0x65, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  // a largesize past everything
        [0, 0, 0, 16, 0x75, 0x75, 0x69, 0x64, 0, 0, 0, 0, 0, 0, 0, 0],  // a uuid box without room for its user type
    ] as [[UInt8]])
    func headersThatDoNotFitAreRefused(_ bytes: [UInt8]) {
        #expect(cmafErrorCode { _ = try Self.boxes(bytes) } == .malformedBox)
    }

    @Test func fieldsPastABoxsEndAreRefused() throws {
        let bytes: [UInt8] = [0, 0, 0, 12, 0x6D, 0x66, 0x68, 0x64, 0, 0, 0, 0, 0xAA]
        var iterator = BoxIterator(bytes)
        let box = try #require(try iterator.first("mfhd"))
        var reader = FieldReader(bytes, body: box)
        _ = try reader.versionAndFlags()
        #expect(cmafErrorCode { _ = try reader.u32("sequence number") } == .malformedBox)
        #expect(cmafErrorCode { try reader.skip(-1) } == .malformedBox)
    }

    // MARK: damaged segments

    /// A real protected segment (the first fragment of 416x234, `styp` first), its track info
    /// and the clear segment it gives.
    static func segment(_ scheme: ProtectionScheme) throws -> (bytes: [UInt8], info: ProtectedTrackInfo, init: [UInt8]) {
        let rendition = try ProtectionRemovalTests.Protected("video/416x234", scheme)
        let info = try #require(try ProtectionRemoval.clearInit(rendition.protectedInit).protection)
        let (encrypted, encryption) = try rendition.encrypted()[0]
        return (MediaSegment.bytes(encrypted, sequenceNumber: 1, encryption: encryption), info, rendition.protectedInit)
    }

    /// Runs `body`, which must throw a CMAFError or return; any other error is an issue.
    static func survives(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            return true
        } catch is CMAFError {
            return false
        } catch {
            Issue.record("not a CMAFError: \(error)")
            return false
        }
    }

    /// Where the `moof` of `bytes` ends.
    static func moofEnd(_ bytes: [UInt8]) throws -> Int {
        var iterator = BoxIterator(bytes)
        return try #require(try iterator.first("moof")).end
    }

    @Test(arguments: [ProtectionScheme.cbcs, .cenc])
    func everyCutOfASegmentIsRefused(_ scheme: ProtectionScheme) throws {
        let (bytes, info, _) = try Self.segment(scheme)
        let cipher = try SampleCipher(key: ProtectionRemovalTests.key)
        let moofEnd = try Self.moofEnd(bytes)
        // Every cut in the boxes, then every 61st byte of the samples: the last box always claims more.
        for cut in Array(0 ..< moofEnd + 16) + Array(stride(from: moofEnd + 16, to: bytes.count, by: 61)) {
            #expect(!Self.survives { _ = try ProtectionRemoval.clearSegment(Array(bytes[..<cut]), protection: info, cipher: cipher) },
                    "a segment cut at \(cut) of \(bytes.count) was read")
        }
    }

    @Test(arguments: [ProtectionScheme.cbcs, .cenc])
    func byteFlipsInTheBoxesEndInAnErrorOrAResult(_ scheme: ProtectionScheme) throws {
        let (bytes, info, _) = try Self.segment(scheme)
        let cipher = try SampleCipher(key: ProtectionRemovalTests.key)
        var refused = 0
        for position in 0 ..< (try Self.moofEnd(bytes)) + 8 {
            for mask: UInt8 in [0xFF, 0x80, 0x01, 0x10] {
                var damaged = bytes
                damaged[position] ^= mask
                if !Self.survives({ _ = try ProtectionRemoval.clearSegment(damaged, protection: info, cipher: cipher) }) { refused += 1 }
            }
        }
        #expect(refused > 100)
    }

    @Test(arguments: [ProtectionScheme.cbcs, .cenc])
    func cutsAndFlipsOfAnInitSegmentEndInAnErrorOrAResult(_ scheme: ProtectionScheme) throws {
        let (_, _, protectedInit) = try Self.segment(scheme)
        for cut in 0 ..< protectedInit.count {
            #expect(!Self.survives { _ = try ProtectionRemoval.clearInit(Array(protectedInit[..<cut])) }, "an init cut at \(cut) was read")
        }
        for position in 0 ..< protectedInit.count {
            for mask: UInt8 in [0xFF, 0x80, 0x01] {
                var damaged = protectedInit
                damaged[position] ^= mask
                _ = Self.survives { _ = try ProtectionRemoval.clearInit(damaged) }
            }
        }
    }

    /// The first `type` box in `bytes`, looking into `moof` and `traf`.
    static func find(_ type: FourCC, in bytes: [UInt8], within range: Range<Int>? = nil) throws -> Box? {
        var iterator = BoxIterator(bytes, in: range)
        while let box = try iterator.next() {
            if box.type == type { return box }
            if box.type == "moof" || box.type == "traf", let inner = try find(type, in: bytes, within: box.body) { return inner }
        }
        return nil
    }

    @Test(arguments: [ProtectionScheme.cbcs, .cenc])
    func aSampleSizePastTheMediaDataIsRefused(_ scheme: ProtectionScheme) throws {
        var (bytes, info, _) = try Self.segment(scheme)
        let trun = try #require(try Self.find("trun", in: bytes))
        // trun flags 0x301 or 0x701/0xF01: count, offset, then per sample duration, size, …; grow the first size.
        let sizeField = trun.body.lowerBound + 4 + 4 + 4 + 4
        let size = FieldReader.u32(bytes, at: sizeField) + 1_000_000
        for index in 0 ..< 4 { bytes[sizeField + index] = UInt8(truncatingIfNeeded: size >> (24 - 8 * UInt32(index))) }
        #expect(cmafErrorCode { _ = try ProtectionRemoval.clearSegment(bytes, protection: info, key: ProtectionRemovalTests.key) } == .malformedBox)
        // Put back, then the last sample 100 bytes longer, with a box after the mdat: it ends inside the segment but past the mdat.
        for index in 0 ..< 4 { bytes[sizeField + index] = UInt8(truncatingIfNeeded: (size - 1_000_000) >> (24 - 8 * UInt32(index))) }
        let flags = FieldReader.u32(bytes, at: trun.body.lowerBound) & 0xFFF
        let count = Int(FieldReader.u32(bytes, at: trun.body.lowerBound + 4))
        let record = 4 * [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count
        let lastSizeField = trun.body.lowerBound + 12 + (count - 1) * record + 4
        let grown = FieldReader.u32(bytes, at: lastSizeField) + 100
        for index in 0 ..< 4 { bytes[lastSizeField + index] = UInt8(truncatingIfNeeded: grown >> (24 - 8 * UInt32(index))) }
        var free = BoxWriter()
        free.box("free") { $0.zeros(4096) }
        do {
            _ = try ProtectionRemoval.clearSegment(bytes + free.bytes, protection: info, key: ProtectionRemovalTests.key)
            Issue.record("a sample past the mdat was read")
        } catch {
            #expect(error.code == .malformedBox && error.message.contains("outside every 'mdat'"), "\(error)")
        }
    }

    @Test(arguments: [ProtectionScheme.cbcs, .cenc])
    func subsamplesThatDoNotAddUpAreRefused(_ scheme: ProtectionScheme) throws {
        var (bytes, info, _) = try Self.segment(scheme)
        let senc = try #require(try Self.find("senc", in: bytes))
        // The first sample's record: its IV, a 16-bit count, then (clear 16, protected 32): grow the protected count.
        let entry = senc.body.lowerBound + 4 + 4 + info.perSampleIVSize + 2
        bytes[entry + 5] &+= 16
        #expect(cmafErrorCode { _ = try ProtectionRemoval.clearSegment(bytes, protection: info, key: ProtectionRemovalTests.key) } == .malformedSample)
    }

    @Test func aKeyOfTheWrongSizeIsRefused() throws {
        let (bytes, info, _) = try Self.segment(.cbcs)
        #expect(cmafErrorCode { _ = try ProtectionRemoval.clearSegment(bytes, protection: info, key: Array(repeating: 1, count: 15)) } == .invalidKey)
    }

    @Test func otherSchemesAreRefusedByName() throws {
        var (_, _, protectedInit) = try Self.segment(.cbcs)
        let schm = try #require((0 ..< protectedInit.count - 12).first { Array(protectedInit[$0 ..< $0 + 4]) == Array("schm".utf8) })
        protectedInit.replaceSubrange(schm + 8 ..< schm + 12, with: Array("cens".utf8))
        do {
            _ = try ProtectionRemoval.clearInit(protectedInit)
            Issue.record("a 'cens' track was read")
        } catch {
            #expect(error.code == .unsupportedStream && error.message.contains("cens"))
        }
    }

    @Test func aSegmentWithoutFragmentsIsRefused() throws {
        let (_, info, _) = try Self.segment(.cenc)
        var writer = BoxWriter()
        writer.box("styp") { $0.fourCC("cmfs") }
        #expect(cmafErrorCode { _ = try ProtectionRemoval.clearSegment(writer.bytes, protection: info, key: ProtectionRemovalTests.key) } == .malformedBox)
    }
}
