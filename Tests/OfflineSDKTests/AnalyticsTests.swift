import CurlTransfer
import Foundation
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// Offline analytics: download and play events kept in the store within the storage limit,
/// uploaded to the backend's collector when the network policy allows, retried, never twice.
@Suite("Offline analytics")
struct AnalyticsTests {
    /// The collector's events (the admin listing) for `query`, newest first.
    static func collected(_ server: MockBackendServer, _ query: String = "") async throws -> [TrackerEvent] {
        let response = try await HTTPClient().send(HTTPClientRequest(url: server.baseURL + "/_admin/v1/tracker/events" + query,
                                                                     headers: [("Authorization", "Bearer \(server.app.adminToken)")]))
        try #require(response.status == 200, "\(response.status)")
        struct Listing: Decodable { var events: [TrackerEvent] }
        return try WireJSON.decoder().decode(Listing.self, from: Data(response.body)).events
    }

    /// The uploads the backend saw.
    static func uploads(_ server: MockBackendServer) -> [RequestLog.Entry] {
        server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/tracker")).filter { $0.method == "POST" }
    }

    /// Downloads the English-only clear video and waits until its download events reached the collector.
    static func downloaded(_ h: Harness, _ server: MockBackendServer) async throws -> OfflineVideoToken {
        let token = try await h.request(Catalog.englishOnlyVideo)
        #expect(try await h.events.finished(token) == nil)
        #expect(try await eventually { try await h.manager.store.offPool { try $0.analyticsCount() } == 0 }, "the download events were uploaded")
        return token
    }

