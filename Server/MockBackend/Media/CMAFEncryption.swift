import CMAF
import Crypto
import Foundation

/// How a CMAF file is served: clear, `cbcs` under the video's content key (FairPlay-style HLS:
/// the same key, key id and IV the FairPlay license delivers), or `cenc` under the video's
/// Common Encryption key (DASH; what the ClearKey license delivers). The path's scheme segment
/// names it: `clear`, `cbcs`, `cenc`.
enum CMAFEncryption: Sendable, Equatable {
    case clear
    case cbcs(ContentKey)
    case cenc(ContentKey)

    /// The path segment.
    var scheme: String {
        switch self {
        case .clear: "clear"
        case .cbcs: "cbcs"
        case .cenc: "cenc"
        }
    }

    /// What a digest of a file encrypted so is kept under: the scheme and the key id.
    var cacheName: String {
        switch self {
        case .clear: "clear"
        case .cbcs(let key), .cenc(let key): "\(scheme):\(key.keyID)"
        }
    }

    /// The encryption a `scheme` path segment names for `video` (whose content key is `key`),
    /// nil when the video is not served so: a clear video only clear, a FairPlay one only
    /// encrypted (HLS cbcs, DASH cenc); AES-128 videos have no CMAF.
    static func named(_ scheme: String, video: CatalogVideo, key: ContentKey?) -> CMAFEncryption? {
        switch (video.protection, scheme) {
        case (.clear, "clear"): .clear
        case (.fairplay, "cbcs"): key.map { .cbcs($0) }
        case (.fairplay, "cenc"): key.map { .cenc($0.commonEncryptionKey) }
        default: nil
        }
    }

    /// The encryptor of a track with format `format` for rendition `ref`; nil when clear.
    func encryptor(_ format: TrackFormat, _ ref: RenditionRef) throws(CMAFError) -> FragmentEncryptor? {
        // A cenc IV's upper half tells the renditions apart, so no two samples under one key share an IV.
        let kind: UInt32 = switch ref.kind {
        case .video: 0x7669_0000
        case .hevc: 0x6865_0000
        case .audio, .subtitles: 0x6175_0000
        }
        let salt = kind | UInt32(ref.index & 0xFFFF)
        switch self {
        case .clear: return nil
        case .cbcs(let key):
            return try FragmentEncryptor(format: format, scheme: .cbcs, key: key.key, keyID: key.keyIDBytes, iv: key.iv, ivSalt: salt)
        case .cenc(let key):
            return try FragmentEncryptor(format: format, scheme: .cenc, key: key.key, keyID: key.keyIDBytes, iv: [], ivSalt: salt)
        }
    }

    /// The `pssh` boxes of an init segment: for cenc the W3C common-system one (what a ClearKey
    /// CDM reads as "cenc" init data); none for cbcs, whose FairPlay key comes by `skd://`.
    var psshBoxes: [[UInt8]] {
        switch self {
        case .cenc(let key): [TrackProtection.pssh(systemID: TrackProtection.commonSystemID, keyIDs: [key.keyIDBytes])]
        case .clear, .cbcs: []
        }
    }
}

extension ContentKey {
    /// The key id's 16 bytes (it is written as a UUID).
    var keyIDBytes: [UInt8] {
        let hex = keyID.replacingOccurrences(of: "-", with: "")
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
              let byte = UInt8(hex[index ..< next], radix: 16) {
            bytes.append(byte)
            index = next
        }
        return bytes.count == 16 ? bytes : Array(SHA256.hash(data: Array(keyID.utf8)).prefix(16))
    }

    /// The video's Common Encryption key for DASH: derived from its content key (HMAC-SHA256),
    /// so nothing more is stored and a key rotation changes both; its own key id (a version-4
    /// style UUID, never all zeros), since DASH and HLS keys are separate keys as on the real service.
    var commonEncryptionKey: ContentKey {
        let secret = SymmetricKey(data: key)
        let derivedKey = Array(HMAC<SHA256>.authenticationCode(for: Array("cenc key".utf8), using: secret)).prefix(16)
        var id = Array(Array(HMAC<SHA256>.authenticationCode(for: Array("cenc key id".utf8), using: secret)).prefix(16))
        id[6] = id[6] & 0x0F | 0x40
        id[8] = id[8] & 0x3F | 0x80
        let hex = id.map { String(format: "%02x", $0) }.joined()
        let uuid = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
            .map(String.init).joined(separator: "-")
        return ContentKey(keyID: uuid, key: Array(derivedKey), iv: [])
    }
}
