#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `stat(2)` or `fstat(2)` says about a file: its size, when it changed, whether it is a
/// regular file, its permissions and owner.
///
/// The one place the project reads `struct stat`. Its declaration reaches Swift through
/// whichever C module happens to include the header first (Glibc, CoreFoundation, CDispatch),
/// so with `MemberImportVisibility` a file using it directly needed an import that changed
/// from build to build; this module imports only the C library.
public struct FileStatus: Sendable, Equatable {
    /// The size in bytes.
    public var size: Int64
    /// The last modification, whole seconds since 1970.
    public var modifiedSeconds: Int
    /// Whether it is a regular file (not a folder, link target aside, device or socket).
    public var isRegularFile: Bool
    /// The permission bits (`st_mode & 0o7777`).
    public var permissions: UInt32
    /// The owner's user id.
    public var owner: UInt32

    /// The status of the file at `path` (links followed); nil when it cannot be read.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The status of an open file; nil when it cannot be read.
    public init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    private init(_ info: stat) {
        size = Int64(info.st_size)
        #if canImport(Darwin)
        modifiedSeconds = Int(info.st_mtimespec.tv_sec)
        #else
        modifiedSeconds = Int(info.st_mtim.tv_sec)
        #endif
        isRegularFile = (info.st_mode & S_IFMT) == S_IFREG
        permissions = UInt32(info.st_mode & 0o7777)
        owner = UInt32(info.st_uid)
    }
}

/// The space a file system has for this user (`statvfs(2)`).
public enum FileSystemSpace {
    /// Bytes an unprivileged user may still write on the file system holding `path`; nil when
    /// it cannot be read.
    public static func available(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
