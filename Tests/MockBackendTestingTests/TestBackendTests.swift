import CurlTransfer
import Foundation
import MockBackendTesting
import OfflineSDK
import Testing
import XCTest

/// What another package's test does with the library: start, shape, look, stop.
@Suite("MockBackendTesting: the backend in another package's tests")
struct TestBackendTests {
    @Test("an SDK download against it, through faults the test sets, seen in the request log; stop removes its files")
    func downloadThroughFaults() async throws {
        var directory: URL?
        try await withTestBackend { backend in
            directory = backend.dataDirectory
            try backend.faults.add(FaultRule(route: .segment, times: 2, status: 503))
            let storage = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: storage) }
            var configuration = OfflineVideoManagerConfiguration(storageDirectory: storage)
            configuration.minimumFreeSpace = 0
            configuration.retryInitialDelay = .milliseconds(10)
            let manager = try await OfflineVideoManager(configuration: configuration)
            let events = manager.events()
            let service = PlaybackService(baseURL: backend.baseURL, accountID: TestBackend.Fixtures.account,
                                          policyKey: TestBackend.Fixtures.playPolicyKey)
            let token = try await manager.requestVideoDownload(try await service.findVideo(id: TestBackend.Fixtures.clearVideo),
                                                               mediaSelections: nil, parameters: nil)
            // The download's end, or a failure after two minutes (a ceiling, never a wait).
            let finished = try await withThrowingTaskGroup(of: OfflineVideoError??.self) { group in
                group.addTask {
                    for await event in events { if case .downloadFinished(token, let error) = event { return .some(error) } }
                    return nil
                }
                group.addTask { try await Task.sleep(for: .seconds(120)); return nil }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            #expect(finished == .some(nil), "the download finished without an error")
            await manager.close()
            #expect(await backend.requests(pathPrefix: "/media/", status: 503, atLeast: 2).count == 2)
            #expect(backend.faults.rules.first?.applied == 2)
        }
        #expect(directory.map { FileManager.default.fileExists(atPath: $0.path) } == false)
    }

    @Test("a fixed clock stands still until moved; the catalog is edited in-process and served at once")
    func clockAndCatalog() async throws {
        var options = TestBackend.Options()
        let instant = Date(timeIntervalSince1970: 1_900_000_000)
        options.clock = .fixed(instant)
        try await withTestBackend(options) { backend in
            #expect(backend.clock.now() == instant)
            backend.clock.advance(by: 3600)
            #expect(backend.clock.now() == instant.addingTimeInterval(3600))

            try backend.admin("PUT", "/accounts/\(TestBackend.Fixtures.account)/videos/my-video",
                              ["name": "Mine", "asset": "bars", "protection": "clear", "offline_enabled": true, "renditions": ["416x234"]])
            let service = PlaybackService(baseURL: backend.baseURL, accountID: TestBackend.Fixtures.account,
                                          policyKey: TestBackend.Fixtures.playPolicyKey)
            let video = try await service.findVideo(id: "my-video")
            #expect(video.name == "Mine")
            let refused = #expect(throws: TestBackend.AdminError.self) {
                try backend.admin("PATCH", "/accounts/\(TestBackend.Fixtures.account)/videos/my-video", ["renditions": ["8k"]])
            }
            #expect(refused?.status == 400 && refused?.message.contains("INVALID_VIDEO") == true)
        }
    }
}

/// The same from XCTest: start in setUp, stop in tearDown.
final class TestBackendXCTests: XCTestCase {
    var backend: TestBackend!

    override func setUp() async throws {
        backend = try TestBackend.start()
    }

    override func tearDown() async throws {
        await backend.stop()
    }

    func testPlaybackAPIAnswers() async throws {
        let response = try await HTTPClient().send(HTTPClientRequest(
            url: backend.baseURL + "/playback/v1/accounts/\(TestBackend.Fixtures.account)/videos/\(TestBackend.Fixtures.clearVideo)",
            headers: [("BCOV-Policy", TestBackend.Fixtures.playPolicyKey)]))
        XCTAssertEqual(response.status, 200)
        let logged = await backend.requests(pathPrefix: "/playback/", atLeast: 1)
        XCTAssertEqual(logged.count, 1)
    }
}
