import CMAF
import Foundation
import SystemFiles
#if canImport(Glibc)
import Glibc
#endif

/// Writes a package's video rendition, clear, to one file: for MPEG-TS, one MPEG-TS file of the
/// segments as they are, or multiplexed with an audio rendition (parts joined at an
/// `EXT-X-DISCONTINUITY` are re-timed to follow each other, so the file plays as one timeline;
/// without discontinuities the video alone is exactly its segments, concatenated); for CMAF,
/// one fragmented MP4 of the video track and the audio track (`FragmentedMP4Join`: one header
/// for both, then their clear fragments interleaved, segment by segment). Written to `{file}.part` and renamed
/// when whole: the file never appears half-written. Not synced to disk (as cp and ffmpeg do
/// not): an export is made again at will, a download is what must survive a power loss.
enum ClearExport {
    /// Consecutive segments one task reads and decrypts (video and audio), one after another:
    /// a hand-off between tasks per run of segments rather than per segment, which on a busy
    /// machine costs a wait for a core each time.
    static let run = 4
    /// Runs read and decrypted ahead of the one being written.
    static let runsAhead = 3

    static func write(reader: ClearMediaReader, video: ClearMediaReader.Track, audio: ClearMediaReader.Track?,
                      to file: URL) async throws(OfflineVideoError) {
        let partial = file.path + ".part"
        // The file's calls block: each runs on a dispatch thread (`BlockingWork`), not the pool.
        let (descriptor, openError) = await BlockingWork.run { () -> (Int32, Int32) in
            let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            return (descriptor, descriptor < 0 ? errno : 0)  // errno is the opening thread's
        }
        guard descriptor >= 0 else { throw failure("Cannot create \(partial)", openError) }
        var closed = false
        defer {
            if !closed {
                close(descriptor)
                unlink(partial)
            }
        }
        // The next runs of segments are read and decrypted while the current one is written.
        typealias Run = Result<[(video: [UInt8], audio: [UInt8]?)], OfflineVideoError>
        @Sendable func read(_ track: ClearMediaReader.Track, _ sequence: Int) async -> Result<[UInt8], OfflineVideoError> {
            do { return .success(try await reader.segment(track, sequence)) } catch { return .failure(error) }
        }
        @Sendable func clear(_ sequences: Range<Int>) async -> Run {
            var pairs: [(video: [UInt8], audio: [UInt8]?)] = []
            for sequence in sequences {
                let videoBytes = await read(video, sequence)
                var audioBytes: Result<[UInt8], OfflineVideoError>?
                if let audio, audio.names.indices.contains(sequence) { audioBytes = await read(audio, sequence) }
                do {
                    pairs.append((try videoBytes.get(), try audioBytes?.get()))
                } catch {
                    return .failure(error)
                }
            }
            return .success(pairs)
        }
        var mux = TransportStreamMux()
        // CMAF: one MP4 header for the tracks, written first; their fragments follow it.
        var join = try await ClearExport.join(reader: reader, video: video, audio: audio)
        if let header = join?.initSegment {
            try await BlockingWork.run { () throws(OfflineVideoError) in try writeAll(header, to: descriptor, path: partial) }
        }
        var ahead: [Task<Run, Never>] = []
        defer { for task in ahead { task.cancel() } }
        var requested = 0
        func fill() {
            while ahead.count < ClearExport.runsAhead, requested < video.names.count {
                let sequences = requested ..< min(requested + ClearExport.run, video.names.count)
                ahead.append(Task { await clear(sequences) })
                requested = sequences.upperBound
            }
        }
        var timeline = Timeline()
        var sequence = 0
        while sequence < video.names.count {
            fill()
            var pairs = try await ahead.removeFirst().value.get()
            var written: [[UInt8]] = []  // the run's segments, written in one hop off the pool (not copied)
            for index in pairs.indices {
                // Taken out of the run, not copied: each segment's bytes have one owner, so the
                // timestamps are shifted in place (a copy of every segment was a tenth of the work).
                var videoBytes: [UInt8] = []
                swap(&videoBytes, &pairs[index].video)
                if join != nil {
                    do {
                        written.append(try join!.segment(videoBytes, track: 0))
                        if let audioBytes = pairs[index].audio.take() { written.append(try join!.segment(audioBytes, track: 1)) }
                    } catch {
                        throw OfflineVideoError(.downloadFailure, .other, "Segment \(sequence) cannot be written to the MP4: \(error)")
                    }
                    sequence += 1
                    continue
                }
                let offset = timeline.offset(at: sequence, of: video, firstSegment: videoBytes)
                TransportStreamMux.shiftTimestamps(&videoBytes, by: offset)
                var bytes = videoBytes
                if var audioBytes = pairs[index].audio.take() {
                    TransportStreamMux.shiftTimestamps(&audioBytes, by: offset)
                    do { bytes = try mux.mux(video: videoBytes, audio: audioBytes) } catch {
                        throw OfflineVideoError(.downloadFailure, .other, "Segment \(sequence) cannot be multiplexed: \(error)")
                    }
                }
                written.append(bytes)
                sequence += 1
            }
            try await BlockingWork.run { [written] () throws(OfflineVideoError) in
                for bytes in written { try writeAll(bytes, to: descriptor, path: partial) }
            }
        }
        closed = true
        let target = file.path
        let renamed = await BlockingWork.run { () -> Int32 in
            close(descriptor)
            guard rename(partial, target) == 0 else {
                let code = errno
                unlink(partial)
                return code
            }
            return 0
        }
        if renamed != 0 { throw failure("Cannot move the export into place at \(file.path)", renamed) }
    }

