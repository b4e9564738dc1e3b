/// The Common Encryption scheme (ISO/IEC 23001-7) a track is protected with.
package enum ProtectionScheme: Sendable, Equatable {
    /// AES-128-CBC with a 1:9 pattern on video and a constant IV (HLS and DASH).
    case cbcs
    /// AES-128-CTR over whole protected ranges with a per-sample IV (DASH only).
    case cenc
}

/// One subsample entry of a sample's `senc` record: `clear` bytes left as they are, then
/// `protected` bytes the cipher transforms. A sample's entries cover it exactly, in order.
package struct Subsample: Equatable, Sendable {
    /// BytesOfClearData (a 16-bit field in `senc`: never above 65535 here).
    package var clear: Int
    /// BytesOfProtectedData (a 32-bit field).
    package var protected: Int

    package init(clear: Int, protected: Int) {
        self.clear = clear
        self.protected = protected
    }

    /// The most clear bytes one entry can carry.
    package static let maxClear = 0xFFFF
}

/// The parameter sets a video sample's slice headers are read against, by codec.
package enum VideoParameterSets: Sendable, Equatable {
    case h264(H264ParameterSets)
    case hevc(HEVCParameterSets)
}

/// Builds a sample's entries from clear and protected runs: consecutive clear runs are
/// merged, a clear count above 65535 is split off as (65535, 0) entries first.
struct SubsampleBuilder {
    private(set) var entries: [Subsample] = []
    private var pendingClear = 0

    /// Clear bytes, joined to whatever clear bytes came just before.
    mutating func clear(_ count: Int) { pendingClear += count }

    /// Protected bytes after the pending clear ones (nothing when `count` is 0).
    mutating func protect(_ count: Int) {
        guard count > 0 else { return }
        splitLongClear()
        entries.append(Subsample(clear: pendingClear, protected: count))
        pendingClear = 0
    }

    /// The entries, with the trailing clear bytes (if any) as a last (n, 0) entry: a
    /// sample with nothing protected is one (or, over 65535 bytes, several) all-clear entries.
    mutating func finish() -> [Subsample] {
        if pendingClear > 0 {
            splitLongClear()
            entries.append(Subsample(clear: pendingClear, protected: 0))
            pendingClear = 0
        }
        return entries
    }

    /// Emits (65535, 0) entries while more than 65535 clear bytes are pending.
    private mutating func splitLongClear() {
        while pendingClear > Subsample.maxClear {
            entries.append(Subsample(clear: Subsample.maxClear, protected: 0))
            pendingClear -= Subsample.maxClear
        }
    }
}

extension Subsample {
    /// The subsample entries of one video sample (length-prefixed NAL units, stored bytes)
    /// under `scheme` (CENC 9.5 and 10.4, as Shaka Packager lays them out):
    /// - a non-VCL NAL unit (parameter sets, SEI, AUD…) is clear, length prefix included;
    /// - in a slice, the 4-byte length, the NAL header and the slice header are clear
    ///   (`sliceHeaderLength`); a slice with nothing after its header is all clear;
    /// - `cbcs`: the rest of the slice is protected as it is (the cipher leaves a trailing
    ///   partial block clear itself);
    /// - `cenc`: the rest rounded down to a multiple of 16 is protected and the remainder,
    ///   at the slice's end, is clear, joined to the clear bytes of what follows.
    ///
    /// Consecutive clear runs are merged and split at 65535; the entries add up to exactly
    /// the sample's size; a sample with nothing protected gives all-clear entries, an empty
    /// sample none. Parameter sets met in the sample are added to `parameterSets` before the
    /// slices after them are read (in-band sets apply from where they appear, as in a
    /// decoder), so pass the same value along from sample to sample.
    package static func video(sample: ArraySlice<UInt8>, scheme: ProtectionScheme,
                              parameterSets: inout VideoParameterSets) throws(CMAFError) -> [Subsample] {
        var builder = SubsampleBuilder()
        for range in try LengthPrefixedNALUnits.units(in: sample) {
            let nal = sample[range]
            builder.clear(LengthPrefixedNALUnits.prefixSize)
            guard let headerLength = try sliceHeaderLength(nal, parameterSets: &parameterSets), headerLength < nal.count else {
                builder.clear(nal.count)
                continue
            }
            let rest = nal.count - headerLength
            let protected = scheme == .cbcs ? rest : rest & ~15
            builder.clear(headerLength)
            builder.protect(protected)
            builder.clear(rest - protected)
        }
        return builder.finish()
    }

    /// `video(sample:scheme:parameterSets:)` of a whole array.
    package static func video(sample: [UInt8], scheme: ProtectionScheme,
                              parameterSets: inout VideoParameterSets) throws(CMAFError) -> [Subsample] {
        try video(sample: sample[...], scheme: scheme, parameterSets: &parameterSets)
    }

    /// Entries that leave all `size` bytes of a sample clear (one entry, or several when
    /// `size` is above 65535; none for an empty sample).
    package static func allClear(size: Int) -> [Subsample] {
        var builder = SubsampleBuilder()
        builder.clear(size)
        return builder.finish()
    }

    /// The clear length (NAL header and slice header) of `nal` when it is a slice the
    /// scheme protects; nil for any other NAL unit. Parameter sets are learned on the way.
    private static func sliceHeaderLength(_ nal: ArraySlice<UInt8>, parameterSets: inout VideoParameterSets) throws(CMAFError) -> Int? {
        guard let first = nal.first else { return nil }
        switch parameterSets {
        case .h264(var sets):
            let type = H264NALType.of(first)
            if H264ParameterSets.isParameterSet(type) {
                try sets.add(nal)
                parameterSets = .h264(sets)
                return nil
            }
            guard H264NALType.isProtectedSlice(type) else { return nil }
            return try sets.sliceHeaderLength(of: nal)
        case .hevc(var sets):
            let type = HEVCNALType.of(first)
            if HEVCParameterSets.isParameterSet(type) {
                try sets.add(nal)
                parameterSets = .hevc(sets)
                return nil
            }
            guard HEVCNALType.isVCL(type) else { return nil }
            return try sets.sliceHeaderLength(of: nal)
        }
    }
}
