import CurlTransfer
import Dispatch
import Foundation
import WireModels

/// Whether a segment's bytes are the ones the server meant, checked once as they arrive (before
/// the file is kept) and again at rest (`checkStorage(deep:)`).
///
/// - With a digest (the answer's `Repr-Digest`, recorded with the segment; for a byte-range
///   piece, its answer's `Content-Digest`): SHA-256 of the whole file must equal it. A piece
///   resumed after a cut has the digest of the rest only: its bytes from there must match it, and
///   the whole file must also pass the structure check below.
/// - Without one (a server that sends none, or a byte range whose server sends no
///   `Content-Digest`): an MPEG-TS file (`.ts`; the SDK downloads clear and SAMPLE-AES media, which keep
///   the transport-stream structure) must be whole 188-byte packets, each starting with the sync
///   byte 0x47; a fragmented MP4 file (`.m4s`, `.mp4`: a CMAF segment or init segment) must be
///   whole boxes, end to end. Other files are checked for their length only (CurlTransfer does that).
enum SegmentCheck {
    /// A digest of a file's bytes from `from` on (0: the whole file).
    struct Digest: Sendable {
        var digest: ReprDigest
        var from: Int64
    }

    /// Why `bytes` are not what `file` should hold, or nil when they are.
    static func problem(_ bytes: UnsafeRawBufferPointer, file: String, digest: ReprDigest?) -> String? {
        problem(bytes, file: file, check: digest.map { Digest(digest: $0, from: 0) })
    }

    /// Why `bytes` are not what `file` should hold, or nil when they are.
    static func problem(_ bytes: UnsafeRawBufferPointer, file: String, check: Digest?) -> String? {
        if let check, check.from >= 0, check.from <= Int64(bytes.count) {
            let actual = ReprDigest(of: UnsafeRawBufferPointer(rebasing: bytes[Int(check.from)...]))
            guard actual == check.digest else {
                let what = check.from == 0 ? "its SHA-256" : "the SHA-256 of its bytes from \(check.from) on"
                return "\(what) is \(actual.hex.prefix(16))…, the server's digest says \(check.digest.hex.prefix(16))…"
            }
            if check.from == 0 { return nil }
        }
        if file.hasSuffix(".ts") { return transportStreamProblem(bytes) }
        if file.hasSuffix(".m4s") || file.hasSuffix(".mp4") { return boxesProblem(bytes) }
        return nil
    }

    /// Why `bytes` are not ISO base media boxes laid end to end (each a 32-bit size of at least
    /// 8, or 1 and a 64-bit size, and a type of four printable characters), or nil. A body cut,
    /// or shifted by a wrong range, fails it: its last box runs past the end or its next size
    /// lands in the middle of data.
    static func boxesProblem(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard !bytes.isEmpty else { return "an empty file is no MP4 segment" }
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 8 else { return "\(bytes.count - offset) bytes at \(offset) are too few for a box header" }
            var size = UInt64(bytes[offset]) << 24 | UInt64(bytes[offset + 1]) << 16 | UInt64(bytes[offset + 2]) << 8 | UInt64(bytes[offset + 3])
            let type = bytes[(offset + 4) ..< (offset + 8)]
            guard type.allSatisfy({ (0x20 ... 0x7E).contains($0) }) else { return "the box at byte \(offset) has no four-character type" }
            if size == 1 {
                guard bytes.count - offset >= 16 else { return "the box at byte \(offset) is cut in its 64-bit size" }
                size = (8 ..< 16).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[offset + $1]) }
                guard size >= 16 else { return "the box at byte \(offset) has a 64-bit size below its header's" }
            } else if size == 0 {
                size = UInt64(bytes.count - offset)  // to the end of the file
            } else if size < 8 {
                return "the box at byte \(offset) has size \(size), below its header's"
            }
            guard size <= UInt64(bytes.count - offset) else {
                return "the box at byte \(offset) is \(size) bytes, past the end of the file (\(bytes.count) bytes)"
            }
            offset += Int(size)
        }
        return nil
    }

    /// Why `bytes` are not a sequence of whole MPEG-TS packets, or nil.
    static func transportStreamProblem(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count % 188 == 0 else { return "\(bytes.count) bytes is not a whole number of 188-byte transport-stream packets" }
        var offset = 0
        while offset < bytes.count {
            if bytes[offset] != 0x47 { return "the transport-stream packet at byte \(offset) does not start with the sync byte 0x47" }
            offset += 188
        }
        return nil
    }

    /// The check CurlTransfer runs on a finished body before it is kept: a mismatch is a
    /// `.contentMismatch` (the body is deleted and fetched again).
    static func verifier(file: String, digest: Digest?) -> FileVerifier {
        { bytes in
            problem(bytes, file: file, check: digest).map {
                TransferError(.contentMismatch, "\(file) arrived damaged: \($0)")
            }
        }
    }

    /// The files among `files` (path inside `folder`, stored digest hex) whose bytes are not
    /// what they should be, or that cannot be read. Reads every file: runs on a queue of its own,
    /// never on a thread of Swift's cooperative pool.
    static func damagedFiles(in folder: String, _ files: [(file: String, digest: String?)]) async -> [String] {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                var damaged: [String] = []
                for (file, digest) in files {
                    guard let data = FileManager.default.contents(atPath: folder + "/" + file) else {
                        damaged.append(file)
                        continue
                    }
                    let wrong = data.withUnsafeBytes { problem($0, file: file, digest: digest.flatMap(ReprDigest.init(hex:))) }
                    if wrong != nil { damaged.append(file) }
                }
                continuation.resume(returning: damaged)
            }
        }
    }
}
