import Crypto
import _CryptoExtras
import Foundation
import SampleAES
import Locking
import SystemFiles
import WireModels

/// Encrypted segments, made once per key and fixture segment, then kept in the data
/// directory's cache and served like any file. Cache paths include the key id, so a new key
/// never meets old files.
/// - HLSe (AES-128): the fixture segment encrypted whole with AES-128-CBC and PKCS7 padding.
/// - FairPlay (SAMPLE-AES): the fixture segment with its H.264 and AAC samples encrypted
///   per Apple's SAMPLE-AES format (`SampleAES`), still a valid transport stream.
final class SegmentEncryptor: Sendable {
    let cacheDirectory: URL
    /// Cached files already made, by "directory/name": after the first request a segment
    /// costs a dictionary lookup and one access() call, not path building and FileManager calls.
    private let known = Locked<[String: CachedSegment]>([:])

    init(cacheDirectory: URL) {
        self.cacheDirectory = cacheDirectory
    }

    /// The AES-128 copy of `source`, created on first use.
    func aes128Segment(source: String, cacheName: String, key: ContentKey) throws -> CachedSegment {
        try cached(directory: "aes128/\(key.keyID)", cacheName: cacheName) {
            try AES._CBC.encrypt(Data(contentsOf: URL(fileURLWithPath: source)), using: SymmetricKey(data: key.key),
                                 iv: AES._CBC.IV(ivBytes: key.iv))
        }
    }

    /// The SAMPLE-AES copy of `source`, created on first use.
    func sampleAESSegment(source: String, cacheName: String, key: ContentKey) throws -> CachedSegment {
        try cached(directory: "sample-aes/\(key.keyID)", cacheName: cacheName) {
            let clear = Array(try Data(contentsOf: URL(fileURLWithPath: source)))
            return Data(try SampleAES.encrypt(segment: clear, key: key.key, iv: key.iv))
        }
    }

    /// `directory/cacheName` under the cache, written from `make` unless it exists, with its
    /// digest: of the bytes written, or, for a file an earlier run left (a restart), read from
    /// the file once. Concurrent first uses may both encrypt (or hash); the atomic rename makes
    /// that harmless, and the bytes are the same either way.
    private func cached(directory name: String, cacheName: String, make: () throws -> Data) throws -> CachedSegment {
        let id = name + "/" + cacheName
        // One access() call: a cache folder deleted while the server runs is made again.
        if let segment = known.withLock({ $0[id] }), access(segment.path, F_OK) == 0 { return segment }
        let directory = cacheDirectory.appendingPathComponent(name)
        let destination = directory.appendingPathComponent(cacheName)
        let digest: ReprDigest
        if FileManager.default.fileExists(atPath: destination.path) {
            digest = try FileDigests.compute(path: destination.path)
        } else {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let encrypted = try make()
            digest = ReprDigest(of: encrypted)
            let temporary = directory.appendingPathComponent(".\(cacheName).\(UUID().uuidString).tmp")
            try encrypted.write(to: temporary)
            if rename(temporary.path, destination.path) != 0 {
                try? FileManager.default.removeItem(at: temporary)
                throw CocoaError(.fileWriteUnknown)
            }
        }
        guard let status = FileStatus(path: destination.path) else { throw CocoaError(.fileReadNoSuchFile) }
        let segment = CachedSegment(path: destination.path, size: UInt64(status.size), digest: digest)
        known.withLock { $0[id] = segment }
        return segment
    }
}

/// An encrypted segment in the cache: where it is, its size and its `Repr-Digest` (the
/// strong ETag is made from it).
struct CachedSegment: Sendable, Equatable {
    var path: String
    var size: UInt64
    var digest: ReprDigest
}
