import CMAF

/// `cmaf`: MPEG-TS segments as the mock remuxes them to CMAF (PAT/PMT, PES times, H.264 and
/// HEVC access units, ADTS frames), then every sample's slice headers read for its subsamples,
/// encrypted with cbcs and cenc; and the input read as one H.264 and one HEVC NAL unit of each
/// parameter-set kind.
///
/// Nothing traps; a track that remuxes has its fragments add up (sample sizes to the data), and
/// encryption keeps every sample's length.
enum CMAFTarget {
    static let key: [UInt8] = Array(0..<16)
    static let keyID: [UInt8] = Array(16..<32)
    static let iv: [UInt8] = Array(32..<48)

    static let target = FuzzTarget(name: "cmaf") { buffer in
        let bytes = Array(buffer)
        _ = try? H264SPS(nal: bytes[...])
        _ = try? H264PPS(nal: bytes[...])
        _ = try? HEVCVPS(nal: bytes[...])
        _ = try? HEVCSPS(nal: bytes[...])
        _ = try? HEVCPPS(nal: bytes[...])
        guard let track = try? TrackRemuxer.demux(segments: [bytes]) else { return }
        let fragments = track.fragments(origin: track.firstDecodeTime)
        for fragment in fragments {
            FuzzCheck.expect(fragment.samples.reduce(0) { $0 + Int($1.size) } == fragment.data.count, "sample sizes do not add up to the data")
            _ = MediaSegment.bytes(fragment, sequenceNumber: 1)
        }
        _ = InitSegment.bytes(track.format)
        for scheme in [ProtectionScheme.cbcs, .cenc] {
            guard let encryptor = try? FragmentEncryptor(format: track.format, scheme: scheme, key: key, keyID: keyID, iv: iv, ivSalt: 1)
            else { continue }
            for fragment in fragments {
                guard let (encrypted, information) = try? encryptor.encrypt(fragment, firstSample: 0) else { continue }
                FuzzCheck.expect(encrypted.data.count == fragment.data.count, "encryption changed the data's length")
                _ = MediaSegment.bytes(encrypted, sequenceNumber: 1, encryption: information)
            }
        }
    }
}
