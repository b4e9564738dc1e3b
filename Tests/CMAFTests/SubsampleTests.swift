import Foundation
@testable import CMAF
import TestKit
import Testing

/// Subsample layouts: the rules of CENC 9.5/10.4 as Shaka Packager applies them, checked
/// on every sample of every fixture rendition (and an x265 stream) by rebuilding the
/// clear/protected runs each NAL unit should give and comparing them with the runs the
/// entries describe; then hand-made samples for the edges (65535 splits, remainders, no
/// protected bytes at all).
@Suite struct SubsampleTests {
    /// A run of bytes of one kind.
    enum Run: Equatable, CustomStringConvertible {
        case clear(Int), protected(Int)
        var description: String {
            switch self {
            case .clear(let n): "clear \(n)"
            case .protected(let n): "protected \(n)"
            }
        }
    }

    /// Appends `run` to `runs`, joining it to the last run when that one is of the same kind.
    static func append(_ run: Run, to runs: inout [Run]) {
        switch (runs.last, run) {
        case (_, .clear(0)), (_, .protected(0)): return
        case (.clear(let a)?, .clear(let b)): runs[runs.count - 1] = .clear(a + b)
        case (.protected(let a)?, .protected(let b)): runs[runs.count - 1] = .protected(a + b)
        default: runs.append(run)
        }
    }

    /// The runs the entries describe.
    static func runs(of entries: [Subsample]) -> [Run] {
        var runs: [Run] = []
        for entry in entries {
            append(.clear(entry.clear), to: &runs)
            append(.protected(entry.protected), to: &runs)
        }
        return runs
    }

    /// The runs a sample should give: per NAL unit, 4 length bytes and, in a slice, the NAL
    /// and slice header clear; the slice's remainder protected (cbcs) or its 16-aligned part
    /// protected and the rest clear (cenc); other units clear. `headerLength` is nil for
    /// units that are no slice.
    static func expectedRuns(_ units: [[UInt8]], scheme: ProtectionScheme, headerLength: ([UInt8]) throws -> Int?) rethrows -> [Run] {
        var runs: [Run] = []
        for unit in units {
            append(.clear(4), to: &runs)
            guard let header = try headerLength(unit), header < unit.count else {
                append(.clear(unit.count), to: &runs)
                continue
            }
            let rest = unit.count - header
            let protected = scheme == .cbcs ? rest : rest / 16 * 16
            append(.clear(header), to: &runs)
            append(.protected(protected), to: &runs)
            append(.clear(rest - protected), to: &runs)
        }
        return runs
    }

