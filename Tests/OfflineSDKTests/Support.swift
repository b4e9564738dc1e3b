import CurlTransfer
import Foundation
import Logging
import MockBackend
@testable import OfflineSDK
import Locking
import TestKit
import Testing
import WireModels

enum Catalog {
    static let account = "6415818918001"
    static let searchKey = "BCpkADawqM1northwindSEARCHkey0001"
    static let playKey = "BCpkADawqM1northwindPLAYkey000002"
    static let contoso = "5434391461001"
    static let contosoKey = "BCpkADawqM1contosoPLAYkey00000002"
    /// Clear, 12 s, 3 renditions, audio en/fr/es, subtitles en/fr/de in the manifest and sideband.
    static let clearVideo = "6415818918101"
    static let fairPlayVideo = "6415818918103"
    static let streamOnlyVideo = "6415818918105"
    /// Clear, 2 hours (600 passes of the fixture).
    static let marathonVideo = "6415818918106"
    /// 10 minutes: 300 segments per rendition.
    static let tenMinuteVideo = "6415818918107"
    static let englishOnlyVideo = "6415818918109"
    static let contosoAESVideo = "5434391461102"
}

/// Runs `body` with a mock backend on port 0 and a fresh data directory, then stops it.
func withBackend(_ configure: (inout BackendConfiguration) -> Void = { _ in },
                 _ body: (MockBackendServer) async throws -> Void) async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    var configuration = BackendConfiguration(dataDirectory: directory.url)
    configuration.port = 0
    configure(&configuration)
    var logger = Logger(label: "test")
    logger.logLevel = .warning
    let server = try MockBackendServer.start(configuration: configuration, logger: logger)
    do {
        try await body(server)
    } catch {
        await server.shutdown(gracePeriod: .seconds(1))
        throw error
    }
    await server.shutdown(gracePeriod: .seconds(1))
}

/// Runs `body` with a fresh tmpfs of `size` (e.g. "8m") mounted on a temporary folder, and
/// unmounts it afterwards. Mounting needs root (CI runs make test as root).
func withTmpfs<T>(size: String, _ body: (URL) async throws -> T) async throws -> T {
    let mountPoint = try TemporaryDirectory()
    defer { mountPoint.remove() }
    let mount = try await Run.process("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint.url.path])
    try #require(mount.exitCode == 0, "mounting a small tmpfs needs root (CI runs make test as root): \(mount.stderrText)")
    defer { _ = try? RunningProcess("/bin/umount", ["-l", mountPoint.url.path]).waitBlocking() }
    return try await body(mountPoint.url)
}

/// Every file under `folder` with its size in bytes, one per line (what filled a small disk).
func filesAndSizes(under folder: URL) -> String {
    let paths = FileManager.default.subpaths(atPath: folder.path) ?? []
    return paths.sorted().compactMap { path in
        let size = (try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(path).path)[.size] as? Int) ?? nil
        return size.map { "\($0)\t\(path)" }
    }.joined(separator: "\n")
}

/// A manager configuration on a fresh storage folder (removed by the caller via `storage.remove()`),
/// with no free-space reserve and quick retries.
func testConfiguration(_ storage: TemporaryDirectory) -> OfflineVideoManagerConfiguration {
    var configuration = OfflineVideoManagerConfiguration(storageDirectory: storage.url)
    configuration.minimumFreeSpace = 0
    configuration.retryInitialDelay = .milliseconds(20)
    return configuration
}

/// Collects every event of a manager, and lets a test wait for one.
final class EventRecorder: Sendable {
    final class Log: Sendable {
        let events = Locked<[OfflineVideoEvent]>([])
    }
    let log = Log()
    private let task: Task<Void, Never>

    init(_ manager: OfflineVideoManager) {
        let stream = manager.events()
        let log = self.log
        task = Task { for await event in stream { log.events.withLock { $0.append(event) } } }
    }

    deinit { task.cancel() }

    var all: [OfflineVideoEvent] { log.events.withLock { $0 } }

    /// Waits (up to `timeout`) until an event matches; returns it.
    @discardableResult
    func wait(timeout: Duration = .seconds(60), for match: (OfflineVideoEvent) -> Bool) async throws -> OfflineVideoEvent {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = all.first(where: match) { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("timed out waiting for an event; got \(all.count) events, last: \(String(describing: all.last))")
        throw CancellationError()
    }

    /// Waits for `.downloadFinished` of `token` and returns its error.
    func finished(_ token: OfflineVideoToken, timeout: Duration = .seconds(120)) async throws -> OfflineVideoError? {
        let event = try await wait(timeout: timeout) { if case .downloadFinished(token, _) = $0 { true } else { false } }
        if case .downloadFinished(_, let error) = event { return error }
        return nil
    }
}

extension OfflineVideoManager {
    /// The status of `token`, which must exist.
    func status(_ token: OfflineVideoToken) async throws -> OfflineVideoStatus {
        try #require(try offlineVideoStatus(forToken: token))
    }
}

extension OfflineStore {
    /// `body` run on this store off Swift's cooperative pool, as the SDK makes its own store calls
    /// (`BlockingWork`). A test body runs on the pool: a store call made there directly blocks one
    /// of its threads, and stops an armed run (docs/testing.md: The pool check). Expectations go
    /// outside `body`, on what it returns (it runs on a dispatch thread, outside the test's task).
    @discardableResult
    func offPool<T: Sendable>(_ body: @escaping @Sendable (OfflineStore) throws -> T) async throws -> T {
        try await BlockingWork.run { try body(self) }
    }
}

/// A manager on fresh storage, its event recorder and a Playback API service for Northwind.
struct Harness {
    let storage: TemporaryDirectory
    let manager: OfflineVideoManager
    let events: EventRecorder
    let service: PlaybackService

