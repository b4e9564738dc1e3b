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

/// The names in a folder (`readdir(3)`), without `.` and `..`.
public enum DirectoryNames {
    /// The names of the entries in the folder at `path`: an empty set when there is no such
    /// folder, nil when it cannot be read (then each name must be asked about on its own).
    public static func of(_ path: String) -> Set<String>? {
        guard let directory = opendir(path) else { return errno == ENOENT || errno == ENOTDIR ? [] : nil }
        defer { closedir(directory) }
        var names: Set<String> = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else { break }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(cString: bytes.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.insert(name) }
        }
        return errno == 0 ? names : nil
    }
}

/// Writing whole files with plain `write(2)`, and syncing them.
public enum FileContents {
    /// Creates or empties the file at `path` and writes all of `bytes`, without syncing it.
    /// Returns 0, or the `errno` of the step that failed.
    public static func write(_ bytes: UnsafeRawBufferPointer, to path: String) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return errno }
        let failure = write(bytes, to: descriptor)
        guard failure == 0 else {
            close(descriptor)
            return failure
        }
        return close(descriptor) == 0 ? 0 : errno
    }

    /// Writes all of `bytes` to the open `descriptor` (again after a short write or `EINTR`).
    /// Returns 0, or the `errno` of the write that failed.
    public static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32 {
        var offset = 0
        while offset < bytes.count, let base = bytes.baseAddress {
            #if canImport(Glibc)
            let written = Glibc.write(descriptor, base + offset, bytes.count - offset)
            #else
            let written = Darwin.write(descriptor, base + offset, bytes.count - offset)
            #endif
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return 0
    }

    /// Flushes the file or folder at `path` to the disk (`fsync`). Returns 0, or the `errno` of
    /// the step that failed.
    public static func sync(_ path: String) -> Int32 {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        return fsync(descriptor) == 0 ? 0 : errno
    }
}