    /// The MP4 join of a CMAF package's video and audio tracks (their clear init segments, the
    /// video's length), or nil for MPEG-TS. A track that changes init segment midway is refused.
    static func join(reader: ClearMediaReader, video: ClearMediaReader.Track,
                     audio: ClearMediaReader.Track?) async throws(OfflineVideoError) -> FragmentedMP4Join? {
        guard video.isFragmented else { return nil }
        let tracks = [video] + (audio.map { [$0] } ?? [])
        guard tracks.allSatisfy({ $0.inits.count == 1 }) else {
            throw OfflineVideoError(.unsupported, .other, "A CMAF track with more than one init segment (EXT-X-MAP) cannot be exported to one MP4")
        }
        var inits: [[UInt8]] = []
        for track in tracks { inits.append(try await reader.segment(track, PackageLayout.initSequence(0))) }
        let milliseconds = UInt64((video.durations.reduce(0, +) * 1000).rounded())
        do { return try FragmentedMP4Join(initSegments: inits, duration: milliseconds, timescale: 1000) } catch {
            throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "The package's init segments cannot be joined into one MP4: \(error)")
        }
    }

    /// Where each part of the video (from one discontinuity to the next) goes on the joined
    /// timeline: it starts where the segments before it end.
    struct Timeline {
        private var first: UInt64?
        private var elapsed: Double = 0
        private var offset: Int64 = 0

        /// The shift for segment `sequence` (computed from `firstSegment`, that segment's bytes,
        /// when a part starts there).
        mutating func offset(at sequence: Int, of track: ClearMediaReader.Track, firstSegment: [UInt8]) -> Int64 {
            defer { elapsed += track.durations[sequence] }
            if sequence == 0 {
                first = TransportStreamMux.firstTimestamp(firstSegment)
            } else if track.discontinuities.contains(sequence), let first, let start = TransportStreamMux.firstTimestamp(firstSegment) {
                offset = Int64(first) + Int64((elapsed * 90_000).rounded()) - Int64(start)
            }
            return offset
        }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(OfflineVideoError) {
        PoolCheck.note()
        let code = bytes.withUnsafeBytes { FileContents.write($0, to: descriptor) }
        if code != 0 { throw failure("Cannot write \(path)", code) }
    }

    private static func failure(_ what: String, _ code: Int32) -> OfflineVideoError {
        OfflineVideoError.storeFailure(systemError: code, during: .download, what)
    }
}
