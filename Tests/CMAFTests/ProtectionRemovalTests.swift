@testable import CMAF
import Foundation
import TestKit
import Testing

/// The reading side: real fragments of the fixtures (H.264, HEVC, AAC) encrypted by
/// `FragmentEncryptor` and written by `InitSegment`/`MediaSegment`, then cleared by
/// `ProtectionRemoval`, must give byte for byte what the writers give without encryption;
/// with `styp` or without, one fragment or several, with a `sidx` before them. Hand-built
/// segments cover what this project's writer never emits: `saiz`/`saio` without `senc`,
/// `seig` sample groups, a `pssh` in the `moof`, an explicit base data offset.
@Suite struct ProtectionRemovalTests {
    static let key = EncryptionTests.key
    static let keyID = EncryptionTests.keyID
    static let iv = EncryptionTests.iv
    static let pssh = TrackProtection.pssh(systemID: TrackProtection.commonSystemID, keyIDs: [keyID])

    /// A fixture rendition's track, encrypted: its encryptor and protected init segment.
    struct Protected {
        var track: DemuxedTrack
        var fragments: [Fragment]
        var encryptor: FragmentEncryptor
        var protectedInit: [UInt8]

        init(_ dir: String, _ scheme: ProtectionScheme) throws {
            track = try TrackRemuxer.demux(segments: RemuxTests.segments(dir))
            fragments = track.fragments(origin: 118_800)
            encryptor = try FragmentEncryptor(format: track.format, scheme: scheme, key: key, keyID: keyID, iv: iv, ivSalt: 7)
            protectedInit = InitSegment.bytes(track.format, protection: encryptor.protection(psshBoxes: [pssh]))
        }

        /// Every fragment encrypted, with its `senc` records.
        func encrypted() throws -> [(Fragment, FragmentEncryption)] {
            var sample: UInt64 = 0
            return try fragments.map { fragment in
                defer { sample += UInt64(fragment.samples.count) }
                return try encryptor.encrypt(fragment, firstSample: sample)
            }
        }
    }

    static let renditions: [(String, ProtectionScheme)] = [
        ("video/416x234", .cbcs), ("video/416x234", .cenc), ("video-hevc/416x234", .cbcs), ("video-hevc/416x234", .cenc),
        ("audio/en", .cbcs), ("audio/en", .cenc),
    ]

    @Test("the clear init segment is the writer's clear one, and says how the track was protected", arguments: renditions)
    func clearInitIsTheWritersClearInit(_ dir: String, _ scheme: ProtectionScheme) throws {
        let rendition = try Protected(dir, scheme)
        let format = rendition.track.format
        let (clear, found) = try ProtectionRemoval.clearInit(rendition.protectedInit)
        #expect(clear == InitSegment.bytes(format))
        let info = try #require(found)
        #expect(info.scheme == scheme)
        #expect(info.keyID == Self.keyID)
        #expect(info.originalFormat == FourCC(stringLiteral: format.sampleEntryType))
        #expect(info.trackID == 1 && info.timescale == format.timescale && info.isVideo == format.isVideo)
        #expect(info.nalLengthSize == (format.isVideo ? 4 : nil))
        #expect(info.defaults.isProtected)
        switch scheme {
        case .cbcs:
            #expect(info.perSampleIVSize == 0 && info.constantIV == Self.iv)
            #expect(info.cryptByteBlock == (format.isVideo ? 1 : 0) && info.skipByteBlock == (format.isVideo ? 9 : 0))
        case .cenc:
            #expect(info.perSampleIVSize == 8 && info.constantIV == nil && info.cryptByteBlock == 0 && info.skipByteBlock == 0)
        }
    }

    @Test("a clear init segment comes back unchanged, without protection")
    func clearInitOfAClearTrackIsUnchanged() throws {
        let track = try TrackRemuxer.demux(segments: RemuxTests.segments("audio/en"))
        let bytes = InitSegment.bytes(track.format)
        let (clear, info) = try ProtectionRemoval.clearInit(bytes)
        #expect(clear == bytes && info == nil)
        #expect(try ProtectionRemoval.clearSegment(bytes, protection: nil, key: []) == bytes)
    }

    @Test("each cleared segment is the writer's clear one, with styp and without", arguments: renditions)
    func clearSegmentsAreTheWritersClearSegments(_ dir: String, _ scheme: ProtectionScheme) throws {
        let rendition = try Protected(dir, scheme)
        let info = try #require(try ProtectionRemoval.clearInit(rendition.protectedInit).protection)
        let cipher = try SampleCipher(key: Self.key)
        for (index, ((encrypted, encryption), fragment)) in zip(try rendition.encrypted(), rendition.fragments).enumerated() {
            for segmentType in [true, false] {
                let input = MediaSegment.bytes(encrypted, sequenceNumber: UInt32(index + 1), encryption: encryption, segmentType: segmentType)
                let expected = MediaSegment.bytes(fragment, sequenceNumber: UInt32(index + 1), segmentType: segmentType)
                #expect(input != expected)
                #expect(try ProtectionRemoval.clearSegment(input, protection: info, cipher: cipher) == expected)
            }
        }
    }

