import CurlTransfer
import Dispatch
import Foundation
import WireModels

/// Whether a segment's bytes are the ones the server meant, checked once as they arrive (before
/// the file is kept) and again at rest (`checkStorage(deep:)`).
///
/// - With a digest (the answer's `Repr-Digest`, recorded with the segment): SHA-256 of the whole
///   file must equal it.
/// - Without one: an MPEG-TS file (`.ts`; the SDK downloads clear and SAMPLE-AES media, which
///   keep the transport-stream structure) must be whole 188-byte packets, each starting with the
///   sync byte 0x47. Other files are checked for their length only (CurlTransfer does that).
enum SegmentCheck {
    /// Why `bytes` are not what `file` should hold, or nil when they are.
    static func problem(_ bytes: UnsafeRawBufferPointer, file: String, digest: ReprDigest?) -> String? {
        if let digest {
            let actual = ReprDigest(of: bytes)
            return actual == digest ? nil : "its SHA-256 is \(actual.hex.prefix(16))…, the server's Repr-Digest says \(digest.hex.prefix(16))…"
        }
        guard file.hasSuffix(".ts") else { return nil }
        return transportStreamProblem(bytes)
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
    static func verifier(file: String, digest: ReprDigest?) -> FileVerifier {
        { bytes in
            problem(bytes, file: file, digest: digest).map {
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
