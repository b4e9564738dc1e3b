import Crypto
import _CryptoExtras
import Foundation
import SampleAES
import Locking
import SystemFiles
import WireModels

/// Encrypted segments, made once per key and fixture segment, then kept in the data
/// directory's cache (`MediaFileCache`) and served like any file. Cache paths include the key
/// id, so a new key never meets old files.
/// - HLSe (AES-128): the fixture segment encrypted whole with AES-128-CBC and PKCS7 padding.
/// - FairPlay (SAMPLE-AES): the fixture segment with its H.264 and AAC samples encrypted
///   per Apple's SAMPLE-AES format (`SampleAES`), still a valid transport stream.
final class SegmentEncryptor: Sendable {
    let cache: MediaFileCache

    init(cache: MediaFileCache) {
        self.cache = cache
    }

    /// The AES-128 copy of `source`, created on first use.
    func aes128Segment(source: String, cacheName: String, key: ContentKey) throws -> CachedFile {
        try cache.file(folder: "aes128/\(key.keyID)", name: cacheName) { () throws -> [UInt8] in
            Array(try AES._CBC.encrypt(Data(contentsOf: URL(fileURLWithPath: source)), using: SymmetricKey(data: key.key),
                                       iv: AES._CBC.IV(ivBytes: key.iv)))
        }
    }

    /// The SAMPLE-AES copy of `source`, created on first use.
    func sampleAESSegment(source: String, cacheName: String, key: ContentKey) throws -> CachedFile {
        try cache.file(folder: "sample-aes/\(key.keyID)", name: cacheName) { () throws -> [UInt8] in
            let clear = Array(try Data(contentsOf: URL(fileURLWithPath: source)))
            return try SampleAES.encrypt(segment: clear, key: key.key, iv: key.iv)
        }
    }
}