    @Test("several fragments in one buffer, and a sidx before them, are cleared together", arguments: renditions)
    func severalFragmentsAndASegmentIndex(_ dir: String, _ scheme: ProtectionScheme) throws {
        let rendition = try Protected(dir, scheme)
        let info = try #require(try ProtectionRemoval.clearInit(rendition.protectedInit).protection)
        var input: [UInt8] = [], expected: [UInt8] = []
        var encryptedParts: [[UInt8]] = [], clearParts: [[UInt8]] = []
        for (index, ((encrypted, encryption), fragment)) in zip(try rendition.encrypted(), rendition.fragments).enumerated() {
            let number = UInt32(index + 1)
            input += MediaSegment.bytes(encrypted, sequenceNumber: number, encryption: encryption, segmentType: index == 0)
            expected += MediaSegment.bytes(fragment, sequenceNumber: number, segmentType: index == 0)
            encryptedParts.append(MediaSegment.bytes(encrypted, sequenceNumber: number, encryption: encryption, segmentType: false))
            clearParts.append(MediaSegment.bytes(fragment, sequenceNumber: number, segmentType: false))
        }
        #expect(try ProtectionRemoval.clearSegment(input, protection: info, key: Self.key) == expected)

        // A single-file track's index and fragments: the references' sizes follow the fragments.
        func index(_ parts: [[UInt8]]) -> [UInt8] {
            SegmentIndex.bytes(timescale: rendition.track.format.timescale,
                               earliestPresentationTime: rendition.fragments[0].earliestPresentationTime,
                               references: zip(parts, rendition.fragments).map { .init(size: UInt32($0.count), duration: UInt32($1.duration)) })
        }
        let indexed = index(encryptedParts) + encryptedParts.joined()
        #expect(try ProtectionRemoval.clearSegment(indexed, protection: info, key: Self.key) == index(clearParts) + clearParts.joined())
        // One fragment as a byte range of that file gives.
        #expect(try ProtectionRemoval.clearSegment(encryptedParts[2], protection: info, key: Self.key) == clearParts[2])
    }

    @Test("the wrong key gives other bytes, not an error (AES without padding cannot tell)")
    func wrongKeyGivesOtherBytes() throws {
        let rendition = try Protected("video/416x234", .cbcs)
        let info = try #require(try ProtectionRemoval.clearInit(rendition.protectedInit).protection)
        let (encrypted, encryption) = try rendition.encrypted()[0]
        let input = MediaSegment.bytes(encrypted, sequenceNumber: 1, encryption: encryption)
        let wrong = try ProtectionRemoval.clearSegment(input, protection: info, key: [UInt8](repeating: 0xAB, count: 16))
        #expect(wrong != MediaSegment.bytes(rendition.fragments[0], sequenceNumber: 1))
        #expect(wrong.count == MediaSegment.bytes(rendition.fragments[0], sequenceNumber: 1).count)
    }

    // MARK: hand-built fragments

    /// Three samples of one `cenc` fragment: the first clear through a `seig` group that says
    /// so, the others with 8-byte IVs and subsamples.
    static let samples: [[UInt8]] = [(0 ..< 100).map { UInt8($0) }, (0 ..< 237).map { UInt8(($0 * 7) & 0xFF) }, (0 ..< 64).map { UInt8(255 - $0) }]
    static let entries: [[Subsample]] = [[], [Subsample(clear: 5, protected: 32), Subsample(clear: 10, protected: 190)], [Subsample(clear: 0, protected: 64)]]
    static let ivs: [[UInt8]] = [[], [1, 2, 3, 4, 5, 6, 7, 8], [9, 9, 9, 9, 0, 0, 0, 1]]

    /// The auxiliary records (IV, subsample count and entries) of the samples, back to back.
    static var records: (sizes: [UInt8], bytes: [UInt8]) {
        var writer = BoxWriter()
        var sizes: [UInt8] = []
        for (iv, list) in zip(ivs, entries) {
            let start = writer.count
            if !iv.isEmpty {
                writer.append(iv)
                writer.u16(UInt16(list.count))
                for entry in list { writer.u16(UInt16(entry.clear)); writer.u32(UInt32(entry.protected)) }
            }
            sizes.append(UInt8(writer.count - start))
        }
        return (sizes, writer.bytes)
    }

