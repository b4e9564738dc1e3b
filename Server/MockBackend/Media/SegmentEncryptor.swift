import Crypto
import _CryptoExtras
import Foundation

/// HLSe (AES-128) segments: each fixture segment encrypted whole with AES-128-CBC and PKCS7
/// padding under the video's key and IV, once, then kept in the data directory's cache and
/// served like any file. Cache paths include the key id, so a new key never meets old files.
struct SegmentEncryptor: Sendable {
    var cacheDirectory: URL

    /// The path of the encrypted copy of `source`, creating it on first use.
    /// Concurrent first uses may both encrypt; the atomic rename makes that harmless.
    func aes128Segment(source: String, cacheName: String, key: ContentKey) throws -> String {
        let directory = cacheDirectory.appendingPathComponent("aes128/\(key.keyID)")
        let destination = directory.appendingPathComponent(cacheName)
        if FileManager.default.fileExists(atPath: destination.path) { return destination.path }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let clear = try Data(contentsOf: URL(fileURLWithPath: source))
        let encrypted = try AES._CBC.encrypt(clear, using: SymmetricKey(data: key.key), iv: AES._CBC.IV(ivBytes: key.iv))
        let temporary = directory.appendingPathComponent(".\(cacheName).\(UUID().uuidString).tmp")
        try encrypted.write(to: temporary)
        if rename(temporary.path, destination.path) != 0 {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown)
        }
        return destination.path
    }
}
