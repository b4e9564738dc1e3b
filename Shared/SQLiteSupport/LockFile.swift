import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Why a lock file could not be taken: the file could not be opened or locked.
package struct LockFileError: Error, CustomStringConvertible {
    /// The lock file.
    package let path: String
    /// "open" or "lock".
    package let action: String
    /// The `errno` of the failed call.
    package let systemError: Int32

    /// An error for the lock file at `path`.
    package init(path: String, action: String, systemError: Int32) {
        self.path = path
        self.action = action
        self.systemError = systemError
    }

    /// "Cannot lock PATH: REASON".
    package var description: String { "Cannot \(action) \(path): \(String(cString: strerror(systemError)))" }
}

/// An exclusive advisory lock on a file (`flock`), held until the value is released: the
/// kernel lets go when the descriptor is closed or the process dies, so a killed process
/// never leaves a stale lock behind. A second lock on the same file conflicts even inside
/// one process (`flock` locks belong to an open file description).
final class LockFile: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Takes the lock on `path` (made if missing), waiting for another holder to let go.
    /// For short critical sections only.
    static func waiting(at path: String) throws(LockFileError) -> LockFile {
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw LockFileError(path: path, action: "open", systemError: errno) }
        while flock(descriptor, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let error = LockFileError(path: path, action: "lock", systemError: errno)
            close(descriptor)
            throw error
        }
        return LockFile(descriptor: descriptor)
    }
}
