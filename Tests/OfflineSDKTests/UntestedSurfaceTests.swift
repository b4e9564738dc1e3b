import CurlTransfer
import Foundation
import LicenseProtocol
import Locking
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// Small live tests of API the other suites did not reach (issue 25, "Also untested today").
@Suite("Small live tests of the rest of the API")
struct UntestedSurfaceTests {
    @Test("clearOfflineVideoCache: a completed download's object is cached until cleared, then built afresh")
    func clearCache() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let token = try await h.request(Catalog.englishOnlyVideo)
            #expect(try await h.events.finished(token) == nil)
            #expect(await h.manager.videoObject(fromOfflineVideoToken: token)?.playableOffline == true)
            let segment = try #require(try await h.manager.store.offPool { try $0.segments(token) }.first)
            try FileManager.default.removeItem(at: await h.manager.packageFolder(token).appendingPathComponent(segment.file))
            #expect(await h.manager.videoObject(fromOfflineVideoToken: token)?.playableOffline == true, "the cached object")
            await h.manager.clearOfflineVideoCache()
            #expect(await h.manager.videoObject(fromOfflineVideoToken: token)?.playableOffline == false, "built afresh: a file is missing")
        } }
    }

    @Test("addFairPlayApplicationCertificate with nil removes the certificate of that identifier")
    func removeCertificate() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let url = try #require(video.sources.first { $0.fairPlay != nil }?.fairPlay?.certificateURL)
            let certificate = try await HTTPClient().send(HTTPClientRequest(url: url)).body
            let identifier = OfflineVideoManager.defaultFairPlayApplicationCertificateIdentifier
            try await h.manager.addFairPlayApplicationCertificate(certificate, identifier: identifier)
            #expect(try await h.manager.store.offPool { try $0.certificate(identifier) } == Data(certificate))
            try await h.manager.addFairPlayApplicationCertificate(nil, identifier: identifier)
            #expect(try await h.manager.store.offPool { try $0.certificate(identifier) } == nil)
        } }
    }

    @Test("renewFairPlayLicense with an auth token sends that token: one the server does not accept is refused (401)")
    func renewWithAuthToken() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let video = try await h.service.findVideo(id: FairPlayDownloadTests.rentalVideo)
            let token = try await h.manager.preloadFairPlayLicense(video, parameters: DownloadParameters(license: .rental(duration: 3600)))
            let refused = await #expect(throws: OfflineVideoError.self) {
                try await h.manager.renewFairPlayLicense(token, video: video, authToken: "eyJhbGciOiJSUzI1NiJ9.eyJhY2NpZCI6IjY0MTU4MTg5MTgwMDEifQ.c2lnbmF0dXJl",
                                                         parameters: DownloadParameters(license: .purchase))
            }
            #expect(refused?.code == .contentKeyRequestFailed && refused?.httpStatus == 401)
            #expect(try await h.manager.fairPlayLicenseExpiration(token) != .distantFuture, "the rental stands")
            _ = try await h.manager.renewFairPlayLicense(token, video: video, authToken: nil, parameters: DownloadParameters(license: .purchase))
            #expect(try await h.manager.fairPlayLicenseExpiration(token) == .distantFuture)
        } }
    }

    @Test("LicenseFetcher.renewLicense(forKeyID:with:) renews a key on the request's terms")
    func renewKey() async throws {
        try await withBackend { server in try await withHarness(server, { $0.clock = { server.app.clock.now() } }) { h in
            let downloads = try await DownloadManager(manager: h.manager)
            let video = try await h.service.findVideo(id: FairPlayDownloadTests.rentalVideo)
            let rental = DownloadRequest(contentId: "c", video: video, expiration: server.app.clock.now().addingTimeInterval(86400))
            let key = try await downloads.licenseFetcher.fetchLicense(for: rental)
            #expect(key.license.kind == .rental)
            let renewed = try await downloads.licenseFetcher.renewLicense(forKeyID: "skd://\(key.keyID)",
                                                                          with: DownloadRequest(contentId: "c", video: video))
            #expect(renewed.keyID == key.keyID && renewed.token == key.token && renewed.license.kind == .purchase)
        } }
    }

    /// Records a task delegate's progress callbacks.
    final class ProgressRecorder: DownloadManagerDelegate {
        let percents = Locked<[Double]>([])
        func downloadManager(_ manager: DownloadManager, task: DownloadTask, didUpdateProgress percent: Double) {
            percents.withLock { $0.append(percent) }
        }
    }

    @Test("the task delegate hears progress; allTasks observers hear additions; a task whose files vanish becomes stale")
    func taskProgressObserversAndStale() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let downloads = try await DownloadManager(manager: h.manager)
            let recorder = ProgressRecorder()
            downloads.delegate = recorder
            final class Observer {}
            let observer = Observer()
            let counts = Locked<[Int]>([])
            downloads.allTasks.add(observer) { _, new in counts.withLock { $0.append(new.count) } }
            let video = try await h.service.findVideo(id: Catalog.englishOnlyVideo)
            let task = try await downloads.enqueue(request: DownloadRequest(contentId: "e", video: video)).get()
            #expect(counts.withLock { $0 }.last == 1, "the observer heard the addition")
            try await task.resume()
            for await state in task.state.values where state == .completed { break }
            #expect(try await eventually { recorder.percents.withLock { $0.last } == 100 })
            #expect(recorder.percents.withLock { $0 } == recorder.percents.withLock { $0 }.sorted())
            downloads.allTasks.remove(observer)

            let segment = try #require(try await h.manager.store.offPool { try $0.segments(task.token) }.first)
            try FileManager.default.removeItem(at: await h.manager.packageFolder(task.token).appendingPathComponent(segment.file))
            #expect(try await h.manager.checkStorage())
            for await state in task.state.values where state == .stale { break }
            #expect(task.state.value == .stale)
        } }
    }

    @Test("the static-images callback comes when the images cannot be fetched too, and the download completes")
    func imagesFail() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            try server.app.faults.add(FaultRule(id: "no-images", route: .image, status: 404))
            let token = try await h.request(Catalog.englishOnlyVideo)
            #expect(try await h.events.finished(token) == nil)
            #expect(h.events.all.contains(.staticImagesDownloaded(token)))
            let poster = await h.manager.videoObject(fromOfflineVideoToken: token)?.properties[OfflineVideoManager.OfflineProperty.posterPath]?.stringValue
            #expect(poster.map { FileManager.default.fileExists(atPath: $0) } != true, "no poster on disk")
        } }
    }

    @Test("a running download keeps the cellular policy it started with when the options change; a new one takes the new policy")
    func cellularPolicyKept() async throws {
        let network = ManualNetworkMonitor(path: .cellular)
        try await withBackend { server in
            try server.app.faults.add(FaultRule(id: "slow", route: .segment, video: Catalog.tenMinuteVideo, latencyMs: 20))
            try await withHarness(server, { $0.network = network; $0.options.allowsCellularDownload = true }) { h in
                let running = try await h.request(Catalog.tenMinuteVideo)
                #expect(try await eventually { try await h.manager.status(running).downloadPercent > 1 })
                await h.manager.update(delegate: nil, options: OfflineVideoManagerOptions(allowsCellularDownload: false))
                let later = try await h.request(Catalog.englishOnlyVideo)
                #expect(try await h.events.finished(running) == nil, "it finished on cellular")
                #expect(try #require(try await h.manager.store.offPool { try $0.download(running) }).allowsCellular)
                #expect(try #require(try await h.manager.store.offPool { try $0.download(later) }).allowsCellular == false)
                #expect(try await h.manager.status(later).downloadPercent == 0, "the new one waits for another network")
                network.currentPath = .wifi
                #expect(try await h.events.finished(later) == nil)
            }
        }
    }

    @Test("allowsCellularPlayback: off, a first-play report waits on cellular; on, it goes out")
    func cellularPlayback() async throws {
        let network = ManualNetworkMonitor(path: .wifi)
        try await withBackend { server in try await withHarness(server, { $0.network = network }) { h in
            let video = try await h.service.findVideo(id: FairPlayDownloadTests.rentalVideo)
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil,
                                                                 parameters: DownloadParameters(license: .rental(duration: 86400, playDuration: 3600)))
            #expect(try await h.events.finished(token) == nil)
            network.currentPath = .cellular
            let playback = try await h.manager.openPlayback(token)
            await playback.close()
            #expect(await h.manager.sendPendingLicenseReports() == 1, "cellular playback not allowed: the report waits")
            await h.manager.update(delegate: nil, options: OfflineVideoManagerOptions(allowsCellularPlayback: true))
            #expect(await h.manager.sendPendingLicenseReports() == 0, "allowed: sent over cellular")
        } }
    }
}
