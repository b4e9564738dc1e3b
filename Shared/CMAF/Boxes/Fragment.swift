/// One sample of a fragment: how long it lasts, its size in the fragment's data, whether it is
/// a sync sample, and its composition offset (a negative one is written with `trun` version 1).
package struct Sample: Sendable, Equatable {
    package var duration: UInt32
    package var size: UInt32
    package var isSync: Bool
    package var compositionOffset: Int32 = 0

    package init(duration: UInt32, size: UInt32, isSync: Bool, compositionOffset: Int32 = 0) {
        self.duration = duration
        self.size = size
        self.isSync = isSync
        self.compositionOffset = compositionOffset
    }
}

/// One CMAF fragment (a `moof` and its `mdat`) of one track: its samples and their bytes,
/// back to back, from `baseDecodeTime` (`tfdt`, in the track's timescale).
package struct Fragment: Sendable, Equatable {
    package var baseDecodeTime: UInt64
    package var samples: [Sample]
    package var data: [UInt8]

    package init(baseDecodeTime: UInt64, samples: [Sample], data: [UInt8]) {
        self.baseDecodeTime = baseDecodeTime
        self.samples = samples
        self.data = data
    }

    /// The sum of the sample durations.
    package var duration: UInt64 { samples.reduce(0) { $0 + UInt64($1.duration) } }

    /// The earliest composition time (the `sidx`'s earliest presentation time).
    package var earliestPresentationTime: UInt64 {
        var decode = Int64(baseDecodeTime)
        var earliest = Int64.max
        for sample in samples {
            earliest = min(earliest, decode + Int64(sample.compositionOffset))
            decode += Int64(sample.duration)
        }
        return earliest == .max ? baseDecodeTime : UInt64(max(0, earliest))
    }
}

/// The per-sample encryption information of one fragment (`senc`, with `saiz`/`saio`
/// pointing at it): an IV per sample (empty with a constant IV) and each sample's subsamples
/// (nil: whole-sample encryption, no entries; a clear count never above 65535, as `Subsample`s are).
package struct FragmentEncryption: Sendable, Equatable {
    package var initializationVectors: [[UInt8]]
    package var subsamples: [[Subsample]]?

    package init(initializationVectors: [[UInt8]], subsamples: [[Subsample]]?) {
        self.initializationVectors = initializationVectors
        self.subsamples = subsamples
    }
}