    /// A segment whose `mdat` holds the auxiliary records, then the samples. Encrypted, the
    /// `moof` also has a `pssh`, `seig` groups and `saiz`/`saio` pointing into the `mdat`
    /// (no `senc`); `explicitBase` names the `mdat` payload in `tfhd` instead of counting
    /// from the `moof`.
    static func handBuilt(encrypted: Bool, explicitBase: Bool) throws -> [UInt8] {
        var data: [UInt8] = []
        let cipher = try SampleCipher(key: key)
        for (index, var sample) in samples.enumerated() {
            if encrypted, !ivs[index].isEmpty { try cipher.cenc(&sample, subsamples: entries[index], iv: ivs[index]) }
            data += sample
        }
        let (sizes, auxiliary) = records
        var writer = BoxWriter()
        writer.box("ftyp") { $0.fourCC("iso6"); $0.u32(0) }
        let moofStart = writer.count
        var dataOffsetField = 0, baseField = 0, auxiliaryField: Int?
        writer.box("moof") { moof in
            moof.fullBox("mfhd") { $0.u32(1) }
            if encrypted { moof.append(pssh) }
            moof.box("traf") { traf in
                traf.fullBox("tfhd", flags: explicitBase ? 0x000001 : 0x020000) { tfhd in
                    tfhd.u32(1)
                    baseField = tfhd.count
                    if explicitBase { tfhd.u64(0) }
                }
                traf.fullBox("tfdt", version: 1) { $0.u64(0) }
                if encrypted {
                    traf.fullBox("sbgp") { sbgp in
                        sbgp.fourCC("seig"); sbgp.u32(2)
                        sbgp.u32(1); sbgp.u32(0x10001)
                        sbgp.u32(2); sbgp.u32(0x10002)
                    }
                }
                traf.fullBox("trun", flags: 0x000201) { trun in
                    trun.u32(UInt32(samples.count))
                    dataOffsetField = trun.count
                    trun.u32(0)
                    for sample in samples { trun.u32(UInt32(sample.count)) }
                }
                if encrypted {
                    traf.fullBox("sgpd", version: 1) { sgpd in
                        sgpd.fourCC("seig"); sgpd.u32(20); sgpd.u32(2)
                        sgpd.append([0, 0, 0, 0]); sgpd.zeros(16)  // clear
                        sgpd.append([0, 0, 1, 8]); sgpd.append(keyID)  // protected, 8-byte IVs
                    }
                    traf.fullBox("saiz") { saiz in
                        saiz.u8(0); saiz.u32(UInt32(sizes.count)); saiz.append(sizes)
                    }
                    traf.fullBox("saio", version: 1) { saio in
                        saio.u32(1)
                        auxiliaryField = saio.count
                        saio.u64(0)
                    }
                }
            }
        }
        let payload = writer.count + 8
        if explicitBase {
            writer.patch32(at: baseField + 4, UInt32(payload))
            writer.patch32(at: dataOffsetField, UInt32(auxiliary.count))
            if let auxiliaryField { writer.patch32(at: auxiliaryField + 4, 0) }
        } else {
            writer.patch32(at: dataOffsetField, UInt32(payload - moofStart + auxiliary.count))
            if let auxiliaryField { writer.patch32(at: auxiliaryField + 4, UInt32(payload - moofStart)) }
        }
        writer.box("mdat") { $0.append(auxiliary); $0.append(data) }
        return writer.bytes
    }

    /// A cenc track description whose `tenc` says 8-byte IVs under `keyID`.
    static func handBuiltProtection() throws -> ProtectedTrackInfo {
        let track = try TrackRemuxer.demux(segments: RemuxTests.segments("audio/en"))
        let protection = TrackProtection(schemeType: "cenc", keyID: keyID, perSampleIVSize: 8, constantIV: nil)
        return try #require(try ProtectionRemoval.clearInit(InitSegment.bytes(track.format, protection: protection)).protection)
    }

    @Test("saiz/saio without senc, seig groups, a pssh in the moof: read, decrypted, removed", arguments: [false, true])
    func auxiliaryInformationWithoutSampleEncryption(explicitBase: Bool) throws {
        let input = try Self.handBuilt(encrypted: true, explicitBase: explicitBase)
        let expected = try Self.handBuilt(encrypted: false, explicitBase: explicitBase)
        #expect(input != expected)
        let clear = try ProtectionRemoval.clearSegment(input, protection: Self.handBuiltProtection(), key: Self.key)
        #expect(clear == expected)
        // The clear samples are the plain ones, at the end of the mdat.
        #expect(Array(clear.suffix(401)) == Self.samples.flatMap { $0 })
    }

    @Test("a sample group naming another key id is refused, not decrypted with the wrong key")
    func sampleGroupWithAnotherKeyIsRefused() throws {
        var input = try Self.handBuilt(encrypted: true, explicitBase: false)
        // The second seig entry's key id: find it after the group's [0, 0, 1, 8].
        let marker: [UInt8] = [0, 0, 1, 8] + Self.keyID
        let at = try #require((0 ..< input.count - marker.count).first { Array(input[$0 ..< $0 + marker.count]) == marker })
        input[at + 4] ^= 0xFF
        #expect(cmafErrorCode { _ = try ProtectionRemoval.clearSegment(input, protection: Self.handBuiltProtection(), key: Self.key) } == .invalidKey)
    }
}
