#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif
import SystemFiles

/// `write(2)`, reachable under a name that `PartFile.write` does not shadow.
private func writeToDescriptor(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}

/// The `.part` file a download writes into, and the steps that turn it into the finished
/// file: write everything, `fsync`, `rename` over the destination, `fsync` the folder.
///
/// Used on the engine thread, then (once complete) handed to the commit queue. Owns its
/// descriptor and closes it in `deinit`.
final class PartFile {
    let path: String
    private var descriptor: Int32
    /// Bytes in the file: what was there when opened plus what was written since.
    private(set) var size: Int64

    /// The size of an existing `.part` file at `path`, 0 when there is none.
    static func existingSize(at path: String) -> Int64 {
        FileStatus(path: path)?.size ?? 0
    }

    /// Creates the folders and an empty `.part` file at `path` unless one is there, on the
    /// caller's thread: making a file can take a file system a while, and the engine thread
    /// must not stall every transfer for it. True when this call created the file.
    static func prepare(at path: String) throws(TransferError) -> Bool {
        try createParentDirectories(of: path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd >= 0 {
            close(fd)
            return true
        }
        guard errno == EEXIST else { throw error("cannot create \(path)") }
        return false
    }

    /// Opens (creating the file as needed; its folder is `prepare`'s) for appending; `truncate`
    /// empties it first.
    init(path: String, truncate: Bool) throws(TransferError) {
        var flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC
        if truncate { flags |= O_TRUNC }
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw PartFile.error("cannot open \(path)") }
        guard let status = FileStatus(descriptor: fd) else {
            let error = PartFile.error("cannot stat \(path)")
            close(fd)
            throw error
        }
        self.path = path
        descriptor = fd
        size = status.size
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Writes all of `bytes` at the end of the file.
    func write(_ bytes: UnsafeRawBufferPointer) throws(TransferError) {
        guard var base = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = writeToDescriptor(descriptor, base, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                throw PartFile.error("cannot write \(path)")
            }
            remaining -= written
            base += written
            size += Int64(written)
        }
    }

    /// Syncs the data, closes the file, renames it to `destination` and syncs the folder,
    /// so a crash leaves either the old state or the complete file under its final name.
    func commit(to destination: String) throws(TransferError) {
        guard fsync(descriptor) == 0 else { throw PartFile.error("cannot sync \(path)") }
        let closed = close(descriptor)
        descriptor = -1
        guard closed == 0 else { throw PartFile.error("cannot close \(path)") }
        guard rename(path, destination) == 0 else { throw PartFile.error("cannot rename \(path) to \(destination)") }
        PartFile.syncDirectory(of: destination)
    }

    /// The whole file at `path`, read with `pread` from a descriptor of its own.
    static func contents(at path: String) throws(TransferError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw error("cannot open \(path)") }
        defer { close(fd) }
        guard let status = FileStatus(descriptor: fd) else { throw error("cannot stat \(path)") }
        var bytes = [UInt8](repeating: 0, count: Int(status.size))
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress! + offset, buffer.count - offset, off_t(offset))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw error("cannot read \(path)") }
            offset += count
        }
        return bytes
    }

    /// Removes a `.part` file that is known to be useless (the server refused to resume it).
    static func remove(at path: String) {
        unlink(path)
    }

    /// The byte count the file really has on disk (`fstat`), or `size` if that fails.
    var sizeOnDisk: Int64 {
        guard descriptor >= 0, let status = FileStatus(descriptor: descriptor), status.isRegularFile else { return size }
        return status.size
    }

    // MARK: Helpers

    /// `mkdir -p` of the folder holding `path`.
    static func createParentDirectories(of path: String) throws(TransferError) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let folder = String(path[..<slash])
        if FileStatus(path: folder) != nil { return }
        try createParentDirectories(of: folder)
        if mkdir(folder, 0o755) != 0 && errno != EEXIST {
            throw error("cannot create folder \(folder)")
        }
    }

    /// Best effort: a failed folder sync does not undo a rename that already happened.
    private static func syncDirectory(of path: String) {
        let folder = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// An error for the current `errno`: `.diskFull` for ENOSPC and EDQUOT, else `.writeFailed`.
    static func error(_ what: String) -> TransferError {
        let number = errno
        let reason = String(cString: strerror(number))
        let code: TransferError.Code = (number == ENOSPC || number == EDQUOT) ? .diskFull : .writeFailed
        return TransferError(code, "\(what): \(reason)", systemError: number)
    }
}