    /// Finds `id` and requests its download with the given selections and parameters.
    func request(_ id: String, _ selections: MediaSelections? = nil, _ parameters: DownloadParameters? = nil) async throws -> OfflineVideoToken {
        try await manager.requestVideoDownload(try await service.findVideo(id: id), mediaSelections: selections, parameters: parameters)
    }
}

/// Runs `body` with a harness against `server`; closes the manager and removes the storage after.
func withHarness(_ server: MockBackendServer, _ configure: (inout OfflineVideoManagerConfiguration) -> Void = { _ in },
                 _ body: (Harness) async throws -> Void) async throws {
    let storage = try TemporaryDirectory()
    defer { storage.remove() }
    var configuration = testConfiguration(storage)
    configure(&configuration)
    let manager = try await OfflineVideoManager(configuration: configuration)
    let harness = Harness(storage: storage, manager: manager, events: EventRecorder(manager),
                          service: configuration.trustedCAFile.map {
                              PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey, trustedCAFile: $0)
                          } ?? PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey))
    do {
        try await body(harness)
    } catch {
        await manager.close()
        throw error
    }
    await manager.close()
}

/// The outcome of an SDK call, for tests that run several at once.
func attempt<T: Sendable>(_ body: () async throws(OfflineVideoError) -> T) async -> Result<T, OfflineVideoError> {
    do { return .success(try await body()) } catch { return .failure(error) }
}

/// The download plays: a session opens, and its first and last video segments read clear.
func expectPlays(_ manager: OfflineVideoManager, _ token: OfflineVideoToken,
                 sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let playback = try await manager.openPlayback(token)
    defer { Task { await playback.close() } }
    let url = try playback.serve()
    let video = try #require(playback.reader.tracks.first, sourceLocation: sourceLocation)
    for name in [video.names[0], video.names[video.names.count - 1]] {
        let response = try await HTTPClient().send(HTTPClientRequest(url: url.deletingLastPathComponent().absoluteString + video.folder + "/" + name))
        #expect(response.status == 200 && !response.body.isEmpty, "\(name)", sourceLocation: sourceLocation)
    }
}

/// The package formats a download can take, for suites that run on each (parameterised, never
/// copied): HLS of MPEG-TS, CMAF HLS of one file per segment, and CMAF HLS of byte ranges of one
/// file per track (the account's `cmaf_addressing: "byte_ranges"`).
enum PackageFormat: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case transportStream = "MPEG-TS"
    case cmafSegments = "CMAF segments"
    case cmafByteRanges = "CMAF byte ranges"

    var testDescription: String { rawValue }

    var isCMAF: Bool { self != .transportStream }

    /// The manager's settings that take this format.
    func configure(_ configuration: inout OfflineVideoManagerConfiguration) {
        configuration.sourcePreference = .prefer(isCMAF ? .cmaf : .transportStream)
    }

    /// Sets the test account's CMAF addressing on `server` for this format.
    func prepare(_ server: MockBackendServer) async throws {
        let addressing = self == .cmafByteRanges ? "byte_ranges" : "segments"
        let response = try await HTTPClient().send(HTTPClientRequest(
            url: server.baseURL + "/_admin/v1/accounts/\(Catalog.account)", method: .init("PATCH"),
            headers: [("Authorization", "Bearer \(server.app.adminToken)"), ("Content-Type", "application/json")],
            body: Array(#"{"cmaf_addressing":"\#(addressing)"}"#.utf8)))
        try #require(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
    }

    /// The `offline` command's arguments that take this format.
    var commandLineArguments: [String] { ["--source-format", isCMAF ? "cmaf" : "ts"] }

    /// The HLS source of `video` a download in this format takes.
    func hlsSource(of video: Video) throws -> VideoSource {
        try OfflineSourceRule(preference: .prefer(isCMAF ? .cmaf : .transportStream)).choose(video.sources, videoID: video.id)
    }

    /// A backend (set up by `backend`) and a harness downloading in this format.
    func withHarness(backend: (inout BackendConfiguration) -> Void = { _ in },
                     _ configure: @escaping (MockBackendServer, inout OfflineVideoManagerConfiguration) -> Void = { _, _ in },
                     _ body: (MockBackendServer, Harness) async throws -> Void) async throws {
        try await withBackend(backend) { server in
            try await prepare(server)
            try await OfflineSDKTests.withHarness(server, { configuration in
                self.configure(&configuration)
                configure(server, &configuration)
            }) { h in try await body(server, h) }
        }
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs anywhere in the bytes.
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0 ... count - needle.count).contains { start in self[start ..< start + needle.count].elementsEqual(needle) }
    }
}
