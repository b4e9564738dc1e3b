import Foundation
import Locking
import SystemFiles
import WireModels

/// Media made once, then kept in the data directory's cache (`{data}/cache/…`) and served like
/// any file (zero-copy, as the fixtures are): SAMPLE-AES and AES-128 TS segments
/// (`SegmentEncryptor`), CMAF init and media segments (`CMAFPackager`). A file's path names
/// everything its bytes depend on (the key id, the source's digest, the packaging's version), so
/// a new key, new media or a new packager never meets old files, and a restart reuses them.
final class MediaFileCache: Sendable {
    let directory: URL
    /// Files already made, by "folder/name": after the first request a file costs a dictionary
    /// lookup and one access() call, not path building and FileManager calls.
    private let known = Locked<[String: CachedFile]>([:])

    init(directory: URL) {
        self.directory = directory
    }

    /// `folder/name` under the cache, written from `make` unless it exists, with its digest: of
    /// the bytes written, or, for a file an earlier run left (a restart), read from the file once.
    /// Concurrent first uses may both make it (or hash it); the atomic rename makes that harmless,
    /// and the bytes are the same either way.
    func file<Failure: Error>(folder: String, name: String, make: () throws(Failure) -> [UInt8]) throws -> CachedFile {
        let id = folder + "/" + name
        // One access() call: a cache folder deleted while the server runs is made again.
        if let file = known.withLock({ $0[id] }), access(file.path, F_OK) == 0 { return file }
        let folderURL = directory.appendingPathComponent(folder)
        let destination = folderURL.appendingPathComponent(name)
        let digest: ReprDigest
        if FileManager.default.fileExists(atPath: destination.path) {
            digest = try FileDigests.compute(path: destination.path)
        } else {
            let bytes = try make()
            try FileManager.default.createDirectory(at: folderURL, withIntermediateDirectories: true)
            digest = ReprDigest(of: bytes)
            let temporary = folderURL.appendingPathComponent(".\(name).\(UUID().uuidString).tmp")
            try Data(bytes).write(to: temporary)
            if rename(temporary.path, destination.path) != 0 {
                try? FileManager.default.removeItem(at: temporary)
                throw CocoaError(.fileWriteUnknown)
            }
        }
        guard let status = FileStatus(path: destination.path) else { throw CocoaError(.fileReadNoSuchFile) }
        let file = CachedFile(path: destination.path, size: UInt64(status.size), digest: digest)
        known.withLock { $0[id] = file }
        return file
    }

    /// A file already made and known, without touching the disk; nil otherwise.
    func known(folder: String, name: String) -> CachedFile? { known.withLock { $0[folder + "/" + name] } }
}

/// A file in the cache: where it is, its size and its `Repr-Digest` (the strong ETag is made from it).
struct CachedFile: Sendable, Equatable {
    var path: String
    var size: UInt64
    var digest: ReprDigest
}
