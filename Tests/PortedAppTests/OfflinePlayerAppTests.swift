import Foundation
import Locking
import MockBackendTesting
import OfflineSDK
import TestKit
import Testing

/// Brightcove's `BCOVFPSBrightcoveAuthProxy`: the default key exchange, set on the shared manager
/// after initializing, as the guide does.
struct BrightcoveAuthProxy: FairPlayKeyExchange {}

/// Drives the ported app against a live mock backend through every flow of the sample: preload
/// then request with one parameter set, pause, resume, cancel, retry by delete-and-request, play,
/// the expired-license alert, renew, delete. One test: the app uses the process-wide shared manager.
@Suite("The ported OfflinePlayer app against the mock")
struct OfflinePlayerAppTests {
    /// Reads the app's notifications until one matches.
    static func wait(_ app: DownloadManager, for match: (Notifications.Name) -> Bool) async -> Notifications.Name? {
        for await name in app.notifications.stream where match(name) { return name }
        return nil
    }

    /// The error code the next finished download ended with (nil: completed), and its token.
    static func nextFinish(_ app: DownloadManager) async throws -> (token: OfflineVideoToken, code: Int?) {
        let finished = await wait(app) { if case .downloadFinished = $0 { true } else { false } }
        guard case .downloadFinished(let token, let code) = try #require(finished) else { throw CancellationError() }
        return (token, code)
    }

    static func token(of video: PlaybackVideo, _ manager: OfflineVideoManager) async throws -> OfflineVideoToken {
        for token in try await manager.offlineVideoTokens where await manager.videoObject(fromOfflineVideoToken: token)?.id == video.id {
            return token
        }
        throw CancellationError()
    }

    @Test("every flow of the sample, ported with renames, await and parameter structs, runs end to end")
    func sampleFlows() async throws {
        // The shared manager is process-wide: one test at a time uses it (SharedManagerTests does too).
        try await ProcessWideLock.sharedOfflineVideoManager.run {
            if let leftOver = OfflineVideoManager.shared { await leftOver.close() }
            try await Self.flows()
        }
    }

