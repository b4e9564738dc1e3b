/// How one sample (or every sample, by default) is encrypted: `tenc`'s defaults, or a `seig`
/// sample group entry (ISO/IEC 23001-7 6 and 7.2) that overrides them for some samples.
/// Both boxes share this layout.
package struct SampleEncryptionDefaults: Sendable, Equatable {
    /// default_isProtected: 0 means the samples are clear.
    package var isProtected: Bool
    /// Bytes of IV per sample in `senc` (0, 8 or 16); 0 with a constant IV.
    package var perSampleIVSize: Int
    /// The 16-byte key id.
    package var keyID: [UInt8]
    /// The constant IV (8 or 16 bytes) when `perSampleIVSize` is 0 and the samples are protected.
    package var constantIV: [UInt8]?
    /// The pattern (version 1 and later): crypt and skip 16-byte blocks; 0:0 for none.
    package var cryptByteBlock: Int
    package var skipByteBlock: Int

    /// Parameters as `tenc` or a `seig` entry states them.
    package init(isProtected: Bool, perSampleIVSize: Int, keyID: [UInt8], constantIV: [UInt8]?, cryptByteBlock: Int, skipByteBlock: Int) {
        self.isProtected = isProtected
        self.perSampleIVSize = perSampleIVSize
        self.keyID = keyID
        self.constantIV = constantIV
        self.cryptByteBlock = cryptByteBlock
        self.skipByteBlock = skipByteBlock
    }

    /// Reads the fields after the full-box header of `tenc` (or at the start of a `seig`
    /// entry, `patterned` then always true: the entry has the pattern byte).
    static func read(_ reader: inout FieldReader, patterned: Bool) throws(CMAFError) -> SampleEncryptionDefaults {
        _ = try reader.u8("reserved byte")
        let pattern = try reader.u8("pattern")
        let isProtected = try reader.u8("isProtected")
        let ivSize = Int(try reader.u8("per-sample IV size"))
        guard [0, 8, 16].contains(ivSize) else { throw CMAFError(.malformedBox, "a per-sample IV size of \(ivSize); it is 0, 8 or 16") }
        let keyID = try reader.bytes(16, "key id")
        var constantIV: [UInt8]?
        if isProtected != 0, ivSize == 0 {
            let size = Int(try reader.u8("constant IV size"))
            guard size == 8 || size == 16 else { throw CMAFError(.malformedBox, "a constant IV of \(size) bytes; it is 8 or 16") }
            constantIV = try reader.bytes(size, "constant IV")
        }
        return SampleEncryptionDefaults(isProtected: isProtected != 0, perSampleIVSize: ivSize, keyID: keyID, constantIV: constantIV,
                                        cryptByteBlock: patterned ? Int(pattern >> 4) : 0, skipByteBlock: patterned ? Int(pattern & 0x0F) : 0)
    }

    /// The entries of a `seig` sample group description (`sgpd`, ISO/IEC 14496-12 8.9.3);
    /// nil when `box` describes another grouping type.
    static func sampleGroupEntries(_ bytes: [UInt8], sgpd box: Box) throws(CMAFError) -> [SampleEncryptionDefaults]? {
        var reader = FieldReader(bytes, body: box)
        let (version, _) = try reader.versionAndFlags()
        guard FourCC(try reader.u32("grouping type")) == "seig" else { return nil }
        var defaultLength = 0
        if version == 1 { defaultLength = Int(try reader.u32("default length")) }
        if version >= 2 { _ = try reader.u32("default sample description index") }
        let count = Int(try reader.u32("entry count"))
        // An entry is at least 20 bytes: a count past that is malformed, not a long loop.
        try reader.need(count * 20, "\(count) entries")
        var entries: [SampleEncryptionDefaults] = []
        for _ in 0 ..< count {
            var length = defaultLength
            if version == 1, defaultLength == 0 { length = Int(try reader.u32("description length")) }
            let start = reader.position
            entries.append(try read(&reader, patterned: true))
            if length > 0 {
                guard reader.position - start <= length else { throw CMAFError(.malformedBox, "a 'seig' entry is longer than its \(length) bytes") }
                try reader.skip(length - (reader.position - start), "entry padding")
            }
        }
        return entries
    }
}

/// What a protected track's clear init segment no longer says but its media segments need to
/// be decrypted: the scheme and its defaults (`sinf`), and the track's identity, timescale and
/// kind. `ProtectionRemoval.clearInit` reads it; `clearSegment` takes it.
package struct ProtectedTrackInfo: Sendable, Equatable {
    /// `cbcs` or `cenc` (`schm`); the other schemes (`cens`, `cbc1`) are refused.
    package var scheme: ProtectionScheme
    /// The sample entry type behind `encv`/`enca` (`frma`): `avc1`, `hvc1`, `hev1`, `mp4a`….
    package var originalFormat: FourCC
    /// `tenc`: the key id, IV rule and pattern every sample has unless a sample group says otherwise.
    package var defaults: SampleEncryptionDefaults
    /// `seig` entries of the track's own `sgpd` (in `stbl`), numbered from 1 by `sbgp`.
    package var sampleGroups: [SampleEncryptionDefaults] = []
    /// `tkhd` track_ID.
    package var trackID: UInt32
    /// `mdhd` timescale.
    package var timescale: UInt32
    /// Whether the handler is `vide`.
    package var isVideo: Bool
    /// Video: the NAL unit length size (`avcC`/`hvcC` lengthSizeMinusOne + 1); nil for audio.
    package var nalLengthSize: Int?
    /// `trex` default_sample_size: the size of a sample neither `tfhd` nor `trun` sizes.
    package var defaultSampleSize: UInt32 = 0
    /// `trex` default_sample_description_index: the entry a fragment uses unless `tfhd` names one.
    package var defaultDescriptionIndex: UInt32 = 1
    /// The `stsd` entries (numbered from 1) that were clear already: their fragments carry
    /// clear samples (Apple's HLS rule 13.10 mixes them with protected ones).
    package var clearDescriptionIndices: [UInt32] = []

    /// The key id (`tenc` default_KID) whose key decrypts the track.
    package var keyID: [UInt8] { defaults.keyID }
    /// Bytes of IV per sample in `senc` (0: constant IV).
    package var perSampleIVSize: Int { defaults.perSampleIVSize }
    /// The constant IV, when there is one.
    package var constantIV: [UInt8]? { defaults.constantIV }
    /// The pattern's encrypted blocks and skipped blocks (0:0 for cenc and whole-block cbcs).
    package var cryptByteBlock: Int { defaults.cryptByteBlock }
    package var skipByteBlock: Int { defaults.skipByteBlock }
}