/// Writes CMAF media segments: `styp`, then `moof` (`mfhd`, `traf` with `tfhd`
/// default-base-is-moof, `tfdt` version 1 (64-bit: no wrap after 13 h at 90 kHz), `trun` and, when encrypted, `senc`,
/// `saiz`, `saio`), then `mdat`.
package enum MediaSegment {
    /// Sync samples depend on no other (sample_depends_on 2); others do and are not sync.
    static let syncFlags: UInt32 = 0x0200_0000
    static let nonSyncFlags: UInt32 = 0x0101_0000

    /// The segment holding `fragment` of track `trackID`, numbered `sequenceNumber` (from 1).
    /// `segmentType`: whether to begin with `styp` (a segment file does; a fragment of a
    /// single-file track does not).
    package static func bytes(_ fragment: Fragment, trackID: UInt32 = 1, sequenceNumber: UInt32,
                              encryption: FragmentEncryption? = nil, segmentType: Bool = true) -> [UInt8] {
        var writer = BoxWriter(capacity: fragment.data.count + 64 + fragment.samples.count * 16)
        if segmentType {
            writer.box("styp") { styp in
                styp.fourCC("cmfs")
                styp.u32(0)
                for brand in ["cmfs", "msdh", "msix"] { styp.fourCC(brand) }
            }
        }
        let moofStart = writer.count
        var dataOffsetField = 0
        var auxiliaryOffsetField: Int?
        var auxiliaryStart = 0
        let allSync = fragment.samples.allSatisfy(\.isSync)
        let hasOffsets = fragment.samples.contains { $0.compositionOffset != 0 }
        writer.box("moof") { moof in
            moof.fullBox("mfhd") { $0.u32(sequenceNumber) }
            moof.box("traf") { traf in
                // Tracks of sync samples only (audio) give their flags once, in tfhd.
                traf.fullBox("tfhd", flags: 0x020000 | (allSync ? 0x000020 : 0)) { tfhd in
                    tfhd.u32(trackID)
                    if allSync { tfhd.u32(syncFlags) }
                }
                traf.fullBox("tfdt", version: 1) { $0.u64(fragment.baseDecodeTime) }
                let runFlags: UInt32 = 0x000001 | 0x000100 | 0x000200 | (allSync ? 0 : 0x000400) | (hasOffsets ? 0x000800 : 0)
                traf.fullBox("trun", version: fragment.samples.contains { $0.compositionOffset < 0 } ? 1 : 0, flags: runFlags) { trun in
                    trun.u32(UInt32(fragment.samples.count))
                    dataOffsetField = trun.count
                    trun.u32(0)
                    for sample in fragment.samples {
                        trun.u32(sample.duration)
                        trun.u32(sample.size)
                        if !allSync { trun.u32(sample.isSync ? syncFlags : nonSyncFlags) }
                        if hasOffsets { trun.i32(sample.compositionOffset) }
                    }
                }
                if let encryption {
                    let sizes = auxiliarySizes(encryption, count: fragment.samples.count)
                    traf.fullBox("senc", flags: encryption.subsamples == nil ? 0 : 0x000002) { senc in
                        senc.u32(UInt32(fragment.samples.count))
                        auxiliaryStart = senc.count
                        for index in 0 ..< fragment.samples.count {
                            if index < encryption.initializationVectors.count { senc.append(encryption.initializationVectors[index]) }
                            if let entries = encryption.subsamples?[index] {
                                senc.u16(UInt16(entries.count))
                                for entry in entries { senc.u16(UInt16(clamping: entry.clear)); senc.u32(UInt32(clamping: entry.protected)) }
                            }
                        }
                    }
                    // Per-sample records exist (an IV or subsamples): point at them.
                    if sizes.contains(where: { $0 > 0 }) {
                        traf.fullBox("saiz") { saiz in
                            let uniform = Set(sizes).count == 1
                            saiz.u8(uniform ? sizes[0] : 0)
                            saiz.u32(UInt32(sizes.count))
                            if !uniform { saiz.append(sizes) }
                        }
                        traf.fullBox("saio") { saio in
                            saio.u32(1)
                            auxiliaryOffsetField = saio.count
                            saio.u32(0)
                        }
                    }
                }
            }
        }
        let moofSize = writer.count - moofStart
        writer.patch32(at: dataOffsetField, UInt32(moofSize + 8))
        if let auxiliaryOffsetField { writer.patch32(at: auxiliaryOffsetField, UInt32(auxiliaryStart - moofStart)) }
        writer.box("mdat") { $0.append(fragment.data) }
        return writer.bytes
    }

    /// Each sample's auxiliary record size: its IV plus, with subsamples, 2 + 6 per entry.
    private static func auxiliarySizes(_ encryption: FragmentEncryption, count: Int) -> [UInt8] {
        (0 ..< count).map { index in
            let iv = index < encryption.initializationVectors.count ? encryption.initializationVectors[index].count : 0
            let entries = encryption.subsamples.map { 2 + 6 * $0[index].count } ?? 0
            return UInt8(clamping: iv + entries)
        }
    }
}

/// The segment index (`sidx`, ISO/IEC 14496-12 8.16.3) of a single-file track: one
/// reference per fragment, so a client addresses each by byte range.
package enum SegmentIndex {
    /// One reference: the fragment's size in bytes, its duration and its earliest presentation time.
    package struct Reference: Sendable, Equatable {
        package var size: UInt32
        package var duration: UInt32
        package init(size: UInt32, duration: UInt32) {
            self.size = size
            self.duration = duration
        }
    }

    /// A version-1 `sidx` whose first reference starts right after it.
    package static func bytes(trackID: UInt32 = 1, timescale: UInt32, earliestPresentationTime: UInt64,
                              references: [Reference]) -> [UInt8] {
        var writer = BoxWriter(capacity: 32 + references.count * 12)
        writer.fullBox("sidx", version: 1) { sidx in
            sidx.u32(trackID)
            sidx.u32(timescale)
            sidx.u64(earliestPresentationTime)
            sidx.u64(0) // first_offset
            sidx.u16(0)
            sidx.u16(UInt16(clamping: references.count))
            for reference in references {
                sidx.u32(reference.size & 0x7FFF_FFFF)
                sidx.u32(reference.duration)
                sidx.u32(0x9000_0000) // starts_with_SAP, SAP type 1
            }
        }
        return writer.bytes
    }

    /// The size of a `sidx` with `count` references.
    package static func size(references count: Int) -> Int { 40 + count * 12 }
}
