import Foundation
@testable import CMAF
import SampleAES
import TestKit
import Testing

/// Syntax no encoder here writes, reached by splicing encoder output: fields are cut out of
/// real parameter sets and slice headers at the bit positions ffmpeg's trace gives and other
/// fields written in (with the test's BitWriter), the slice data kept, the result escaped
/// again; then ffmpeg traces the spliced stream, and the parser must agree with that trace
/// exactly as for the encoders' own streams. ffmpeg parses headers only (it never decodes
/// the spliced pictures), and it derives predicted reference picture sets itself, so the
/// number of flags an inter-predicted set carries is checked against its own derivation.
@Suite struct SplicedStreamTests {
    /// A replacement of RBSP bits `range` (of the original unit) by `bits`.
    struct Edit {
        var range: Range<Int>
        var bits: [Bool]
    }

    /// How a spliced unit ends.
    enum Ending {
        /// A parameter set: rbsp_trailing_bits() after the header bits.
        case trailingBits
        /// An H.264 CABAC slice: cabac_alignment_one_bits, then the slice data from RBSP byte `dataByte`.
        case cabacAlignment(dataByte: Int)
        /// An HEVC slice: byte_alignment(), then the slice data from RBSP byte `dataByte`.
        case byteAlignment(dataByte: Int)
    }

