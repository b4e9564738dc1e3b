import Foundation
@testable import CMAF
import TestKit
import Testing

/// Slice header lengths and SPS fields against ffmpeg's trace_headers bitstream filter:
/// for every slice ffmpeg prints each syntax element with its bit position in the RBSP,
/// so one past the last element of a "Slice Header" (cabac_alignment_one_bit for CABAC,
/// the last header field for CAVLC) is where the header ends.
@Suite struct H264SliceHeaderTests {
    /// What was compared, so a test can insist it compared something.
    struct Checked {
        var slices = 0
        var parameterSets = 0
    }

    /// Reads every NAL unit of `units` in order (parameter sets into one table, slices
    /// against it) and compares each slice with the next traced "Slice Header" and each SPS
    /// with the next traced "Sequence Parameter Set".
    /// `size` is the picture size every SPS must give, when known.
    static func check(_ units: [[UInt8]], against trace: [TracedStructure], size: (width: Int, height: Int)? = nil) throws -> Checked {
        let slices = trace.filter { $0.name == "Slice Header" }
        // The first SPS of the trace may be the stream's extradata, printed before the packets.
        let spsTraces = trace.filter { $0.name == "Sequence Parameter Set" }
        var spsIndex = spsTraces.count - units.count(where: { $0.first.map { $0 & 0x1F } == 7 })
        var sets = H264ParameterSets()
        var checked = Checked()
        for unit in units {
            switch unit[0] & 0x1F {
            case 7:
                let sps = try H264SPS(nal: unit[...])
                let traced = spsTraces[spsIndex]
                spsIndex += 1
                let expected: [(String, Int)] = [
                    ("profile_idc", sps.profileIDC), ("level_idc", sps.levelIDC), ("seq_parameter_set_id", sps.id),
                    ("log2_max_frame_num_minus4", sps.log2MaxFrameNum - 4), ("pic_order_cnt_type", sps.picOrderCntType),
                    ("pic_width_in_mbs_minus1", sps.picWidthInMbs - 1), ("pic_height_in_map_units_minus1", sps.picHeightInMapUnits - 1),
                    ("frame_mbs_only_flag", sps.frameMbsOnly ? 1 : 0), ("max_num_ref_frames", sps.maxNumRefFrames),
                ]
                for (name, value) in expected { #expect(traced.value(name) == value, "SPS \(name)") }
                if let chroma = traced.value("chroma_format_idc") { #expect(chroma == sps.chromaFormatIDC) }
                if let depth = traced.value("bit_depth_luma_minus8") { #expect(depth == sps.bitDepthLumaMinus8) }
                if let lsb = traced.value("log2_max_pic_order_cnt_lsb_minus4") { #expect(lsb == sps.log2MaxPicOrderCntLsb - 4) }
                #expect(traced.value("frame_crop_bottom_offset") ?? 0 == sps.cropBottom)
                if let size { #expect(sps.width == size.width && sps.height == size.height, "\(sps.width)x\(sps.height)") }
                try sets.add(unit[...])
                checked.parameterSets += 1
            case 8:
                try sets.add(unit[...])
                checked.parameterSets += 1
            case 1, 5:
                guard checked.slices < slices.count else { throw TestFailure("more slices than ffmpeg traced (\(slices.count))") }
                let traced = slices[checked.slices]
                checked.slices += 1
                let header = try sets.sliceHeader(of: unit[...])
                #expect(header.bitLength == traced.endBit, "slice \(checked.slices - 1): RBSP bits")
                let expectedStored = AnnexB.storedCount(unit, rbspBytes: (traced.endBit + 7) / 8)
                #expect(try sets.sliceHeaderLength(of: unit[...]) == expectedStored, "slice \(checked.slices - 1): stored bytes")
                #expect(header.sliceType.rawValue == (traced.value("slice_type") ?? -1) % 5)
                #expect(header.frameNum == traced.value("frame_num"))
                #expect(header.firstMbInSlice == traced.value("first_mb_in_slice"))
            default:
                break
            }
        }
        #expect(checked.slices == slices.count, "ffmpeg traced \(slices.count) slices")
        return checked
    }

    @Test(arguments: ["video/416x234/seg_000.ts", "video/960x540/seg_000.ts", "video/640x360/seg_005.ts"])
    func fixtureSliceHeadersEndWhereFFmpegSays(segment: String) async throws {
        let units = try TransportStreamVideo.accessUnits(MediaFixtures.bytes(segment)).flatMap { $0 }
        let trace = try await HeaderTrace.structures(of: MediaFixtures.path(segment))
        let checked = try Self.check(units, against: trace)
        #expect(checked.slices >= 50)
    }

    /// libx264 streams that reach what the fixtures (Main, CABAC, progressive, one slice)
    /// do not: CAVLC, pic_order_cnt_type 2, MBAFF (field_pic_flag), several slices,
    /// weighted prediction tables, reference list modification and memory management
    /// operations, temporal direct, 4:4:4 lossless (High 4:4:4), 10-bit, 4:2:2, monochrome.
    static let variants: [String: [String]] = [
        "baseline-cavlc": ["-profile:v", "baseline", "-g", "12"],
        "mbaff-slices-weightp": ["-profile:v", "high", "-x264-params", "interlaced=1:slices=3:weightp=2:bframes=3:b-pyramid=normal:ref=4:keyint=12"],
        "cavlc-b-temporal": ["-coder", "0", "-x264-params", "slices=2:bframes=2:weightb=1:weightp=1:direct=temporal:ref=3:keyint=12"],
        "444-lossless": ["-pix_fmt", "yuv444p", "-qp", "0", "-g", "12"],
        "10-bit": ["-pix_fmt", "yuv420p10le", "-g", "12"],
        "422": ["-pix_fmt", "yuv422p", "-g", "12"],
        "monochrome-weightp": ["-pix_fmt", "gray", "-x264-params", "weightp=2", "-g", "12"],
    ]

    @Test(arguments: variants.keys.sorted())
    func x264SliceHeadersEndWhereFFmpegSays(variant: String) async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let file = scratch.url.appendingPathComponent("\(variant).h264")
        try await Tools.x264(file, Self.variants[variant] ?? [])
        let units = AnnexB.units(Array(try Data(contentsOf: file)))
        let trace = try await HeaderTrace.structures(of: file.path)
        let checked = try Self.check(units, against: trace, size: (320, 180))
        #expect(checked.slices >= 25)
    }

    @Test(arguments: MediaFixtures.renditions)
    func spsGivesTheRenditionSize(rendition: String) throws {
        let units = try TransportStreamVideo.accessUnits(MediaFixtures.bytes("\(rendition)/seg_000.ts")).flatMap { $0 }
        let sps = try #require(units.first { $0[0] & 0x1F == 7 })
        let parsed = try H264SPS(nal: sps[...])
        let size = rendition.split(separator: "/")[1].split(separator: "x").compactMap { Int($0) }
        #expect([parsed.width, parsed.height] == size)
        #expect(parsed.profileIDC == 77)
    }
}
