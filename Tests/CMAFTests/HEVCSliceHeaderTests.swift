import Foundation
@testable import CMAF
import TestKit
import Testing

/// HEVC slice segment header lengths and SPS fields against ffmpeg's trace_headers (one
/// past the last alignment_bit_equal_to_zero of a "Slice Segment Header" is where
/// byte_alignment() ends), and the hvcC record against the one ffmpeg's MP4 muxer writes
/// for the same parameter sets, on short deterministic x265 streams made per test.
@Suite struct HEVCSliceHeaderTests {
    /// x265 settings (beyond the defaults of `Tools.x265`) and the pixel format, chosen to
    /// reach several slices, wavefront entry points, sub-layers, lossless and other coding
    /// tools, small CTBs, a short POC, in-band repeated parameter sets, no SAO, deblocking
    /// offsets, PPS-level reference counts, no temporal MVP, 4:4:4, 10-bit and 4:0:0.
    static let variants: [String: (extra: String, pixelFormat: String)] = [
        "default": ("", "yuv420p"),
        "slices": ("pools=1:slices=3", "yuv420p"),  // x265 without a thread pool writes broken multi-slice streams
        "wavefront": ("pools=1:wpp=1:slices=2", "yuv420p"),
        "temporal-layers": ("temporal-layers=1", "yuv420p"),
        "lossless": ("lossless=1", "yuv420p"),
        "coding-tools": ("tskip=1:amp=1:sign-hide=1:weightb=1:constrained-intra=1:cu-lossless=1:b-intra=1", "yuv420p"),
        "small-ctu": ("ctu=16:log2-max-poc-lsb=5:repeat-headers=1", "yuv420p"),
        "no-sao-deblock-offsets": ("no-sao=1:deblock=1,-1", "yuv420p"),
        "pps-options": ("opt-qp-pps=1:opt-ref-list-length-pps=1:ref=5", "yuv420p"),
        "no-temporal-mvp": ("temporal-mvp=0", "yuv420p"),
        "444": ("", "yuv444p"),
        "10-bit": ("", "yuv420p10le"),
        "monochrome": ("", "gray"),
    ]

