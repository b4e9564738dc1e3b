import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a package's video rendition, clear, to one MPEG-TS file: the segments as they are,
/// or multiplexed with an audio rendition. Written to `{file}.part`, synced and renamed, so
/// the file appears only once whole.
enum ClearExport {
    static func write(reader: ClearMediaReader, video: ClearMediaReader.Track, audio: ClearMediaReader.Track?,
                      to file: URL) async throws(OfflineVideoError) {
        let partial = file.path + ".part"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("Cannot create \(partial)", errno) }
        var closed = false
        defer {
            if !closed {
                close(descriptor)
                unlink(partial)
            }
        }
        var mux = TransportStreamMux()
        // The next segments are read and decrypted while the current ones are written.
        typealias Pair = Result<(video: [UInt8], audio: [UInt8]?), OfflineVideoError>
        @Sendable func clear(_ sequence: Int) async -> Pair {
            do {
                let videoBytes = try await reader.segment(video, sequence)
                guard let audio, audio.names.indices.contains(sequence) else { return .success((videoBytes, nil)) }
                return .success((videoBytes, try await reader.segment(audio, sequence)))
            } catch {
                return .failure(error)
            }
        }
        var next: Task<Pair, Never>? = Task { await clear(0) }
        for sequence in video.names.indices {
            guard let current = next else { break }
            let (videoBytes, audioBytes) = try await current.value.get()
            next = sequence + 1 < video.names.count ? Task { await clear(sequence + 1) } : nil
            var bytes = videoBytes
            if let audioBytes {
                do { bytes = try mux.mux(video: videoBytes, audio: audioBytes) } catch {
                    throw OfflineVideoError(.downloadFailure, .other, "Segment \(sequence) cannot be multiplexed: \(error)")
                }
            }
            try writeAll(bytes, to: descriptor, path: partial)
        }
        guard fsync(descriptor) == 0 else { throw failure("Cannot sync \(partial)", errno) }
        close(descriptor)
        closed = true
        guard rename(partial, file.path) == 0 else {
            let code = errno
            unlink(partial)
            throw failure("Cannot move the export into place at \(file.path)", code)
        }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(OfflineVideoError) {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("Cannot write \(path)", errno)
            }
            written += count
        }
    }

    private static func failure(_ what: String, _ code: Int32) -> OfflineVideoError {
        OfflineVideoError(.downloadFailure, code == ENOSPC ? .diskFull : .storage, "\(what): \(String(cString: strerror(code)))")
    }
}
