import Glibc
import Locking
import SystemFiles

/// Files mapped into memory once and kept for the server's life, so file responses go out
/// from memory (see `HTTPServerConfiguration.mappedFileBytesLimit`). Thread-safe.
final class MappedFiles: Sendable {
    private struct Mapping: Sendable {
        /// The mapping's address as an integer (raw pointers are not Sendable); never unmapped.
        let address: UInt
        let size: UInt64
    }

    private let limit: UInt64
    /// What is mapped, the bytes that takes, and the files that did not fit (not tried again:
    /// once the budget is spent, each of their requests would open and stat them for nothing).
    private let state = Locked<(mappings: [String: Mapping], total: UInt64, refused: Set<String>)>(([:], 0, []))

    init(limit: Int) {
        self.limit = UInt64(max(0, limit))
    }

    /// The bytes `offset..<offset+length` of the file at `path`, mapping it on first use; nil when
    /// mapping is off, the budget is spent, the file cannot be mapped or the range is outside it.
    func bytes(path: String, offset: UInt64, length: UInt64) -> UnsafeMutableRawPointer? {
        guard limit > 0 else { return nil }
        let (known, refused) = state.withLock { ($0.mappings[path], $0.refused.contains(path)) }
        if let known { return pointer(known, offset: offset, length: length) }
        guard !refused else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard let status = FileStatus(descriptor: fd), status.isRegularFile, status.size > 0 else { return nil }
        let size = UInt64(status.size)
        let reserved = state.withLock { state -> Bool in
            guard state.total + size <= limit else {
                state.refused.insert(path)
                return false
            }
            state.total += size
            return true
        }
        guard reserved else { return nil }
        guard let address = mmap(nil, Int(size), PROT_READ, MAP_SHARED, fd, 0), address != MAP_FAILED else {
            state.withLock { $0.total -= size }
            return nil
        }
        let mapping = Mapping(address: UInt(bitPattern: address), size: size)
        let kept = state.withLock { state -> Mapping in
            if let existing = state.mappings[path] {  // mapped meanwhile by another thread
                state.total -= size
                return existing
            }
            state.mappings[path] = mapping
            return mapping
        }
        if kept.address != mapping.address { munmap(address, Int(size)) }
        return pointer(kept, offset: offset, length: length)
    }

    private func pointer(_ mapping: Mapping, offset: UInt64, length: UInt64) -> UnsafeMutableRawPointer? {
        guard offset <= mapping.size, length <= mapping.size - offset else { return nil }
        return UnsafeMutableRawPointer(bitPattern: mapping.address)?.advanced(by: Int(offset))
    }
}
