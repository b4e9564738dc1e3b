public import Foundation
import Logging
import MicroHTTP
import WireModels
import Locking

/// One clear segment of a track, in order. A CMAF track's init segment comes before the
/// segments it describes, with a sequence below 0 (-1 for the first) and duration 0, so the
/// bytes of a track's segments, one after another, are a playable file.
public struct ClearSegment: Sendable, Equatable {
    /// Its position in the track (0 first; an init segment below 0).
    public var sequence: Int
    /// Its `EXTINF` duration in seconds (0 for an init segment).
    public var duration: Double
    /// The clear MPEG-TS, fragmented MP4 (or WebVTT) bytes.
    public var bytes: [UInt8]

    /// Whether this is a CMAF init segment (`EXT-X-MAP`).
    public var isInitSegment: Bool { sequence < 0 }
}

/// How a playback session is opened (the reference's playback-controller options).
public struct PlaybackOptions: Sendable, Equatable {
    /// The downloaded subtitle language to show (the reference's
    /// `kBCOVOfflineVideoManagerPlaybackSubtitleLanguageKey`); nil leaves the playlist's defaults.
    public var subtitleLanguage: String?

    /// Creates options.
    ///
    /// - Parameter subtitleLanguage: The downloaded subtitle language to show; nil (the default) leaves the
    ///   playlist's defaults.
    public init(subtitleLanguage: String? = nil) {
        self.subtitleLanguage = subtitleLanguage
    }
}

/// A playback session of an offline video, opened with `OfflineVideoManager.openPlayback`
/// once its license checks passed: the video's media in the clear, three ways, all through
/// one decrypting reader.
///
/// ```swift
/// let playback = try await manager.openPlayback(token)
/// let url = try playback.serve()                 // http://127.0.0.1:PORT/SECRET/master.m3u8 for any player
/// for try await segment in playback.segments(of: playback.tracks[0]) { … }
/// try await playback.export(to: URL(fileURLWithPath: "movie.ts"), audioLanguage: "en")
/// await playback.close()
/// ```
///
/// A session keeps working once open, even if its license expires meanwhile (the next open is
/// refused). Close it when done: the loopback server stops and a download paused for it, or an
/// expired download waiting for auto-purge, goes on.
///
/// The app tells the session what its player does (`reportPlay(at:)`, `reportPause(at:)`,
/// `reportCompletion(at:)`): the events are kept offline and uploaded with the manager's
/// analytics, tagged with `sessionID`.
public final class OfflinePlayback: Sendable {
    /// The offline video played.
    public let token: OfflineVideoToken
    /// Its tracks: the video rendition first, then the downloaded audio and subtitles.
    public let tracks: [OfflineMediaSelection]
    /// Its license as it stood at open (first play included); nil for clear content.
    public let license: OfflineLicenseInfo?
    /// The subtitle language the loopback master makes the default (`PlaybackOptions.subtitleLanguage`).
    public let subtitleLanguage: String?
    /// This session's id, sent with its play events.
    public let sessionID: String
    /// The downloaded thumbnail track's previews, in order (``MediaSelections/thumbnails``);
    /// empty when none was downloaded. Each names a sprite file in the package: an app shows
    /// scrubbing previews from them without a network or the loopback server.
    public let thumbnails: [OfflineThumbnail]
    /// The package's format: MPEG-TS, or CMAF (fragmented MP4), which ``export(to:audioLanguage:)``
    /// writes as a fragmented MP4.
    public var format: HLSSourceFormat {
        reader.tracks.contains { $0.isFragmented } ? .cmaf : .transportStream
    }

    let reader: ClearMediaReader
    /// Sideband subtitle files by language (inside the package).
    let sideband: [(language: String, file: String)]
    let images: [String]
    private let state = Locked<(server: HTTPServer?, secret: String, closed: Bool)>((nil, "", false))
    private let onClose: @Sendable () async -> Void
    /// Records a play event (name, position) with the manager's analytics.
    private let onReport: @Sendable (OfflineAnalytics.EventName, Double) async throws(OfflineVideoError) -> Void

