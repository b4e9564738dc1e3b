/// How a track's samples are encrypted (ISO/IEC 23001-7), as its init segment signals it:
/// the scheme, the default key id, the IV rule and pattern in `tenc`, and the `pssh` boxes.
package struct TrackProtection: Sendable, Equatable {
    /// `cbcs` (AES-CBC, pattern, constant IV) or `cenc` (AES-CTR, per-sample IVs).
    package var schemeType: String
    /// The 16-byte default key id (`tenc.default_KID`, the MPD's `cenc:default_KID`).
    package var keyID: [UInt8]
    /// Bytes of IV per sample in `senc` (8 for CMAF `cenc`); 0 with a constant IV.
    package var perSampleIVSize: Int
    /// The 16-byte constant IV (`cbcs`), when `perSampleIVSize` is 0.
    package var constantIV: [UInt8]?
    /// The pattern (`tenc` version 1): 1:9 for `cbcs` video, 0:0 for whole-block audio;
    /// both 0 and version 0 for `cenc`.
    package var cryptByteBlock: Int = 0
    package var skipByteBlock: Int = 0
    /// Whole `pssh` boxes to carry in `moov` (the W3C common one for ClearKey, say).
    package var psshBoxes: [[UInt8]] = []

    /// The W3C common-system id (`1077efec-c0b2-4d02-ace3-3c1e52e2fb4b`, EME "cenc" init data).
    package static let commonSystemID: [UInt8] = [0x10, 0x77, 0xEF, 0xEC, 0xC0, 0xB2, 0x4D, 0x02,
                                                  0xAC, 0xE3, 0x3C, 0x1E, 0x52, 0xE2, 0xFB, 0x4B]

    /// A version-1 `pssh` of `systemID` listing `keyIDs`, with `data` (empty for the common system).
    package static func pssh(systemID: [UInt8], keyIDs: [[UInt8]], data: [UInt8] = []) -> [UInt8] {
        var writer = BoxWriter()
        writer.fullBox("pssh", version: 1) { box in
            box.append(systemID)
            box.u32(UInt32(keyIDs.count))
            for keyID in keyIDs { box.append(keyID) }
            box.u32(UInt32(data.count))
            box.append(data)
        }
        return writer.bytes
    }

    /// `sinf` inside an `encv`/`enca` entry: `frma`, `schm`, `schi`/`tenc`.
    func writeSchemeInformation(_ writer: inout BoxWriter, originalFormat: String) {
        writer.box("sinf") { sinf in
            sinf.box("frma") { $0.fourCC(originalFormat) }
            sinf.fullBox("schm") { schm in
                schm.fourCC(schemeType)
                schm.u32(0x0001_0000)
            }
            sinf.box("schi") { schi in
                let patterned = schemeType == "cbcs"
                schi.fullBox("tenc", version: patterned ? 1 : 0) { tenc in
                    tenc.u8(0)
                    tenc.u8(patterned ? UInt8(cryptByteBlock & 0x0F) << 4 | UInt8(skipByteBlock & 0x0F) : 0)
                    tenc.u8(1) // default_isProtected
                    tenc.u8(UInt8(perSampleIVSize))
                    tenc.append(keyID)
                    if perSampleIVSize == 0, let constantIV {
                        tenc.u8(UInt8(constantIV.count))
                        tenc.append(constantIV)
                    }
                }
            }
        }
    }
}
