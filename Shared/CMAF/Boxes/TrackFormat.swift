/// What a CMAF track is, as its init segment describes it: one video or one audio track
/// (CMAF never muxes the two), its timescale and codec configuration.
package struct TrackFormat: Sendable, Equatable {
    /// The codec and its configuration record, out of band as `avc1`/`hvc1` require.
    package enum Codec: Sendable, Equatable {
        /// H.264: the SPS and PPS NAL units (no start code, no length), for `avcC`.
        case avc(sps: [UInt8], pps: [UInt8])
        /// HEVC: the VPS, SPS and PPS NAL units, and the `hvcC` record made of them (ISO/IEC 14496-15 8.3.3).
        case hevc(vps: [UInt8], sps: [UInt8], pps: [UInt8], configuration: [UInt8])
        /// AAC: the AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1), for `esds`.
        case aac(audioSpecificConfig: [UInt8])
    }

    package var codec: Codec
    /// Ticks per second of every time in the track's fragments.
    package var timescale: UInt32
    /// Video only: the picture size.
    package var width: Int = 0
    package var height: Int = 0
    /// Audio only: channels and sample rate.
    package var channelCount: Int = 0
    package var sampleRate: Int = 0
    /// ISO 639-2/T language code (`und` when unknown; the media header's packed form).
    package var language: String = "und"
    /// Always 1: a CMAF track file holds one track.
    package var trackID: UInt32 = 1

    package var isVideo: Bool {
        switch codec {
        case .avc, .hevc: true
        case .aac: false
        }
    }

    /// The RFC 6381 codec string (`CODECS`, an MPD's `codecs`): `avc1.4d401e` from the SPS's
    /// profile, constraints and level; `hvc1.1.6.L60.90` from the HEVC SPS's profile_tier_level;
    /// `mp4a.40.N` from the AudioSpecificConfig's object type.
    package var codecString: String {
        switch codec {
        case let .avc(sps, _):
            let hex = { (byte: UInt8) in (byte < 16 ? "0" : "") + String(byte, radix: 16) }
            return sps.count > 3 ? "avc1." + sps[1 ... 3].map(hex).joined() : "avc1"
        case let .hevc(_, sps, _, _):
            return (try? HEVCDecoderConfiguration.codecString(sps: sps, sampleEntry: "hvc1")) ?? "hvc1"
        case let .aac(config):
            return "mp4a.40.\(config.first.map { $0 >> 3 } ?? 2)"
        }
    }

    /// The four-character code of the clear sample entry (`frma`'s original format when encrypted).
    package var sampleEntryType: String {
        switch codec {
        case .avc: "avc1"
        case .hevc: "hvc1"
        case .aac: "mp4a"
        }
    }
}

extension TrackFormat {
    /// Writes the sample entry (`avc1`/`hvc1`/`mp4a`, or `encv`/`enca` with `sinf` when
    /// `protection` is given) into an `stsd`.
    func writeSampleEntry(_ writer: inout BoxWriter, protection: TrackProtection?) {
        let type = protection == nil ? sampleEntryType : (isVideo ? "encv" : "enca")
        writer.box(type) { entry in
            entry.zeros(6)
            entry.u16(1) // data_reference_index
            if isVideo {
                entry.u16(0); entry.u16(0); entry.zeros(12) // pre_defined, reserved, pre_defined[3]
                entry.u16(UInt16(clamping: width)); entry.u16(UInt16(clamping: height))
                entry.u32(0x0048_0000); entry.u32(0x0048_0000) // 72 dpi
                entry.u32(0)
                entry.u16(1) // frame_count
                entry.zeros(32) // compressorname
                entry.u16(0x0018)
                entry.u16(0xFFFF) // pre_defined = -1
                switch codec {
                case let .avc(sps, pps): entry.box("avcC") { TrackFormat.writeAVCConfiguration(&$0, sps: sps, pps: pps) }
                case let .hevc(_, _, _, configuration): entry.box("hvcC") { $0.append(configuration) }
                case .aac: break
                }
            } else {
                entry.zeros(8)
                entry.u16(UInt16(clamping: channelCount)); entry.u16(16)
                entry.u16(0); entry.u16(0)
                entry.u32(UInt32(clamping: sampleRate) << 16)
                if case let .aac(config) = codec { writeElementaryStreamDescriptor(&entry, audioSpecificConfig: config) }
            }
            if let protection { protection.writeSchemeInformation(&entry, originalFormat: sampleEntryType) }
        }
    }

    /// `avcC` (ISO/IEC 14496-15 5.3.3.1): one SPS and one PPS, 4-byte NAL lengths, and for the
    /// High profiles the chroma format and bit depths the record then carries.
    static func writeAVCConfiguration(_ writer: inout BoxWriter, sps: [UInt8], pps: [UInt8]) {
        writer.u8(1)
        writer.u8(sps.count > 1 ? sps[1] : 0) // profile_idc
        writer.u8(sps.count > 2 ? sps[2] : 0) // constraint flags
        writer.u8(sps.count > 3 ? sps[3] : 0) // level_idc
        writer.u8(0xFF) // lengthSizeMinusOne = 3
        writer.u8(0xE1) // one SPS
        writer.u16(UInt16(sps.count)); writer.append(sps)
        writer.u8(1)
        writer.u16(UInt16(pps.count)); writer.append(pps)
        if let parsed = try? H264SPS(nal: sps[...]), [100, 110, 122, 144].contains(parsed.profileIDC) {
            writer.u8(0xFC | UInt8(parsed.chromaFormatIDC & 3))
            writer.u8(0xF8 | UInt8(parsed.bitDepthLumaMinus8 & 7))
            writer.u8(0xF8 | UInt8(parsed.bitDepthChromaMinus8 & 7))
            writer.u8(0) // numOfSequenceParameterSetExt
        }
    }

    /// The parameter sets of a video track, for slice headers (subsamples); nil for audio.
    package func parameterSets() throws(CMAFError) -> VideoParameterSets? {
        switch codec {
        case let .avc(sps, pps): .h264(try H264ParameterSets([sps, pps]))
        case let .hevc(vps, sps, pps, _): .hevc(try HEVCParameterSets([vps, sps, pps]))
        case .aac: nil
        }
    }

    /// `esds` (ISO/IEC 14496-1 7.2.6.5): an ES descriptor with the AAC decoder configuration.
    private func writeElementaryStreamDescriptor(_ writer: inout BoxWriter, audioSpecificConfig: [UInt8]) {
        writer.fullBox("esds") { esds in
            let specific = [0x05, UInt8(audioSpecificConfig.count)] + audioSpecificConfig
            let decoderConfig: [UInt8] = [0x04, UInt8(13 + specific.count), 0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] + specific
            let sl: [UInt8] = [0x06, 1, 0x02]
            esds.append([0x03, UInt8(3 + decoderConfig.count + sl.count), 0, 0, 0])
            esds.append(decoderConfig)
            esds.append(sl)
        }
    }

    /// The media header's language: three letters, five bits each (letter - 0x60).
    var packedLanguage: UInt16 {
        let letters = Array(language.utf8)
        guard letters.count == 3, letters.allSatisfy({ (0x61 ... 0x7A).contains($0) }) else { return 0x55C4 } // "und"
        return UInt16(letters[0] - 0x60) << 10 | UInt16(letters[1] - 0x60) << 5 | UInt16(letters[2] - 0x60)
    }
}
