import Foundation
@testable import OfflineSDK
import MockBackend
import TestKit
import Testing

/// The shared manager's configuration, the storage check on demand, and the display name.
@Suite("OfflineVideoManager: shared instance, storage check, display name")
struct SharedManagerTests {
    /// The test of the process-wide shared manager (under `ProcessWideLock`, with PortedAppTests).
    @Test("the shared manager takes a configuration on first call; later calls update it and refuse another folder")
    func sharedManager() async throws {
        // The shared manager is process-wide: one test at a time uses it (PortedAppTests does too).
        try await ProcessWideLock.sharedOfflineVideoManager.run {
            if let leftOver = OfflineVideoManager.shared { await leftOver.close() }
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            var configuration = OfflineVideoManagerConfiguration(storageDirectory: storage.url)
            let network = ManualNetworkMonitor(path: .cellular)
            configuration.network = network
            let manager = try await OfflineVideoManager.initializeOfflineVideoManager(
                delegate: nil, options: OfflineVideoManagerOptions(allowsCellularDownload: true), configuration: configuration)
            #expect(OfflineVideoManager.shared === manager)
            #expect(manager.configuration.storageDirectory == storage.url)
            #expect(manager.configuration.network as? ManualNetworkMonitor === network)
            #expect(await manager.options.allowsCellularDownload)

            let again = try await OfflineVideoManager.initializeOfflineVideoManager(delegate: nil, options: OfflineVideoManagerOptions())
            #expect(again === manager)
            #expect(await manager.options.allowsCellularDownload == false, "a later call updates the options")
            var sameConfiguration = OfflineVideoManagerConfiguration(storageDirectory: storage.url)
            sameConfiguration.network = network
            let proxy = KeyExchangeTests.Proxy(.forward)
            sameConfiguration.keyExchange = proxy
            let same = try await OfflineVideoManager.initializeOfflineVideoManager(
                delegate: nil, options: OfflineVideoManagerOptions(), configuration: sameConfiguration)
            #expect(same === manager)
            #expect(manager.authProxy as? KeyExchangeTests.Proxy === proxy, "the key-exchange hook can change: it is set as authProxy")

            // What cannot take effect on a running manager is refused, naming it, not silently ignored.
            var otherNetwork = sameConfiguration
            otherNetwork.network = ManualNetworkMonitor(path: .wifi)
            otherNetwork.maxConcurrentDownloads = 5
            let fixed = await #expect(throws: OfflineVideoError.self) {
                try await OfflineVideoManager.initializeOfflineVideoManager(delegate: nil, options: OfflineVideoManagerOptions(),
                                                                            configuration: otherNetwork)
            }
            #expect(fixed?.code == .invalidParameter)
            #expect(fixed?.message.contains("maxConcurrentDownloads, network") == true, "\(fixed?.message ?? "")")
            #expect(fixed?.localizedDescription.contains("cannot change while it runs") == true)

            // The task façade's shared instance sits on the shared manager.
            let downloads = try await DownloadManager.shared()
            #expect(downloads.offlineVideoManager === manager)
            #expect(try await DownloadManager.shared() === downloads)

            let other = try TemporaryDirectory()
            defer { other.remove() }
            let refused = await #expect(throws: OfflineVideoError.self) {
                try await OfflineVideoManager.initializeOfflineVideoManager(
                    delegate: nil, options: OfflineVideoManagerOptions(), configuration: OfflineVideoManagerConfiguration(storageDirectory: other.url))
            }
            #expect(refused?.code == .invalidParameter && refused?.message.contains(storage.url.path) == true)
            await manager.close()
            #expect(OfflineVideoManager.shared == nil, "closing the shared manager forgets it")
        }
    }

    @Test("checkStorage: missing files make a download stale, stranded folders go, the delegate hears it; nothing changed, false")
    func checkStorage() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let token = try await h.request(Catalog.clearVideo)
            #expect(try await h.events.finished(token) == nil)
            #expect(try await h.manager.checkStorage() == false, "nothing changed")

            // A folder this store made and never recorded (its stamp inside): stranded, it goes.
            let stray = await h.manager.downloads.packagesDirectory.appendingPathComponent("left-behind")
            try FileManager.default.createDirectory(at: stray, withIntermediateDirectories: true)
            try await h.manager.downloads.storeStamp().write(to: stray.appendingPathComponent(".store"))
            try FileManager.default.removeItem(at: await h.manager.packageFolder(token).appendingPathComponent("0-video/00002.ts"))
            #expect(try await h.manager.checkStorage())
            try await h.events.wait { $0 == .storageChanged }
            #expect(try await h.manager.status(token).downloadState == .stale)
            #expect(!FileManager.default.fileExists(atPath: stray.path))
            #expect(try await h.manager.checkStorage() == false)
        } }
    }

    @Test("a reader cannot check the storage (it changes what is stored)")
    func readerCannotCheck() async throws {
        try await withBackend { server in try await withHarness(server, { $0.role = .reader }) { h in
            let refused = await #expect(throws: OfflineVideoError.self) { try await h.manager.checkStorage() }
            #expect(refused?.reason == .readOnly)
        } }
    }

    @Test("the display name shows in the status and the video object: the requested one, else the video's name")
    func displayName() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let named = try await h.request(Catalog.clearVideo, nil, DownloadParameters(displayName: "Road trip"))
            #expect(try await h.events.finished(named) == nil)
            #expect(try await h.manager.offlineVideoStatus(forToken: named)?.displayName == "Road trip")
            #expect(await h.manager.videoObject(fromOfflineVideoToken: named)?.offlineDisplayName == "Road trip")

            let video = try await h.service.findVideo(id: Catalog.fairPlayVideo)
            let plain = try await h.manager.requestVideoDownload(video, mediaSelections: nil,
                                                                 parameters: DownloadParameters(license: .purchase))
            #expect(try await h.events.finished(plain) == nil)
            #expect(try await h.manager.offlineVideoStatus(forToken: plain)?.displayName == video.name)
            #expect(await h.manager.videoObject(fromOfflineVideoToken: plain)?.offlineDisplayName == video.name)
        } }
    }
}