    /// `unit` (stored bytes) with `edits` applied to its RBSP bits before `headerEnd` (where
    /// its trailing or alignment bits begin), `ending` put back, escaped again.
    static func splice(_ unit: [UInt8], edits: [Edit], headerEnd: Int, ending: Ending) -> [UInt8] {
        let rbsp = H264SampleEncryption.unescape(unit[...])
        let bits = BitWriter.bits(of: rbsp)
        var writer = BitWriter()
        var at = 0
        for edit in edits.sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) {
            writer.append(Array(bits[at ..< edit.range.lowerBound]))
            writer.append(edit.bits)
            at = edit.range.upperBound
        }
        writer.append(Array(bits[at ..< headerEnd]))
        var out: [UInt8]
        switch ending {
        case .trailingBits:
            writer.trailingBits()
            out = writer.bytes
        case .cabacAlignment(let dataByte):
            while writer.bits.count % 8 != 0 { writer.flag(true) }
            out = writer.bytes + rbsp[dataByte...]
        case .byteAlignment(let dataByte):
            writer.trailingBits()
            out = writer.bytes + rbsp[dataByte...]
        }
        return H264SampleEncryption.escape(out)
    }

    /// The traced structures named `name`, paired in order with the units for which `matches`
    /// holds (the first traced ones, the stream's extradata, dropped when there are more).
    static func pair(_ units: [[UInt8]], _ trace: [TracedStructure], name: String, _ matches: ([UInt8]) -> Bool) -> [Int: TracedStructure] {
        let traced = trace.filter { $0.name == name }
        let indices = units.indices.filter { matches(units[$0]) }
        var result: [Int: TracedStructure] = [:]
        for (offset, index) in indices.enumerated() { result[index] = traced[traced.count - indices.count + offset] }
        return result
    }

    static func field(_ structure: TracedStructure, _ name: String) throws -> TracedStructure.Field {
        guard let field = structure.fields.first(where: { $0.name == name }) else { throw TestFailure("no \(name) in \(structure.name)") }
        return field
    }

    /// Writes `units` as an Annex B file in `folder` and traces it.
    static func trace(_ units: [[UInt8]], in folder: URL, name: String) async throws -> (URL, [TracedStructure]) {
        let file = folder.appendingPathComponent(name)
        try Data(AnnexB.stream(units)).write(to: file)
        return (file, try await HeaderTrace.structures(of: file.path))
    }

    // MARK: HEVC: short-term reference picture sets in the SPS, predicted from each other

    /// Three SPS sets: set 0 explicit {−1, −3 | +2}, set 1 predicted from set 0 with
    /// deltaRps −1, set 2 predicted from set 1 with deltaRps −2 (7.4.8 worked by hand below).
    static func spsSets() -> [Bool] {
        var w = BitWriter()
        w.ue(3)  // num_short_term_ref_pic_sets
        // Set 0: two negative pictures (−1, −3), one positive (+2), all used.
        w.ue(2); w.ue(1)
        w.ue(0); w.flag(true); w.ue(1); w.flag(true)
        w.ue(0 + 1); w.flag(true)
        // Set 1: inter_ref_pic_set_prediction_flag, delta_rps_sign 1, abs_delta_rps_minus1 0 (deltaRps −1);
        // flags for the 3 + 1 entries: used, (not used, use_delta), used, used.
        w.flag(true); w.flag(true); w.ue(0)
        w.flag(true); w.flag(false); w.flag(true); w.flag(true); w.flag(true)
        // Set 2: predicted from set 1 (4 pictures, so 5 entries) with deltaRps −2:
        // used, used, then three neither used nor kept.
        w.flag(true); w.flag(true); w.ue(1)
        w.flag(true); w.flag(true)
        for _ in 0 ..< 3 { w.flag(false); w.flag(false) }
        return w.bits
    }

    /// 7.4.8 by hand. Set 1 from set 0 (S0 −1 −3, S1 +2) with deltaRps −1: S0 gets deltaRps
    /// itself (−1, used), then −1−1 = −2 (used) and −3−1 = −4 (kept, not used); S1 gets
    /// +2−1 = +1 (used). Set 2 from set 1 (S0 −1 −2 −4, S1 +1) with deltaRps −2: S1's
    /// +1−2 = −1 and deltaRps are dropped (use_delta 0), S0 keeps −1−2 = −3 and −2−2 = −4
    /// (used) and drops −6; nothing positive is left.
    static let derivedSets: [HEVCShortTermRPS] = {
        func set(_ s0: [Int], _ u0: [Bool], _ s1: [Int], _ u1: [Bool]) -> HEVCShortTermRPS {
            var rps = HEVCShortTermRPS()
            rps.deltaPocS0 = s0; rps.usedByCurrPicS0 = u0; rps.deltaPocS1 = s1; rps.usedByCurrPicS1 = u1
            return rps
        }
        return [set([-1, -3], [true, true], [2], [true]), set([-1, -2, -4], [true, true, false], [1], [true]),
                set([-3, -4], [true, true], [], [])]
    }()

    /// NumDeltaPocs of the three sets.
    static let deltaPocCounts = [3, 4, 2]

    @Test func interPredictedReferencePictureSetsMatchFFmpeg() async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let original = scratch.url.appendingPathComponent("original.hevc")
        try await Tools.x265(original)
        let units = AnnexB.units(Array(try Data(contentsOf: original)))
        let trace = try await HeaderTrace.structures(of: original.path)
        let spsTraces = Self.pair(units, trace, name: "Sequence Parameter Set") { HEVCNALType.of($0[0]) == HEVCNALType.sps }
        let sliceTraces = Self.pair(units, trace, name: "Slice Segment Header") { HEVCNALType.isVCL(HEVCNALType.of($0[0])) }
        let rpsFields = ["num_negative_pics", "num_positive_pics", "delta_poc_s0_minus1", "used_by_curr_pic_s0_flag",
                         "delta_poc_s1_minus1", "used_by_curr_pic_s1_flag"]

        var spliced: [[UInt8]] = []
        var inline = 0, predicted = 0, picked = 0
        for (index, unit) in units.enumerated() {
            if let traced = spsTraces[index] {
                let count = try Self.field(traced, "num_short_term_ref_pic_sets")
                #expect(count.value == 0)
                let stop = try Self.field(traced, "rbsp_stop_one_bit")
                spliced.append(Self.splice(unit, edits: [Edit(range: count.position ..< count.position + count.bits.count, bits: Self.spsSets())],
                                           headerEnd: stop.position, ending: .trailingBits))
            } else if let traced = sliceTraces[index], let flag = traced.fields.first(where: { $0.name == "short_term_ref_pic_set_sps_flag" }) {
                // The slice's own set: its fields follow the flag; the first other field ends it.
                let flagIndex = try #require(traced.fields.firstIndex { $0.name == "short_term_ref_pic_set_sps_flag" })
                let setEnd = traced.fields[(flagIndex + 1)...].first { field in !rpsFields.contains { field.name.hasPrefix($0) } }?.position ?? flag.position + 1
                let ownSet = Array(BitWriter.bits(of: H264SampleEncryption.unescape(unit[...]))[(flag.position + 1) ..< setEnd])
                var w = BitWriter()
                let choice = (inline + predicted + picked)
                switch choice % 3 {
                case 0:
                    // Its own set again, now after an inter_ref_pic_set_prediction_flag of 0.
                    w.flag(false); w.flag(false); w.append(ownSet)
                    inline += 1
                case 1:
                    // One of the SPS's sets by index (2 bits for 3 sets).
                    w.flag(true); w.u(choice / 3 % 3, 2)
                    picked += 1
                default:
                    // Its own set predicted from SPS set 2 − delta_idx_minus1, with deltaRps ±1,
                    // a flag per entry of the reference set and one for deltaRps, every other one used.
                    let deltaIndexMinus1 = choice / 3 % 3
                    w.flag(false); w.flag(true); w.ue(deltaIndexMinus1); w.flag(choice % 2 == 0); w.ue(0)
                    for entry in 0 ... Self.deltaPocCounts[2 - deltaIndexMinus1] {
                        let used = entry % 2 == 0
                        w.flag(used)
                        if !used { w.flag(false) }  // use_delta_flag 0: dropped
                    }
                    predicted += 1
                }
                let alignment = try Self.field(traced, "alignment_bit_equal_to_one")
                spliced.append(Self.splice(unit, edits: [Edit(range: flag.position ..< setEnd, bits: w.bits)],
                                           headerEnd: alignment.position, ending: .byteAlignment(dataByte: traced.endBit / 8)))
            } else {
                spliced.append(unit)
            }
        }
        #expect(inline > 5 && predicted > 5 && picked > 5)
        let (_, splicedTrace) = try await Self.trace(spliced, in: scratch.url, name: "spliced.hevc")
        #expect(try HEVCSliceHeaderTests.check(spliced, against: splicedTrace) >= 50)
        let sps = try HEVCSPS(nal: try #require(spliced.first { HEVCNALType.of($0[0]) == HEVCNALType.sps })[...])
        #expect(sps.shortTermRefPicSets == Self.derivedSets)
    }

    // MARK: H.264: scaling matrices in the SPS; POC type 1, redundant_pic_cnt and explicit B weights

    /// seq_scaling_matrix_present_flag 1 and eight lists: 0 with sixteen deltas, 1 absent,
    /// 2 ending at once on a delta that makes nextScale 0 (use the default), 3-5 absent,
    /// 6 with sixty-four deltas, 7 with a few then nextScale 0. Deltas are written as
    /// scaling_list() reads them (7.3.2.1.1.1): none after nextScale reaches 0.
    static func scalingMatrices() -> [Bool] {
        var w = BitWriter()
        w.flag(true)
        func list(_ deltas: [Int], size: Int) {
            w.flag(true)
            var last = 8, next = 8
            for index in 0 ..< size {
                if next != 0 {
                    let delta = deltas[index % deltas.count]
                    w.se(delta)
                    next = (last + delta + 256) % 256
                }
                last = next == 0 ? last : next
            }
        }
        list([3, -2, 0, 7, -9, 1], size: 16)
        w.flag(false)
        list([-8], size: 16)  // 8 - 8 = 0: useDefaultScalingMatrixFlag, nothing more is read
        for _ in 3 ..< 6 { w.flag(false) }
        list([1, -1, 4, 0, -30, 30, 100, -100], size: 64)  // never 0: all 64 deltas
        list([2, 5, -15], size: 64)  // 10, 15, then 0
        return w.bits
    }

    /// A High profile CABAC stream with B-frames and weighted P prediction.
    static func highProfileStream(_ folder: URL) async throws -> [[UInt8]] {
        let file = folder.appendingPathComponent("high.h264")
        try await Tools.x264(file, ["-profile:v", "high", "-x264-params", "bframes=2:b-pyramid=none:weightp=2:keyint=12"])
        return AnnexB.units(Array(try Data(contentsOf: file)))
    }

    @Test func scalingMatricesInTheSPSMatchFFmpeg() async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let units = try await Self.highProfileStream(scratch.url)
        let (_, trace) = try await Self.trace(units, in: scratch.url, name: "original.h264")
        let spsTraces = Self.pair(units, trace, name: "Sequence Parameter Set") { $0[0] & 0x1F == 7 }
        var spliced = units
        for (index, traced) in spsTraces {
            let flag = try Self.field(traced, "seq_scaling_matrix_present_flag")
            #expect(flag.value == 0)
            spliced[index] = Self.splice(units[index], edits: [Edit(range: flag.position ..< flag.position + 1, bits: Self.scalingMatrices())],
                                         headerEnd: try Self.field(traced, "rbsp_stop_one_bit").position, ending: .trailingBits)
        }
        let (_, splicedTrace) = try await Self.trace(spliced, in: scratch.url, name: "spliced.h264")
        #expect(splicedTrace.contains { $0.value("seq_scaling_matrix_present_flag") == 1 })
        #expect(try H264SliceHeaderTests.check(spliced, against: splicedTrace).slices == 25)
    }

    @Test func pocTypeOneRedundantPicturesAndExplicitBWeightsMatchFFmpeg() async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let units = try await Self.highProfileStream(scratch.url)
        let (_, trace) = try await Self.trace(units, in: scratch.url, name: "original.h264")
        let spsTraces = Self.pair(units, trace, name: "Sequence Parameter Set") { $0[0] & 0x1F == 7 }
        let ppsTraces = Self.pair(units, trace, name: "Picture Parameter Set") { $0[0] & 0x1F == 8 }
        let sliceTraces = Self.pair(units, trace, name: "Slice Header") { [1, 5].contains($0[0] & 0x1F) }
        var spliced = units
        var defaults = (l0: 1, l1: 1)
        var weightedB = 0

        for (index, traced) in spsTraces {
            // pic_order_cnt_type 1 with a three-frame cycle instead of type 0 and its lsb width.
            let type = try Self.field(traced, "pic_order_cnt_type"), width = try Self.field(traced, "log2_max_pic_order_cnt_lsb_minus4")
            var w = BitWriter()
            w.ue(1); w.flag(false); w.se(-3); w.se(2); w.ue(3); w.se(2); w.se(-1); w.se(5)
            spliced[index] = Self.splice(units[index], edits: [Edit(range: type.position ..< width.position + width.bits.count, bits: w.bits)],
                                         headerEnd: try Self.field(traced, "rbsp_stop_one_bit").position, ending: .trailingBits)
        }
        for (index, traced) in ppsTraces {
            // weighted_bipred_idc 1 (explicit) and redundant_pic_cnt_present_flag 1, in place.
            let bipred = try Self.field(traced, "weighted_bipred_idc"), redundant = try Self.field(traced, "redundant_pic_cnt_present_flag")
            #expect(bipred.value == 2 && redundant.value == 0)
            #expect(traced.value("bottom_field_pic_order_in_frame_present_flag") == 0)
            defaults = ((traced.value("num_ref_idx_l0_default_active_minus1") ?? 0) + 1, (traced.value("num_ref_idx_l1_default_active_minus1") ?? 0) + 1)
            spliced[index] = Self.splice(units[index], edits: [Edit(range: bipred.position ..< bipred.position + 2, bits: [false, true]),
                                                               Edit(range: redundant.position ..< redundant.position + 1, bits: [true])],
                                         headerEnd: try Self.field(traced, "rbsp_stop_one_bit").position, ending: .trailingBits)
        }
        for (index, traced) in sliceTraces {
            var edits: [Edit] = []
            // delta_pic_order_cnt[0] and redundant_pic_cnt where pic_order_cnt_lsb was.
            let lsb = try Self.field(traced, "pic_order_cnt_lsb")
            var w = BitWriter()
            w.se(index % 7 - 3); w.ue(index % 3)
            edits.append(Edit(range: lsb.position ..< lsb.position + lsb.bits.count, bits: w.bits))
            if (traced.value("slice_type") ?? 0) % 5 == 1 {
                // A B slice: a pred_weight_table before dec_ref_pic_marking / cabac_init_idc.
                let at = try #require(traced.fields.first { ["adaptive_ref_pic_marking_mode_flag", "cabac_init_idc"].contains($0.name) }).position
                let override = traced.value("num_ref_idx_active_override_flag") == 1
                let l0 = override ? (traced.value("num_ref_idx_l0_active_minus1") ?? 0) + 1 : defaults.l0
                let l1 = override ? (traced.value("num_ref_idx_l1_active_minus1") ?? 0) + 1 : defaults.l1
                var table = BitWriter()
                table.ue(5); table.ue(3)
                for (list, count) in [l0, l1].enumerated() {
                    for reference in 0 ..< count {
                        table.flag(true); table.se(40 - reference); table.se(list - 3)
                        let chroma = (reference + list) % 2 == 0
                        table.flag(chroma)
                        if chroma { for value in [7, -7, 1, 0] { table.se(value) } }
                    }
                }
                edits.append(Edit(range: at ..< at, bits: table.bits))
                weightedB += 1
            }
            let alignment = traced.fields.first { $0.name == "cabac_alignment_one_bit" }?.position ?? traced.endBit
            spliced[index] = Self.splice(units[index], edits: edits, headerEnd: alignment, ending: .cabacAlignment(dataByte: traced.endBit / 8))
        }
        #expect(weightedB >= 10)
        let (_, splicedTrace) = try await Self.trace(spliced, in: scratch.url, name: "spliced.h264")
        #expect(splicedTrace.contains { $0.value("delta_pic_order_cnt[0]") != nil })
        #expect(splicedTrace.contains { $0.value("redundant_pic_cnt") == 2 })
        #expect(splicedTrace.contains { $0.name == "Slice Header" && $0.value("slice_type").map { $0 % 5 == 1 } == true && $0.value("luma_log2_weight_denom") == 5 })
        #expect(try H264SliceHeaderTests.check(spliced, against: splicedTrace).slices == 25)
    }
}
