/// Encrypts a CMAF track's fragments with Common Encryption (ISO/IEC 23001-7) and says how, for
/// its init segment (`TrackProtection`) and each fragment (`FragmentEncryption`):
///
/// - `cbcs` (FairPlay-style HLS, Apple's only CMAF scheme): a constant 16-byte IV in `tenc`;
///   video 1:9 pattern over subsamples whose NAL headers and slice headers stay clear, audio
///   whole-block full sample (0:0); `senc` records only the video's subsamples.
/// - `cenc` (DASH, what real Dynamic Delivery DASH uses and every ClearKey CDM decrypts):
///   AES-CTR, an 8-byte IV per sample (CMAF 8.2.3.1) in `senc`, video subsamples with
///   16-byte-aligned protected ranges, audio whole samples.
///
/// IVs never repeat under one key: a cenc IV is the track's 32-bit salt (`ivSalt`, one per
/// rendition) and the sample's 32-bit number over the whole track.
package struct FragmentEncryptor: Sendable {
    package let scheme: ProtectionScheme
    package let keyID: [UInt8]
    private let cipher: SampleCipher
    private let constantIV: [UInt8]
    private let ivSalt: UInt32
    private let format: TrackFormat

    /// An encryptor of `format`'s samples under `key` (16 bytes) named `keyID` (16 bytes);
    /// `iv` is the cbcs constant IV (16 bytes; ignored for cenc), `ivSalt` the cenc IVs' upper half.
    package init(format: TrackFormat, scheme: ProtectionScheme, key: [UInt8], keyID: [UInt8], iv: [UInt8], ivSalt: UInt32) throws(CMAFError) {
        guard keyID.count == 16 else { throw CMAFError(.invalidKey, "a key id is 16 bytes, not \(keyID.count)") }
        guard scheme == .cenc || iv.count == 16 else { throw CMAFError(.invalidKey, "a cbcs constant IV is 16 bytes, not \(iv.count)") }
        self.scheme = scheme
        self.keyID = keyID
        cipher = try SampleCipher(key: key)
        constantIV = iv
        self.ivSalt = ivSalt
        self.format = format
    }

    /// What the init segment says: the scheme, the key id, the IV rule and pattern, and the
    /// `pssh` boxes given (the W3C common one for ClearKey, say).
    package func protection(psshBoxes: [[UInt8]] = []) -> TrackProtection {
        switch scheme {
        case .cbcs:
            TrackProtection(schemeType: "cbcs", keyID: keyID, perSampleIVSize: 0, constantIV: constantIV,
                            cryptByteBlock: format.isVideo ? 1 : 0, skipByteBlock: format.isVideo ? 9 : 0, psshBoxes: psshBoxes)
        case .cenc:
            TrackProtection(schemeType: "cenc", keyID: keyID, perSampleIVSize: 8, constantIV: nil, psshBoxes: psshBoxes)
        }
    }

    /// `fragment` with its samples encrypted, and its `senc` records. `firstSample` is the
    /// number of the fragment's first sample over the whole track (its cenc IVs).
    package func encrypt(_ fragment: Fragment, firstSample: UInt64) throws(CMAFError) -> (Fragment, FragmentEncryption) {
        var parameterSets = try format.parameterSets()
        var data = fragment.data
        var ivs: [[UInt8]] = []
        var entries: [[Subsample]] = []
        var offset = 0
        for (index, sample) in fragment.samples.enumerated() {
            let size = Int(sample.size)
            guard offset + size <= data.count else { throw CMAFError(.malformedSample, "the fragment's samples run past its data") }
            var bytes = Array(data[offset ..< offset + size])
            let iv = scheme == .cenc ? Self.cencIV(salt: ivSalt, sample: firstSample + UInt64(index)) : constantIV
            if var sets = parameterSets {
                let subsamples = try Subsample.video(sample: bytes, scheme: scheme, parameterSets: &sets)
                parameterSets = sets
                switch scheme {
                case .cbcs: try cipher.cbcs(&bytes, subsamples: subsamples, iv: iv, .encrypt)
                case .cenc: try cipher.cenc(&bytes, subsamples: subsamples, iv: iv)
                }
                entries.append(subsamples)
            } else {
                switch scheme {
                case .cbcs: try cipher.cbcsFullSample(&bytes, iv: iv, .encrypt)
                case .cenc: try cipher.cencFullSample(&bytes, iv: iv)
                }
            }
            if scheme == .cenc { ivs.append(iv) }
            data.replaceSubrange(offset ..< offset + size, with: bytes)
            offset += size
        }
        var encrypted = fragment
        encrypted.data = data
        return (encrypted, FragmentEncryption(initializationVectors: ivs, subsamples: format.isVideo ? entries : nil))
    }

    /// The 8-byte cenc IV of sample `sample` of a track salted `salt`.
    static func cencIV(salt: UInt32, sample: UInt64) -> [UInt8] {
        let value = UInt64(salt) << 32 | (sample & 0xFFFF_FFFF)
        return (0 ..< 8).map { UInt8((value >> (56 - 8 * UInt64($0))) & 0xFF) }
    }
}