    static func flows() async throws {
        try await withTestBackend { backend in
            let storage = FileManager.default.temporaryDirectory.appendingPathComponent("ported-app-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: storage) }
            let app = DownloadManager(settings: Settings(isPurchaseLicenseType: false, rentalDuration: 30 * 24 * 60 * 60,
                                                         playDuration: 24 * 60 * 60))
            var configuration = OfflineVideoManagerConfiguration(storageDirectory: storage)
            configuration.clock = { backend.clock.now() }
            configuration.deviceSecretFile = storage.appendingPathComponent("secret/device-secret")

            // AppDelegate: initialize, then set the auth proxy on the shared manager.
            try await OfflineVideoManager.initializeOfflineVideoManager(delegate: app, options: OfflineVideoManagerOptions(allowsCellularDownload: true),
                                                                       configuration: configuration)
            let sharedManager = try #require(OfflineVideoManager.shared)
            sharedManager.authProxy = BrightcoveAuthProxy()
            do {
                try await flows(app, sharedManager, backend)
                await sharedManager.close()
            } catch {
                await sharedManager.close()
                throw error
            }
        }
    }

    static func flows(_ app: DownloadManager, _ sharedManager: OfflineVideoManager, _ backend: TestBackend) async throws {
        let playbackService = PlaybackService(baseURL: backend.baseURL, accountID: TestBackend.Fixtures.account,
                                              policyKey: TestBackend.Fixtures.playPolicyKey)

        // 1. A FairPlay rental: preload with the parameter set, then download with the same set.
        let rental = try await playbackService.findVideo(id: TestBackend.Fixtures.rentalVideo)
        #expect(rental.canBeDownloaded)
        let bitrates = try await sharedManager.variantBitrates(for: rental)
        app.settings.withLock { $0.bitrate = bitrates[1] }
        await app.doDownload(forVideo: rental, displayName: "Rental (offline)", mediaSelections: MediaSelections(audioLanguages: ["en"]))
        let rentalFinish = try await Self.nextFinish(app)
        #expect(rentalFinish.code == nil, "alerts: \(app.alerts.titles)")
        let rentalToken = try await Self.token(of: rental, sharedManager)
        #expect(rentalFinish.token == rentalToken)
        let status = try #require(try await sharedManager.offlineVideoStatus(forToken: rentalToken))
        #expect(status.downloadState == .completed && status.displayName == "Rental (offline)")
        #expect(app.alerts.titles.isEmpty)

        // 2. Play it.
        let playback = try #require(await app.play(rentalToken))
        #expect(try playback.serve().absoluteString.hasPrefix("http://127.0.0.1:"))
        await playback.close()

        // 3. The play window (24 h from the first play) passes: the expired-license alert.
        backend.clock.advance(by: 25 * 60 * 60)
        #expect(await app.play(rentalToken) == nil)
        #expect(app.alerts.titles.last == "License Expired")
        #expect(app.alerts.shown.withLock { $0.last?.message.isEmpty } == false)

        // 4. Renew it as a purchase with a fresh video object; it plays again.
        app.settings.withLock { $0.isPurchaseLicenseType = true }
        #expect(await app.renewLicense(rentalToken, freshVideo: try await playbackService.findVideo(id: TestBackend.Fixtures.rentalVideo)))
        #expect(try await sharedManager.fairPlayLicenseExpiration(rentalToken) == .distantFuture)
        let again = try #require(await app.play(rentalToken))
        await again.close()

        // 5. A clear video: pause and resume. Its segments are held (the longest latency a rule
        // takes, ten minutes) until the rule goes, so it is still running when the pause comes
        // however late a busy machine gets to it; the paused transfers are dropped, and the
        // resumed ones find no rule.
        try backend.faults.add(FaultRule(id: "slow", route: .segment, video: TestBackend.Fixtures.clearVideo, latencyMs: 600_000))
        let clear = try await playbackService.findVideo(id: TestBackend.Fixtures.clearVideo)
        await app.doDownload(forVideo: clear)
        let clearToken = try await Self.token(of: clear, sharedManager)
        await app.pause(clearToken)
        #expect(try await sharedManager.offlineVideoStatus(forToken: clearToken)?.downloadState == .suspended)
        backend.faults.removeAll()
        await app.resume(clearToken)
        let clearFinish = try await Self.nextFinish(app)
        #expect(clearFinish.token == clearToken && clearFinish.code == nil)

        // 6. Cancel, then retry the sample's way: delete and download again.
        let purchase = try await playbackService.findVideo(id: TestBackend.Fixtures.fairPlayVideo)
        try backend.faults.add(FaultRule(id: "slow", route: .segment, video: TestBackend.Fixtures.fairPlayVideo, latencyMs: 600_000))
        await app.doDownload(forVideo: purchase)
        let purchaseToken = try await Self.token(of: purchase, sharedManager)
        await app.cancel(purchaseToken)
        let cancelled = try await Self.nextFinish(app)
        #expect(cancelled.token == purchaseToken && cancelled.code == 69302, "cancelled: kBCOVOfflineVideoManagerErrorCodeDownloadFailure")
        backend.faults.removeAll()
        await app.retry(purchaseToken, video: purchase)
        let retried = try await Self.nextFinish(app)
        #expect(retried.code == nil)
        let retriedToken = try await Self.token(of: purchase, sharedManager)
        #expect(retried.token == retriedToken && retriedToken != purchaseToken)
        let purchased = try #require(await app.play(retriedToken))
        await purchased.close()

        // 7. Delete.
        await app.delete(rentalToken)
        #expect(try await !sharedManager.offlineVideoTokens.contains(rentalToken))
        #expect(app.alerts.titles == ["License Expired"], "the only alert the user saw")
    }
}