    @Test("events made offline wait in the store and are uploaded exactly once when the network returns, after 503s")
    func offlineThenOnce() async throws {
        let network = ManualNetworkMonitor(path: .wired)
        try await withBackend { server in try await withHarness(server, { $0.network = network }) { h in
            let token = try await Self.downloaded(h, server)
            let downloads = try await Self.collected(server, "?token=\(token)")
            #expect(Set(downloads.map(\.event)) == ["download_requested", "download_completed"])

            network.currentPath = .none
            let playback = try await h.manager.openPlayback(token)
            try await playback.reportPlay(at: 0)
            try await playback.reportPause(at: 4.5)
            try await playback.reportPlay(at: 4.5)
            try await playback.reportCompletion()
            await playback.close()
            let store = await h.manager.store
            let queued = try await store.offPool { try $0.allAnalytics() }
            #expect(try queued.map { try WireJSON.decoder().decode(TrackerEvent.self, from: $0.body).id } == queued.map(\.id),
                    "each stored body is its event")
            #expect(queued.count == 4)
            let uploadsBefore = Self.uploads(server).count
            #expect(await h.manager.sendPendingAnalytics() == 4, "no network: nothing goes")
            #expect(Self.uploads(server).count == uploadsBefore)

            let fault = try server.app.faults.add(FaultRule(route: .tracker, times: 2, status: 503))
            network.currentPath = .wifi
            #expect(try await eventually { try await store.offPool { try $0.analyticsCount() } == 0 }, "uploaded once the network came back")

            let collected = try await Self.collected(server, "?session=\(playback.sessionID)")
            let ids = collected.map(\.id)
            #expect(ids.count == Set(ids).count, "each id once")
            #expect(Set(ids) == Set(queued.map(\.id)))
            #expect(collected.map(\.event).reversed() == ["play_started", "play_paused", "play_started", "play_completed"])
            #expect(collected.map(\.position).reversed() == [0, 4.5, 4.5, 12])
            #expect(collected.allSatisfy { $0.token == token && $0.videoID == Catalog.englishOnlyVideo })
            // The request log records an answer once it went out: the client may have it first.
            #expect(try await eventually { Self.uploads(server).dropFirst(uploadsBefore).contains { $0.status == 200 } })
            let statuses = Self.uploads(server).dropFirst(uploadsBefore).map(\.status)
            #expect(statuses.first == 503, "retried after the 503: \(statuses)")
            #expect(server.app.faults.rules.first { $0.rule.id == fault.rule.id }?.applied == 2)
        } }
    }

    @Test("a cancelled and a failed download are recorded as such, with the failure's code and reason")
    func downloadEnds() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let cancelled = try await h.request(Catalog.marathonVideo)
            try await h.manager.cancelVideoDownload(cancelled)
            _ = try server.app.faults.add(FaultRule(route: .segment, status: 404))
            let failed = try await h.request(Catalog.englishOnlyVideo)
            #expect(try await h.events.finished(failed) != nil)
            #expect(try await eventually { try await h.manager.store.offPool { try $0.analyticsCount() } == 0 })
            let names = { (token: String) in Array(try await Self.collected(server, "?token=\(token)").map(\.event).reversed()) }
            #expect(try await names(cancelled) == ["download_requested", "download_cancelled"])
            #expect(try await names(failed) == ["download_requested", "download_failed"])
            let failure = try #require(try await Self.collected(server, "?event=download_failed").first)
            #expect(failure.details?["code"] == .number(69302) && failure.details?["reason"] != nil)
        } }
    }

    @Test("an upload whose answer is lost is sent again and still stored once")
    func lostAnswer() async throws {
        let network = ManualNetworkMonitor(path: .wired)
        try await withBackend { server in try await withHarness(server, { $0.network = network }) { h in
            let token = try await Self.downloaded(h, server)
            network.currentPath = .none
            let playback = try await h.manager.openPlayback(token)
            try await playback.reportPlay(at: 1)
            try await playback.reportPause(at: 2)
            await playback.close()
            _ = try server.app.faults.add(FaultRule(route: .tracker, times: 1, drop: true))  // stored, then the answer lost
            let uploadsBefore = Self.uploads(server).count
            network.currentPath = .wired
            #expect(try await eventually { try await h.manager.store.offPool { try $0.analyticsCount() } == 0 })
            #expect(try await eventually { Self.uploads(server).count - uploadsBefore >= 2 }, "sent again")
            let ids = try await Self.collected(server, "?session=\(playback.sessionID)").map(\.id)
            #expect(ids.count == 2 && Set(ids).count == 2)
        } }
    }

    @Test("over analyticsStorageLimit the oldest events are dropped, with analyticsEventsDropped")
    func storageLimit() async throws {
        let network = ManualNetworkMonitor(path: .wired)
        let limit = 1024 * 1024
        try await withBackend { server in try await withHarness(server, {
            $0.network = network
            $0.options.analyticsStorageLimit = limit
        }) { h in
            let token = try await Self.downloaded(h, server)
            network.currentPath = .none
            let store = await h.manager.store
            let playback = try await h.manager.openPlayback(token)
            try await playback.reportPlay(at: 0)
            let oldest = try #require(try await store.offPool { try $0.allAnalytics() }.first)
            var recorded = 1
            while try await store.offPool({ try $0.analyticsCount() }) == recorded, recorded < 20_000 {
                try await playback.reportPause(at: Double(recorded))
                recorded += 1
            }
            await playback.close()
            let kept = try await store.offPool { try $0.allAnalytics() }
            #expect(kept.count < recorded, "events were dropped after \(recorded)")
            #expect(!kept.contains { $0.id == oldest.id }, "the oldest went first")
            let bytes = try await store.offPool { try $0.analyticsBytes() }
            #expect(bytes <= limit && kept.reduce(0) { $0 + $1.bytes } == bytes)
            let event = try await h.events.wait(timeout: .seconds(120)) { if case .analyticsEventsDropped = $0 { true } else { false } }
            #expect(event == .analyticsEventsDropped(count: recorded - kept.count))
        } }
    }

    @Test("with allowsCellularAnalytics off, events wait on cellular and go on Wi-Fi")
    func cellular() async throws {
        let network = ManualNetworkMonitor(path: .cellular)
        try await withBackend { server in try await withHarness(server, {
            $0.network = network
            $0.options.allowsCellularDownload = true
            $0.options.allowsCellularAnalytics = false
        }) { h in
            let token = try await h.request(Catalog.englishOnlyVideo)
            #expect(try await h.events.finished(token) == nil, "the download may use cellular")
            #expect(await h.manager.sendPendingAnalytics() == 2, "download_requested and download_completed wait")
            #expect(Self.uploads(server).isEmpty)
            network.currentPath = .wifi
            #expect(try await eventually { try await h.manager.store.offPool { try $0.analyticsCount() } == 0 })
            #expect(try await Self.collected(server, "?token=\(token)").count == 2)
        } }
    }
}
