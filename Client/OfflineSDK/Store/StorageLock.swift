import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The advisory lock (`flock`) on `owner.lock` of the storage folder, held for the life of
/// the manager that runs downloads: one such manager per storage folder, whatever the
/// process; readers (`StorageRole.reader`) take none. The kernel releases it when the
/// descriptor is closed or the process dies, so a killed process never leaves a stale lock
/// behind. (`store.lock`, held while the store is opened and migrated, is `SQLiteSetup`'s.)
///
/// `flock` locks belong to an open file description: a second lock on the same file conflicts
/// even inside one process, which is what keeps two managers of one process apart too.
final class StorageLock: Sendable {
    private let descriptor: Int32
    let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Takes the exclusive lock on `path` if nobody holds it, and writes this process's id
    /// into the file; otherwise refuses, naming the holder's process id when it wrote one.
    static func owner(at path: String, folder: String) throws(OfflineVideoError) -> StorageLock {
        let descriptor = try open(path)
        // A lock just let go of can look held for an instant: a child this process is starting
        // shares the descriptor until it executes its program (O_CLOEXEC closes it only then).
        var locked = flock(descriptor, LOCK_EX | LOCK_NB) == 0
        var attempts = 0
        while !locked, errno == EWOULDBLOCK, attempts < 20 {
            usleep(10_000)
            attempts += 1
            locked = flock(descriptor, LOCK_EX | LOCK_NB) == 0
        }
        if !locked {
            let code = errno
            let busy = code == EWOULDBLOCK
            let holder = busy ? processID(in: descriptor) : nil
            close(descriptor)
            guard busy else {
                throw OfflineVideoError.storeFailure(systemError: code, during: .open, "Cannot lock \(path)")
            }
            let who = holder.map { "process \($0)" } ?? "another process"
            throw OfflineVideoError(.invalidParameter, .storageInUse,
                                    "The storage folder \(folder) is in use by \(who), which runs its downloads. "
                                        + "Stop it first, or open this manager as a reader (status, lists and video objects only).")
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return StorageLock(descriptor: descriptor, path: path)
    }

    /// Whether a manager holds the lock at `path` now (an owner runs the folder's downloads):
    /// a shared lock is asked for and, when granted, let go at once.
    static func isHeld(at path: String) -> Bool {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }

    private static func open(_ path: String) throws(OfflineVideoError) -> Int32 {
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw OfflineVideoError.storeFailure(systemError: errno, during: .open, "Cannot open \(path)")
        }
        return descriptor
    }

    /// The process id written in the lock file by its holder, if any.
    private static func processID(in descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