    /// Reads the NAL units of `units` in order and compares every slice segment with the
    /// next traced "Slice Segment Header", every SPS with the next traced SPS; returns the
    /// number of slices compared.
    static func check(_ units: [[UInt8]], against trace: [TracedStructure]) throws -> Int {
        let slices = trace.filter { $0.name == "Slice Segment Header" }
        let spsTraces = trace.filter { $0.name == "Sequence Parameter Set" }
        var spsIndex = spsTraces.count - units.count(where: { HEVCNALType.of($0[0]) == HEVCNALType.sps })
        var sets = HEVCParameterSets()
        var compared = 0
        for unit in units {
            let type = HEVCNALType.of(unit[0])
            if type == HEVCNALType.sps {
                let sps = try HEVCSPS(nal: unit[...])
                let traced = spsTraces[spsIndex]
                spsIndex += 1
                let expected: [(String, Int)] = [
                    ("sps_max_sub_layers_minus1", sps.maxSubLayersMinus1), ("general_profile_idc", sps.profileTierLevel.profileIDC),
                    ("general_level_idc", sps.profileTierLevel.levelIDC), ("chroma_format_idc", sps.chromaFormatIDC),
                    ("pic_width_in_luma_samples", sps.picWidthInLumaSamples), ("pic_height_in_luma_samples", sps.picHeightInLumaSamples),
                    ("bit_depth_luma_minus8", sps.bitDepthLumaMinus8), ("bit_depth_chroma_minus8", sps.bitDepthChromaMinus8),
                    ("log2_max_pic_order_cnt_lsb_minus4", sps.log2MaxPicOrderCntLsb - 4),
                    ("num_short_term_ref_pic_sets", sps.shortTermRefPicSets.count),
                    ("sample_adaptive_offset_enabled_flag", sps.sampleAdaptiveOffsetEnabled ? 1 : 0),
                    ("sps_temporal_mvp_enabled_flag", sps.temporalMVPEnabled ? 1 : 0),
                    ("strong_intra_smoothing_enabled_flag", sps.strongIntraSmoothingEnabled ? 1 : 0),
                ]
                for (name, value) in expected { #expect(traced.value(name) == value, "SPS \(name)") }
                #expect(sps.width == 320)
                #expect(sps.height == 180)
            }
            if HEVCParameterSets.isParameterSet(type) {
                try sets.add(unit[...])
            } else if HEVCNALType.isVCL(type) {
                guard compared < slices.count else { throw TestFailure("more slices than ffmpeg traced (\(slices.count))") }
                let traced = slices[compared]
                compared += 1
                let header = try sets.sliceHeader(of: unit[...])
                #expect(header.bitLength == traced.endBit, "slice \(compared - 1): RBSP bits")
                #expect(traced.fields.last?.name.hasPrefix("alignment_bit_equal_to") == true)
                let expectedStored = AnnexB.storedCount(unit, rbspBytes: traced.endBit / 8)
                #expect(try sets.sliceHeaderLength(of: unit[...]) == expectedStored, "slice \(compared - 1): stored bytes")
                #expect(header.sliceType == traced.value("slice_type"))
                #expect(header.sliceSegmentAddress == traced.value("slice_segment_address") ?? 0)
                #expect(header.numEntryPointOffsets == traced.value("num_entry_point_offsets") ?? 0)
            }
        }
        #expect(compared == slices.count, "ffmpeg traced \(slices.count) slice segments")
        return compared
    }

    /// Makes the variant's stream in a temporary folder and hands over its file and units.
    static func withStream<T>(_ variant: String, _ body: (URL, [[UInt8]]) async throws -> T) async throws -> T {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let file = scratch.url.appendingPathComponent("\(variant).hevc")
        guard let settings = variants[variant] else { throw TestFailure("no variant \(variant)") }
        try await Tools.x265(file, extra: settings.extra, pixelFormat: settings.pixelFormat)
        return try await body(file, AnnexB.units(Array(try Data(contentsOf: file))))
    }

    @Test(arguments: variants.keys.sorted())
    func sliceHeadersEndWhereFFmpegSays(variant: String) async throws {
        let compared = try await Self.withStream(variant) { file, units in
            try Self.check(units, against: try await HeaderTrace.structures(of: file.path))
        }
        #expect(compared >= 50)
    }

    /// The variants that must show the feature they were made for, so a change in x265's
    /// defaults cannot quietly empty a test.
    @Test func variantsReachTheirFeatures() async throws {
        let entryPoints = try await Self.withStream("wavefront") { file, _ in
            try await HeaderTrace.structures(of: file.path).compactMap { $0.value("num_entry_point_offsets") }.max() ?? 0
        }
        #expect(entryPoints > 0)
        let addresses = try await Self.withStream("slices") { file, _ in
            try await HeaderTrace.structures(of: file.path).compactMap { $0.value("slice_segment_address") }.max() ?? 0
        }
        #expect(addresses > 0)
        let subLayers = try await Self.withStream("temporal-layers") { _, units in
            try HEVCSPS(nal: try #require(units.first { HEVCNALType.of($0[0]) == HEVCNALType.sps })[...]).maxSubLayersMinus1
        }
        #expect(subLayers == 1)
    }

    /// The body of the first hvcC box in an MP4 file.
    static func hvcC(in mp4: [UInt8]) throws -> [UInt8] {
        let type: [UInt8] = Array("hvcC".utf8)
        guard let at = (4 ..< mp4.count - 4).first(where: { Array(mp4[$0 ..< $0 + 4]) == type }) else { throw TestFailure("no hvcC box") }
        let size = Int(mp4[at - 4]) << 24 | Int(mp4[at - 3]) << 16 | Int(mp4[at - 2]) << 8 | Int(mp4[at - 1])
        return Array(mp4[at + 4 ..< at - 4 + size])
    }

    @Test(arguments: variants.keys.sorted())
    func hvcCMatchesFFmpegsMP4Muxer(variant: String) async throws {
        let (ours, theirs) = try await Self.withStream(variant) { file, units in
            let mp4 = file.deletingPathExtension().appendingPathExtension("mp4")
            try await Tools.ffmpeg(["-i", file.path, "-c", "copy", "-tag:v", "hvc1", mp4.path])
            let first = { (type: UInt8) in units.first { HEVCNALType.of($0[0]) == type } ?? [] }
            let ours = try HEVCDecoderConfiguration.record(vps: first(HEVCNALType.vps), sps: first(HEVCNALType.sps), pps: first(HEVCNALType.pps))
            return (ours, try Self.hvcC(in: Array(try Data(contentsOf: mp4))))
        }
        #expect(ours == theirs, "ours \(Tools.hex(ours))\ntheirs \(Tools.hex(theirs))")
    }

    /// The codec string built here from the fields ffmpeg traced for the SPS (Annex E.3 spelled
    /// out), and for the default stream the string Shaka Packager wrote for an x265 320x180
    /// stream in the lab.
    @Test(arguments: ["default", "10-bit", "444", "monochrome", "temporal-layers"])
    func codecStringFollowsTheTracedProfile(variant: String) async throws {
        let (ours, expected) = try await Self.withStream(variant) { file, units in
            let sps = try #require(units.first { HEVCNALType.of($0[0]) == HEVCNALType.sps })
            let traced = try #require(try await HeaderTrace.structures(of: file.path).last { $0.name == "Sequence Parameter Set" })
            var compatibility: UInt32 = 0
            for j in 0 ..< 32 where traced.value("general_profile_compatibility_flag[\(j)]") == 1 { compatibility |= 1 << j }
            // The 48 constraint bits are the traced fields at bits 64…111 of the SPS, whatever
            // the profile names them (RExt profiles set max_*bit, max_4xxchroma, lower_bit_rate).
            let constraintBits = traced.fields.filter { (64 ..< 112).contains($0.position) }.map(\.bits).joined()
            #expect(constraintBits.count == 48)
            var constraintBytes = stride(from: 0, to: constraintBits.count, by: 8).map { at in
                UInt8(constraintBits.dropFirst(at).prefix(8), radix: 2) ?? 0
            }
            while constraintBytes.last == 0 { constraintBytes.removeLast() }
            let space = ["", "A", "B", "C"][traced.value("general_profile_space") ?? 0]
            let expected = ["hvc1", "\(space)\(traced.value("general_profile_idc") ?? -1)", String(compatibility, radix: 16, uppercase: true),
                            "\(traced.value("general_tier_flag") == 1 ? "H" : "L")\(traced.value("general_level_idc") ?? -1)"]
                + constraintBytes.map { String(format: "%02X", $0) }
            return (try HEVCDecoderConfiguration.codecString(sps: sps), expected.joined(separator: "."))
        }
        #expect(ours == expected)
        if variant == "default" { #expect(ours == "hvc1.1.6.L60.90") }
    }

    @Test func codecStringSpellsSpaceTierAndConstraintBytes() {
        var ptl = HEVCProfileTierLevel(profileSpace: 0, tierFlag: false, profileIDC: 1, compatibilityFlags: 0x6000_0000,
                                       constraintFlags: 0xB000_0000_0000, levelIDC: 93)
        #expect(HEVCDecoderConfiguration.codecString(ptl) == "hvc1.1.6.L93.B0")
        // ISO/IEC 14496-15 E.3's example: profile space 1, profile 4, flags 0 and 6, high tier, level 120.
        ptl = HEVCProfileTierLevel(profileSpace: 1, tierFlag: true, profileIDC: 4, compatibilityFlags: 0x8000_0000 | 0x8000_0000 >> 6,
                                   constraintFlags: 0xB023_0000_0000, levelIDC: 120)
        #expect(HEVCDecoderConfiguration.codecString(ptl, sampleEntry: "hev1") == "hev1.A4.41.H120.B0.23")
        ptl.constraintFlags = 0
        #expect(HEVCDecoderConfiguration.codecString(ptl) == "hvc1.A4.41.H120")
    }
}
