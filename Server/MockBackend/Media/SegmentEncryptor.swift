import Crypto
import _CryptoExtras
import Foundation
import SampleAES

/// Encrypted segments, made once per key and fixture segment, then kept in the data
/// directory's cache and served like any file. Cache paths include the key id, so a new key
/// never meets old files.
/// - HLSe (AES-128): the fixture segment encrypted whole with AES-128-CBC and PKCS7 padding.
/// - FairPlay (SAMPLE-AES): the fixture segment with its H.264 and AAC samples encrypted
///   per Apple's SAMPLE-AES format (`SampleAES`), still a valid transport stream.
struct SegmentEncryptor: Sendable {
    var cacheDirectory: URL

    /// The path of the AES-128 copy of `source`, creating it on first use.
    func aes128Segment(source: String, cacheName: String, key: ContentKey) throws -> String {
        try cached(directory: "aes128/\(key.keyID)", cacheName: cacheName) {
            try AES._CBC.encrypt(Data(contentsOf: URL(fileURLWithPath: source)), using: SymmetricKey(data: key.key),
                                 iv: AES._CBC.IV(ivBytes: key.iv))
        }
    }

    /// The path of the SAMPLE-AES copy of `source`, creating it on first use.
    func sampleAESSegment(source: String, cacheName: String, key: ContentKey) throws -> String {
        try cached(directory: "sample-aes/\(key.keyID)", cacheName: cacheName) {
            let clear = Array(try Data(contentsOf: URL(fileURLWithPath: source)))
            return Data(try SampleAES.encrypt(segment: clear, key: key.key, iv: key.iv))
        }
    }

    /// `directory/cacheName` under the cache, written from `make` unless it exists.
    /// Concurrent first uses may both encrypt; the atomic rename makes that harmless.
    private func cached(directory name: String, cacheName: String, make: () throws -> Data) throws -> String {
        let directory = cacheDirectory.appendingPathComponent(name)
        let destination = directory.appendingPathComponent(cacheName)
        if FileManager.default.fileExists(atPath: destination.path) { return destination.path }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let encrypted = try make()
        let temporary = directory.appendingPathComponent(".\(cacheName).\(UUID().uuidString).tmp")
        try encrypted.write(to: temporary)
        if rename(temporary.path, destination.path) != 0 {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown)
        }
        return destination.path
    }
}