    /// The structural rules every layout keeps: sizes add up, clear counts fit 16 bits,
    /// clear runs are merged (an all-clear entry is either the last or a full 65535 split),
    /// cenc protected counts are multiples of 16.
    static func checkShape(_ entries: [Subsample], size: Int, scheme: ProtectionScheme) {
        #expect(entries.reduce(0) { $0 + $1.clear + $1.protected } == size)
        for (index, entry) in entries.enumerated() {
            #expect(entry.clear >= 0 && entry.clear <= 65535)
            #expect(entry.protected >= 0)
            if entry.protected == 0 { #expect(index == entries.count - 1 || entry.clear == 65535, "entry \(index) of \(entries)") }
            if scheme == .cenc { #expect(entry.protected % 16 == 0) }
        }
    }

    @Test(arguments: MediaFixtures.videoSegments)
    func fixtureSamplesFollowTheRules(segment: String) throws {
        let accessUnits = try TransportStreamVideo.accessUnits(MediaFixtures.bytes(segment))
        #expect(accessUnits.count >= 40)
        for scheme in [ProtectionScheme.cbcs, .cenc] {
            // No parameter sets to start with: each segment's first sample carries its SPS and PPS.
            var sets = VideoParameterSets.h264(H264ParameterSets())
            var reference = H264ParameterSets()
            var protectedSamples = 0
            for units in accessUnits {
                let sample = AnnexB.lengthPrefixed(units)
                let entries = try Subsample.video(sample: sample, scheme: scheme, parameterSets: &sets)
                Self.checkShape(entries, size: sample.count, scheme: scheme)
                let expected = try Self.expectedRuns(units, scheme: scheme) { unit in
                    switch unit[0] & 0x1F {
                    case 7, 8: try reference.add(unit[...]); return nil
                    case 1, 5:
                        let header = try reference.sliceHeaderLength(of: unit[...])
                        #expect(header >= 2)
                        return header
                    default: return nil
                    }
                }
                #expect(Self.runs(of: entries) == expected)
                if entries.contains(where: { $0.protected > 0 }) { protectedSamples += 1 }
            }
            #expect(protectedSamples == accessUnits.count)
        }
    }

    /// Access units of an HEVC byte stream: a new one at a parameter set, AUD or prefix SEI
    /// after a slice, or at a slice that starts a picture.
    static func hevcAccessUnits(_ units: [[UInt8]]) -> [[[UInt8]]] {
        var result: [[[UInt8]]] = []
        var current: [[UInt8]] = [], seenSlice = false
        for unit in units {
            let type = HEVCNALType.of(unit[0])
            let startsPicture = HEVCNALType.isVCL(type) && unit.count > 2 && unit[2] & 0x80 != 0
            if seenSlice, (32 ... 35).contains(type) || type == HEVCNALType.prefixSEI || startsPicture {
                result.append(current)
                current = []
                seenSlice = false
            }
            current.append(unit)
            if HEVCNALType.isVCL(type) { seenSlice = true }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    @Test(arguments: ["default", "slices", "wavefront"])
    func hevcSamplesFollowTheRules(variant: String) async throws {
        try await HEVCSliceHeaderTests.withStream(variant) { _, units in
            let accessUnits = Self.hevcAccessUnits(units)
            #expect(accessUnits.count == 50)
            for scheme in [ProtectionScheme.cbcs, .cenc] {
                var sets = VideoParameterSets.hevc(HEVCParameterSets())
                var reference = HEVCParameterSets()
                for units in accessUnits {
                    let sample = AnnexB.lengthPrefixed(units)
                    let entries = try Subsample.video(sample: sample, scheme: scheme, parameterSets: &sets)
                    Self.checkShape(entries, size: sample.count, scheme: scheme)
                    let expected = try Self.expectedRuns(units, scheme: scheme) { unit in
                        let type = HEVCNALType.of(unit[0])
                        if HEVCParameterSets.isParameterSet(type) { try reference.add(unit[...]); return nil }
                        guard HEVCNALType.isVCL(type) else { return nil }
                        return try reference.sliceHeaderLength(of: unit[...])
                    }
                    #expect(Self.runs(of: entries) == expected)
                }
            }
        }
    }

    /// The fixture's first IDR access unit (AUD, SPS, PPS, SEIs, one IDR slice) and its sets.
    static func idrAccessUnit() throws -> (units: [[UInt8]], sets: H264ParameterSets) {
        let units = try TransportStreamVideo.accessUnits(MediaFixtures.bytes("video/416x234/seg_000.ts"))[0]
        var sets = H264ParameterSets()
        for unit in units where H264ParameterSets.isParameterSet(unit[0] & 0x1F) { try sets.add(unit[...]) }
        return (units, sets)
    }

    @Test func idrSampleIsOneEntryLikeShakas() throws {
        let (units, sets) = try Self.idrAccessUnit()
        let slice = try #require(units.last)
        #expect(slice[0] & 0x1F == 5)
        let header = try sets.sliceHeaderLength(of: slice[...])
        let sample = AnnexB.lengthPrefixed(units)
        var parameterSets = VideoParameterSets.h264(sets)
        // cbcs: everything before the slice data clear, the slice data protected, in one entry.
        let clear = sample.count - slice.count + header
        #expect(try Subsample.video(sample: sample, scheme: .cbcs, parameterSets: &parameterSets)
            == [Subsample(clear: clear, protected: slice.count - header)])
        // cenc: the same, protected cut to whole blocks, the rest a trailing clear entry.
        let aligned = (slice.count - header) / 16 * 16
        let expected = [Subsample(clear: clear, protected: aligned)] + (aligned == slice.count - header ? [] : [Subsample(clear: slice.count - header - aligned, protected: 0)])
        #expect(try Subsample.video(sample: sample, scheme: .cenc, parameterSets: &parameterSets) == expected)
    }

    @Test func clearRunsOver65535AreSplit() throws {
        let (units, sets) = try Self.idrAccessUnit()
        let slice = try #require(units.last)
        let header = try sets.sliceHeaderLength(of: slice[...])
        // An SEI of 140000 bytes before the slice: 4 + 140000 + 4 + header clear bytes.
        let sei: [UInt8] = [0x06] + [UInt8](repeating: 0x55, count: 139_999)
        let sample = AnnexB.lengthPrefixed([sei, slice])
        var parameterSets = VideoParameterSets.h264(sets)
        let entries = try Subsample.video(sample: sample, scheme: .cbcs, parameterSets: &parameterSets)
        let clear = 4 + 140_000 + 4 + header
        #expect(entries == [Subsample(clear: 65535, protected: 0), Subsample(clear: 65535, protected: 0),
                            Subsample(clear: clear - 2 * 65535, protected: slice.count - header)])
        // Nothing protected: all-clear entries, split the same way; an empty sample has none.
        #expect(Subsample.allClear(size: 140_008) == [Subsample(clear: 65535, protected: 0), Subsample(clear: 65535, protected: 0),
                                                      Subsample(clear: 8938, protected: 0)])
        #expect(Subsample.allClear(size: 65535) == [Subsample(clear: 65535, protected: 0)])
        #expect(Subsample.allClear(size: 0) == [])
        #expect(try Subsample.video(sample: AnnexB.lengthPrefixed([sei]), scheme: .cenc, parameterSets: &parameterSets)
            == Subsample.allClear(size: 140_004))
        #expect(try Subsample.video(sample: [], scheme: .cenc, parameterSets: &parameterSets) == [])
    }

    @Test func cencRemainderJoinsTheNextClearBytes() throws {
        let (units, sets) = try Self.idrAccessUnit()
        let slice = try #require(units.last)
        let header = try sets.sliceHeaderLength(of: slice[...])
        // Slices cut to header + 37 and header + 5 bytes (the parser reads only the header).
        let long = Array(slice[..<(header + 37)]), short = Array(slice[..<(header + 5)])
        let aud: [UInt8] = [0x09, 0xF0]
        let sample = AnnexB.lengthPrefixed([aud, long, short, aud])
        var parameterSets = VideoParameterSets.h264(sets)
        #expect(try Subsample.video(sample: sample, scheme: .cenc, parameterSets: &parameterSets) == [
            Subsample(clear: 4 + 2 + 4 + header, protected: 32),
            // 5 left of the first slice, then the second slice whole (5 < 16), then the AUD.
            Subsample(clear: 5 + 4 + header + 5 + 4 + 2, protected: 0),
        ])
        #expect(try Subsample.video(sample: sample, scheme: .cbcs, parameterSets: &parameterSets) == [
            Subsample(clear: 4 + 2 + 4 + header, protected: 37),
            Subsample(clear: 4 + header, protected: 5),
            Subsample(clear: 4 + 2, protected: 0),
        ])
        // A slice that ends where its header does has nothing to protect.
        let bare = Array(slice[..<header])
        #expect(try Subsample.video(sample: AnnexB.lengthPrefixed([bare]), scheme: .cbcs, parameterSets: &parameterSets)
            == [Subsample(clear: 4 + header, protected: 0)])
    }

    @Test func inBandParameterSetsApplyFromWhereTheyAppear() throws {
        let (units, _) = try Self.idrAccessUnit()
        let sample = AnnexB.lengthPrefixed(units)
        var empty = VideoParameterSets.h264(H264ParameterSets())
        _ = try Subsample.video(sample: sample, scheme: .cbcs, parameterSets: &empty)
        guard case .h264(let learned) = empty else { Issue.record("the codec changed"); return }
        #expect(learned.sps.keys.sorted() == [0])
        #expect(learned.pps.keys.sorted() == [0])
        // The slice alone, without the sets, names a PPS never seen.
        var none = VideoParameterSets.h264(H264ParameterSets())
        #expect(throws: CMAFError.self) { try Subsample.video(sample: AnnexB.lengthPrefixed([units.last ?? []]), scheme: .cbcs, parameterSets: &none) }
    }
}