    init(token: OfflineVideoToken, sessionID: String, reader: ClearMediaReader, license: OfflineLicenseInfo?, sideband: [(language: String, file: String)],
         subtitleLanguage: String? = nil, images: [String], thumbnails: [OfflineThumbnail] = [],
         onReport: @escaping @Sendable (OfflineAnalytics.EventName, Double) async throws(OfflineVideoError) -> Void,
         onClose: @escaping @Sendable () async -> Void) {
        self.token = token
        self.sessionID = sessionID
        self.onReport = onReport
        self.reader = reader
        self.tracks = reader.tracks.map(\.selection)
        self.license = license
        self.subtitleLanguage = subtitleLanguage
        self.sideband = sideband
        self.images = images
        self.thumbnails = thumbnails
        self.onClose = onClose
        let secret = Hex.random(bytes: 16)
        state.withLock { $0.secret = secret }
    }

    deinit {
        // A session dropped without `close()`: its server stops on a dispatch thread (stopping
        // waits for requests in flight; the last reference may go on the cooperative pool).
        if let server = state.withLock({ $0.server }) {
            BlockingWork.executor.submit { server.shutdown(gracePeriod: .zero) }
        }
    }

    // MARK: Loopback HLS

    /// The master playlist's URL on the loopback server, starting the server on first call:
    /// 127.0.0.1 on a random port, under a random path secret, serving only this package's
    /// playlists (without keys), its clear segments, sideband subtitles and images.
    ///
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` with
    ///   ``OfflineVideoError/Reason/closed`` once the session is closed; code
    ///   ``OfflineVideoError/Code/downloadFailure`` when the loopback server cannot start.
    public func serve() throws(OfflineVideoError) -> URL {
        try state.withLock { state throws(OfflineVideoError) -> URL in
            if state.closed { throw OfflineVideoError(.invalidParameter, .closed, "The playback session of \(token) is closed") }
            if state.server == nil {
                var configuration = HTTPServerConfiguration()
                configuration.host = "127.0.0.1"
                configuration.port = 0
                configuration.threadCount = 2
                let logger = Logger(label: "OfflineSDK.playback") { _ in SwiftLogNoOpLogHandler() }
                let secret = state.secret
                let server = HTTPServer(configuration: configuration, logger: logger) { [reader, sideband, subtitleLanguage, images] request in
                    await LoopbackRoutes.answer(request, secret: secret, reader: reader, sideband: sideband,
                                                defaultSubtitle: subtitleLanguage, images: images)
                }
                do { try server.start() } catch {
                    throw OfflineVideoError(.downloadFailure, .other, "Cannot start the loopback server: \(error)")
                }
                state.server = server
            }
            guard let server = state.server,
                  let url = URL(string: "http://127.0.0.1:\(server.port)/\(state.secret)/\(PackageLayout.masterPlaylist)") else {
                throw OfflineVideoError(.downloadFailure, .other, "The loopback server has no address")
            }
            return url
        }
    }

    /// The thumbnail track's WebVTT on the loopback server (starting it, as ``serve()``), for a
    /// player's thumbnail plugin: a cue per preview, each a sprite URL beside it with its
    /// `#xywh=` tile; nil when no thumbnail track was downloaded.
    ///
    /// - Throws: ``OfflineVideoError``, as ``serve()``.
    public func thumbnailTrackURL() throws(OfflineVideoError) -> URL? {
        guard !thumbnails.isEmpty else { return nil }
        return try serve().deletingLastPathComponent().appendingPathComponent(ThumbnailTrackFile.trackFile)
    }

    // MARK: Segments

