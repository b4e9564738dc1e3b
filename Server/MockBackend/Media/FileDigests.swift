import Crypto
import Foundation
import Locking
import WireModels

/// The `Repr-Digest` of files that do not change while the server runs (a media asset's
/// fixture files: segments, posters, sideband tracks), each read and hashed once, on first use,
/// then kept. The first requests for one file wait for the one hashing it (it is read once);
/// other files are hashed beside it.
final class FileDigests: Sendable {
    /// One slot per file asked for, by path; nil until its digest is known.
    private let slots = Locked<[String: Locked<ReprDigest?>]>([:])

    /// The digest of the file at `path`: kept from an earlier call, or read and hashed now.
    /// Throws when the file cannot be read (and tries again on the next call).
    func digest(ofFile path: String) throws -> ReprDigest {
        let slot = slots.withLock { slots in
            if let slot = slots[path] { return slot }
            let slot = Locked<ReprDigest?>(nil)
            slots[path] = slot
            return slot
        }
        return try slot.withLock { known throws -> ReprDigest in
            if let known { return known }
            let digest = try FileDigests.compute(path: path)
            known = digest
            return digest
        }
    }

    /// The digest of the file at `path` as it is now, read in 64 KiB pieces (never whole in
    /// memory). The one place the mock hashes a file on disk.
    static func compute(path: String) throws -> ReprDigest {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let piece = try handle.read(upToCount: 64 * 1024), !piece.isEmpty {
            hasher.update(data: piece)
        }
        return ReprDigest(hasher)
    }
}
