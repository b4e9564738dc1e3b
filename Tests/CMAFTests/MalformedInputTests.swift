import Foundation
@testable import CMAF
import TestKit
import Testing

/// The bit reader on its own, and bad media everywhere: truncated parameter sets and slices,
/// over-long exp-Golomb codes, values out of range, parameter sets never seen, lengths that
/// run past a sample, and thousands of damaged units. Each must end in a typed CMAFError
/// (never a trap, never a hang).
@Suite struct MalformedInputTests {
    // MARK: the bit reader

    @Test func expGolombCodesReadBackWhatWasWritten() throws {
        let unsigned = [0, 1, 2, 3, 7, 8, 254, 255, 65535, 1 << 20, (1 << 31) - 1, (1 << 32) - 2]
        let signed = [0, 1, -1, 2, -2, 100, -100, (1 << 31) - 1, -((1 << 31) - 1)]
        var writer = BitWriter()
        for value in unsigned { writer.ue(value) }
        for value in signed { writer.se(value) }
        writer.u(0x5A, 7)
        writer.flag(true)
        var reader = BitReader(writer.bytes, errorCode: .malformedSlice, context: "test")
        for value in unsigned { #expect(try reader.ue() == value) }
        for value in signed { #expect(try reader.se() == value) }
        #expect(try reader.bits(7) == 0x5A)
        #expect(try reader.flag())
        #expect(reader.position == writer.bits.count)
    }

    @Test(arguments: [32, 40, 200])
    func expGolombWithTooManyLeadingZerosIsRefused(zeros: Int) {
        var writer = BitWriter()
        writer.u(0, zeros)
        writer.u(1, 1)
        writer.u(0, 40)
        var reader = BitReader(writer.bytes, errorCode: .malformedParameterSet, context: "test")
        do {
            _ = try reader.ue("the_field")
            Issue.record("read a code with \(zeros) leading zeros")
        } catch {
            #expect(error.code == .malformedParameterSet)
            #expect(error.message.contains("more than 31 leading zero bits"))
            #expect(error.message.contains("the_field"))
        }
    }

    @Test func readsPastTheEndAreRefused() throws {
        var reader = BitReader([0xFF], errorCode: .malformedSlice, context: "test")
        #expect(try reader.bits(5) == 31)
        #expect(cmafErrorCode { _ = try reader.bits(4) } == .malformedSlice)
        #expect(cmafErrorCode { try reader.skip(4) } == .malformedSlice)
        #expect(try reader.bits(3) == 7)
        #expect(cmafErrorCode { _ = try reader.flag() } == .malformedSlice)
        // A code of zeros that runs off the end.
        var zeros = BitReader([0, 0], errorCode: .malformedSlice, context: "test")
        #expect(cmafErrorCode { _ = try zeros.ue() } == .malformedSlice)
        #expect(cmafErrorCode { _ = try zeros.bits(33) } == .malformedSlice)
    }

    @Test func rbspPositionsMapBackToStoredBytes() {
        // 00 00 [03] 01 00 00 [03] 00 FF 00 00 [03]: RBSP 00 00 01 00 00 00 FF 00 00.
        let stored: [UInt8] = [0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x03, 0x00, 0xFF, 0x00, 0x00, 0x03]
        let rbsp = RBSP(stored)
        #expect(rbsp.bytes == [0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00])
        #expect(rbsp.removedBefore == [2, 5, 9])
        for rbspBytes in 0 ... rbsp.bytes.count {
            #expect(rbsp.storedByteCount(rbspBytes: rbspBytes) == AnnexB.storedCount(stored, rbspBytes: rbspBytes))
        }
        // An emulation byte right after the last RBSP byte is not counted.
        #expect(rbsp.storedByteCount(rbspBytes: 2) == 2)
        #expect(rbsp.storedByteCount(throughBit: 17) == 4)
        // Read from a prefix, the unescaped bytes are a prefix of the whole.
        #expect(RBSP(stored, limit: 7).bytes == Array(rbsp.bytes.prefix(5)))
        var reader = BitReader(rbsp, errorCode: .malformedSlice, context: "test")
        #expect(reader.moreRBSPData())
        try? reader.skip(55)
        #expect(!reader.moreRBSPData())
    }

    // MARK: real units, cut and damaged

    /// The fixture's SPS, PPS, IDR slice and a P slice.
    static func h264Units() throws -> (sps: [UInt8], pps: [UInt8], slices: [[UInt8]], sets: H264ParameterSets) {
        let accessUnits = try TransportStreamVideo.accessUnits(MediaFixtures.bytes("video/960x540/seg_000.ts"))
        let units = accessUnits[0] + accessUnits[1]
        let sps = try #require(units.first { $0[0] & 0x1F == 7 }), pps = try #require(units.first { $0[0] & 0x1F == 8 })
        return (sps, pps, units.filter { [1, 5].contains($0[0] & 0x1F) }, try H264ParameterSets([sps, pps]))
    }

    /// An x265 stream's VPS, SPS, PPS and first slices (IDR, P, B).
    static func hevcUnits() async throws -> (vps: [UInt8], sps: [UInt8], pps: [UInt8], slices: [[UInt8]], sets: HEVCParameterSets) {
        try await HEVCSliceHeaderTests.withStream("wavefront") { _, units in
            let first = { (type: UInt8) in units.first { HEVCNALType.of($0[0]) == type } ?? [] }
            let (vps, sps, pps) = (first(HEVCNALType.vps), first(HEVCNALType.sps), first(HEVCNALType.pps))
            return (vps, sps, pps, Array(units.filter { HEVCNALType.isVCL(HEVCNALType.of($0[0])) }.prefix(6)), try HEVCParameterSets([vps, sps, pps]))
        }
    }

    /// Parses every prefix of `unit`; the prefixes that fail must fail with `code`, and they
    /// must be exactly the shorter ones: returns the shortest length that parses.
    static func threshold<T: Equatable>(_ unit: [UInt8], code: CMAFError.Code, _ parse: (ArraySlice<UInt8>) throws(CMAFError) -> T) throws -> Int {
        let whole = try parse(unit[...])
        var shortest = unit.count
        for length in stride(from: unit.count - 1, through: 0, by: -1) {
            do {
                #expect(try parse(unit[..<length]) == whole, "a \(length)-byte prefix parsed differently")
                #expect(shortest == length + 1, "a \(length)-byte prefix parsed after a longer one failed")
                shortest = length
            } catch {
                #expect(error.code == code, "\(error)")
            }
        }
        return shortest
    }

    @Test func truncatedH264UnitsAreRefused() async throws {
        let (sps, pps, slices, sets) = try Self.h264Units()
        // The last SPS field read is vui_parameters_present_flag: its byte is the last one needed.
        let trace = try await HeaderTrace.structures(of: MediaFixtures.path("video/960x540/seg_000.ts"))
        let vuiFlag = try #require(trace.first { $0.name == "Sequence Parameter Set" }?.fields.first { $0.name == "vui_parameters_present_flag" })
        #expect(try Self.threshold(sps, code: .malformedParameterSet) { nal throws(CMAFError) in try H264SPS(nal: nal) } == vuiFlag.position / 8 + 1)
        #expect(try Self.threshold(pps, code: .malformedParameterSet) { nal throws(CMAFError) in try H264PPS(nal: nal) } == pps.count)
        for slice in slices {
            let length = try sets.sliceHeaderLength(of: slice[...])
            #expect(try Self.threshold(slice, code: .malformedSlice) { nal throws(CMAFError) in try sets.sliceHeaderLength(of: nal) } == length)
        }
    }

    @Test func truncatedHEVCUnitsAreRefused() async throws {
        let (vps, sps, pps, slices, sets) = try await Self.hevcUnits()
        #expect(try Self.threshold(vps, code: .malformedParameterSet) { nal throws(CMAFError) in try HEVCVPS(nal: nal) } > 12)
        #expect(try Self.threshold(sps, code: .malformedParameterSet) { nal throws(CMAFError) in try HEVCSPS(nal: nal) } > 20)
        #expect(try Self.threshold(pps, code: .malformedParameterSet) { nal throws(CMAFError) in try HEVCPPS(nal: nal) } > 4)
        #expect(slices.count == 6)
        for slice in slices {
            let length = try sets.sliceHeaderLength(of: slice[...])
            #expect(try Self.threshold(slice, code: .malformedSlice) { nal throws(CMAFError) in try sets.sliceHeaderLength(of: nal) } == length)
        }
    }

    @Test func slicesNamingUnknownParameterSetsAreRefused() async throws {
        let (sps, pps, slices, _) = try Self.h264Units()
        func message(_ sets: H264ParameterSets) -> String? {
            do { _ = try sets.sliceHeaderLength(of: slices[0][...]) } catch { return error.code == .malformedSlice ? error.message : "\(error)" }
            return nil
        }
        #expect(message(H264ParameterSets())?.contains("PPS 0 was never seen") == true)
        #expect(message(try H264ParameterSets([pps]))?.contains("SPS 0, named by PPS 0, was never seen") == true)
        #expect(message(try H264ParameterSets([sps, pps])) == nil)
        // The same slice with pic_parameter_set_id 5 (written anew after first_mb and slice_type).
        var reader = BitReader(RBSP(slices[1]), errorCode: .malformedSlice, context: "test")
        try reader.skip(8)
        let firstMb = try reader.ue(), sliceType = try reader.ue()
        _ = try reader.ue()
        var writer = BitWriter(bits: Array(BitWriter.bits(of: RBSP(slices[1]).bytes).prefix(8)))
        writer.ue(firstMb)
        writer.ue(sliceType)
        writer.ue(5)
        writer.append(Array(BitWriter.bits(of: RBSP(slices[1]).bytes)[reader.position...]))
        #expect(cmafErrorCode { _ = try H264ParameterSets([sps, pps]).sliceHeaderLength(of: writer.bytes[...]) } == .malformedSlice)

        let (_, hevcSPS, hevcPPS, hevcSlices, _) = try await Self.hevcUnits()
        #expect(cmafErrorCode { _ = try HEVCParameterSets().sliceHeaderLength(of: hevcSlices[0][...]) } == .malformedSlice)
        #expect(cmafErrorCode { _ = try HEVCParameterSets([hevcPPS]).sliceHeaderLength(of: hevcSlices[0][...]) } == .malformedSlice)
        #expect(cmafErrorCode { _ = try HEVCParameterSets([hevcSPS, hevcPPS]).sliceHeaderLength(of: hevcSlices[0][...]) } == nil)
    }

    @Test func outOfRangeValuesAreRefused() {
        // An SPS whose seq_parameter_set_id is coded with 40 leading zeros.
        var writer = BitWriter()
        writer.u(0x67, 8)
        writer.u(77, 8)
        writer.u(0x40, 8)
        writer.u(30, 8)
        writer.u(0, 40)
        writer.u(1, 1)
        writer.u(0, 40)
        #expect(cmafErrorCode { _ = try H264SPS(nal: writer.bytes[...]) } == .malformedParameterSet)
        // log2_max_frame_num_minus4 = 13.
        writer = BitWriter()
        writer.u(0x67, 8); writer.u(77, 8); writer.u(0x40, 8); writer.u(30, 8)
        writer.ue(0); writer.ue(13); writer.trailingBits()
        #expect(cmafErrorCode { _ = try H264SPS(nal: writer.bytes[...]) } == .malformedParameterSet)
        // A PPS with two slice groups.
        writer = BitWriter()
        writer.u(0x68, 8); writer.ue(0); writer.ue(0); writer.flag(false); writer.flag(false); writer.ue(1)
        writer.u(0, 64)
        #expect(cmafErrorCode { _ = try H264PPS(nal: writer.bytes[...]) } == .unsupportedStream)
        // An HEVC SPS of the second layer, and one with the forbidden bit set.
        #expect(cmafErrorCode { _ = try HEVCSPS(nal: [0x42, 0x09, 0x01, 0x01, 0x60, 0, 0, 0][...]) } == .unsupportedStream)
        #expect(cmafErrorCode { _ = try HEVCSPS(nal: [0xC2, 0x01, 0x01, 0x01, 0x60, 0, 0, 0][...]) } == .malformedParameterSet)
        // Not the unit type asked for.
        #expect(cmafErrorCode { _ = try H264SPS(nal: [0x68, 0xCE, 0x38, 0x80][...]) } == .malformedParameterSet)
        #expect(cmafErrorCode { var sets = H264ParameterSets(); try sets.add([0x06, 0x05][...]) } == .malformedParameterSet)
        #expect(cmafErrorCode { var sets = HEVCParameterSets(); try sets.add(ArraySlice<UInt8>()) } == .malformedParameterSet)
    }

    @Test func samplesWhoseLengthsDoNotAddUpAreRefused() throws {
        var sets = VideoParameterSets.h264(H264ParameterSets())
        for sample: [UInt8] in [[0, 0, 0, 5, 9, 1], [0, 0, 1], [0, 0, 0, 1, 9, 0], [0xFF, 0xFF, 0xFF, 0xFF, 9]] {
            #expect(cmafErrorCode { _ = try Subsample.video(sample: sample, scheme: .cbcs, parameterSets: &sets) } == .malformedSample)
        }
        #expect(try LengthPrefixedNALUnits.units(in: [0, 0, 0, 2, 9, 1, 0, 0, 0, 0, 0, 0, 0, 1, 6]) == [4 ..< 6, 10 ..< 10, 14 ..< 15])
    }

    /// Real units with bits flipped, bytes zeroed and cut short, thousands of them, through
    /// every parser and the subsample layout: each either parses or throws a CMAFError.
    @Test func damagedUnitsNeverTrap() async throws {
        let h264 = try Self.h264Units()
        let hevc = try await Self.hevcUnits()
        let bases: [(codec: Int, unit: [UInt8])] = [(0, h264.sps), (0, h264.pps)] + h264.slices.map { (0, Array($0.prefix(64))) }
            + [(1, hevc.vps), (1, hevc.sps), (1, hevc.pps)] + hevc.slices.map { (1, Array($0.prefix(96))) }
        var random = SplitMix(state: 0x5EED_CAFE)
        var thrown = 0, parsed = 0
        for _ in 0 ..< 4000 {
            let base = bases[Int(random.next() % UInt64(bases.count))]
            var unit = base.unit
            switch random.next() % 4 {
            case 0:
                for _ in 0 ... random.next() % 4 {
                    let bit = Int(random.next() % UInt64(unit.count * 8))
                    unit[bit / 8] ^= 0x80 >> UInt8(bit % 8)
                }
            case 1:
                let start = Int(random.next() % UInt64(unit.count))
                let end = min(unit.count, start + 1 + Int(random.next() % 12))
                for index in start ..< end { unit[index] = 0 }
            case 2:
                unit = Array(unit.prefix(Int(random.next() % UInt64(unit.count))))
            default:
                unit = Array(unit.prefix(2)) + (0 ..< Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            let results: [Bool]
            if base.codec == 0 {
                var sets = h264.sets
                var layout = VideoParameterSets.h264(h264.sets)
                results = [
                    (try? H264SPS(nal: unit[...])) != nil, (try? H264PPS(nal: unit[...])) != nil,
                    (try? sets.add(unit[...])) != nil, (try? sets.sliceHeaderLength(of: unit[...])) != nil,
                    (try? Subsample.video(sample: AnnexB.lengthPrefixed([unit]), scheme: .cenc, parameterSets: &layout)) != nil,
                ]
            } else {
                var sets = hevc.sets
                var layout = VideoParameterSets.hevc(hevc.sets)
                results = [
                    (try? HEVCVPS(nal: unit[...])) != nil, (try? HEVCSPS(nal: unit[...])) != nil, (try? HEVCPPS(nal: unit[...])) != nil,
                    (try? sets.add(unit[...])) != nil, (try? sets.sliceHeaderLength(of: unit[...])) != nil,
                    (try? Subsample.video(sample: AnnexB.lengthPrefixed([unit]), scheme: .cbcs, parameterSets: &layout)) != nil,
                    (try? HEVCDecoderConfiguration.record(vps: hevc.vps, sps: unit, pps: hevc.pps)) != nil,
                ]
            }
            thrown += results.count(where: { !$0 })
            parsed += results.count(where: { $0 })
        }
        // Both outcomes happen: the damage reaches the parsers rather than stopping at the door.
        #expect(thrown > 1000)
        #expect(parsed > 1000)
    }
}