    /// The clear segments of `track`, in order; the sequence ends after the last one, or
    /// throws an ``OfflineVideoError``.
    ///
    /// - Parameter track: One of ``tracks``; another ends the sequence with code
    ///   ``OfflineVideoError/Code/invalidParameter``.
    public func segments(of track: OfflineMediaSelection) -> AsyncThrowingStream<ClearSegment, any Error> {
        let reader = self.reader
        let found = reader.tracks.first { $0.selection == track }
        return AsyncThrowingStream { continuation in
            let task = Task {
                guard let found else {
                    continuation.finish(throwing: OfflineVideoError(.invalidParameter, .invalidParameter, "The video has no track \(track)"))
                    return
                }
                do {
                    for sequence in found.names.indices {
                        try Task.checkCancellation()
                        if found.isFragmented, sequence == 0 || found.initOfSegment[sequence] != found.initOfSegment[sequence - 1] {
                            let initSequence = PackageLayout.initSequence(found.initOfSegment[sequence])
                            continuation.yield(ClearSegment(sequence: initSequence, duration: 0, bytes: try await reader.segment(found, initSequence)))
                        }
                        let bytes = try await reader.segment(found, sequence)
                        continuation.yield(ClearSegment(sequence: sequence, duration: found.durations[sequence], bytes: bytes))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: Export

    /// Writes the video rendition, clear, to one file at `file` (replaced if there): MPEG-TS for
    /// an MPEG-TS package, a fragmented MP4 for a CMAF one. With `audioLanguage`, that downloaded
    /// audio is multiplexed in (in an MP4, as its second track); without, the video track as it
    /// is (an MPEG-TS rendition with its own audio keeps it). The file appears only once whole.
    ///
    /// - Parameters:
    ///   - file: Where the MPEG-TS or MP4 file is written (replaced if there).
    ///   - audioLanguage: The downloaded audio language to multiplex in; nil (the default) keeps the video
    ///     track's segments as they are.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` for a package without
    ///   a video track or an `audioLanguage` not downloaded; code ``OfflineVideoError/Code/downloadFailure``
    ///   with a storage reason when the file cannot be written, or the error of a segment that cannot be read
    ///   or multiplexed.
    public func export(to file: URL, audioLanguage: String? = nil) async throws(OfflineVideoError) {
        guard let video = reader.tracks.first(where: { $0.selection.kind == .video }) else {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "The package has no video track")
        }
        var audio: ClearMediaReader.Track?
        if let audioLanguage {
            audio = reader.tracks.first { $0.selection.kind == .audio && RenditionChooser.language($0.selection.language ?? "", matches: audioLanguage) }
            guard audio != nil else {
                throw OfflineVideoError(.invalidParameter, .invalidParameter, "No \(audioLanguage) audio was downloaded with this video")
            }
        }
        try await ClearExport.write(reader: reader, video: video, audio: audio, to: file)
    }

    // MARK: Analytics

    /// Records that the player started, or resumed, at `position` seconds (`play_started`). Throws
    /// ``OfflineVideoError/Code/invalidParameter`` for a negative or non-finite position, a storage error when
    /// the event cannot be stored.
    ///
    /// - Parameter position: Where the player started, in seconds from the start.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` for a negative or
    ///   non-finite position; code ``OfflineVideoError/Code/storageFailure`` with a storage reason when the
    ///   event cannot be stored.
    public func reportPlay(at position: TimeInterval) async throws(OfflineVideoError) {
        try await report(.playStarted, at: position)
    }

    /// Records that the player paused at `position` seconds (`play_paused`).
    ///
    /// - Parameter position: Where the player paused, in seconds from the start.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` for a negative or
    ///   non-finite position; code ``OfflineVideoError/Code/storageFailure`` with a storage reason when the
    ///   event cannot be stored.
    public func reportPause(at position: TimeInterval) async throws(OfflineVideoError) {
        try await report(.playPaused, at: position)
    }

    /// Records that the video played to its end (`play_completed`), at `position` seconds or,
    /// when nil, at the video's duration.
    ///
    /// - Parameter position: Where the video ended, in seconds; nil (the default) takes the video's duration.
    /// - Throws: ``OfflineVideoError``: code ``OfflineVideoError/Code/invalidParameter`` for a negative or
    ///   non-finite position; code ``OfflineVideoError/Code/storageFailure`` with a storage reason when the
    ///   event cannot be stored.
    public func reportCompletion(at position: TimeInterval? = nil) async throws(OfflineVideoError) {
        let duration = reader.tracks.first { $0.selection.kind == .video }?.durations.reduce(0, +) ?? 0
        try await report(.playCompleted, at: position ?? duration)
    }

    private func report(_ name: OfflineAnalytics.EventName, at position: TimeInterval) async throws(OfflineVideoError) {
        guard position.isFinite, position >= 0 else {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "A playback position is a number of seconds, at least 0, not \(position)")
        }
        try await onReport(name, position)
    }

    // MARK: Closing

    /// Stops the loopback server and ends the session. Safe to call twice.
    public func close() async {
        let (server, wasClosed) = state.withLock { state -> (HTTPServer?, Bool) in
            defer { state.closed = true; state.server = nil }
            return (state.server, state.closed)
        }
        guard !wasClosed else { return }
        await server?.shutdown(gracePeriod: .milliseconds(200))
        await onClose()
    }
}
