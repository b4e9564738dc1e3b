import CurlTransfer
import Foundation
import Locking
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// The analytics alone: an `OfflineAnalytics` over an in-memory `AnalyticsStorage` of the test's
/// (no SQLite, no manager), against a live collector.
@Suite("Analytics without the manager or the store, live")
struct OfflineAnalyticsTests {
    /// Events in memory; `forgets` false makes `removeAnalytics` fail (a store that cannot write).
    final class MemoryStorage: AnalyticsStorage {
        struct State { var events: [AnalyticsRecord] = []; var next: Int64 = 1; var forgets = true; var attempts = 0 }
        let state = Locked(State())

        func addAnalyticsEvent(_ event: AnalyticsRecord, limit: Int) throws -> Int {
            state.withLock { state in
                var event = event
                event.seq = state.next
                state.next += 1
                state.events.append(event)
                return 0
            }
        }
        func analyticsOrigins() throws -> [String] {
            state.withLock { state in
                var origins: [String] = []
                for event in state.events where !origins.contains(event.origin) { origins.append(event.origin) }
                return origins
            }
        }
        func pendingAnalytics(origin: String, count: Int, bytes: Int) throws -> [AnalyticsRecord] {
            state.withLock { Array($0.events.filter { $0.origin == origin }.prefix(count)) }
        }
        func analyticsCount() throws -> Int { state.withLock { $0.events.count } }
        func removeAnalytics(_ seqs: [Int64]) throws {
            try state.withLock { state in
                guard state.forgets else { throw CocoaError(.fileWriteNoPermission) }
                state.events.removeAll { seqs.contains($0.seq ?? -1) }
            }
        }
        func countAnalyticsAttempt(_ seqs: [Int64]) throws { state.withLock { $0.attempts += 1 } }
    }

    @Test("a store that cannot forget an accepted batch keeps it and the pass stops; sent again later, the collector counts each event once")
    func storeThatCannotForget() async throws {
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let memory = MemoryStorage()
            memory.state.withLock { $0.forgets = false }
            let analytics = OfflineAnalytics(actorQueue: ActorQueue(label: "OfflineAnalyticsTests"), storage: memory, client: HTTPClient(),
                                             hub: EventHub(), configuration: testConfiguration(storage))
            await analytics.connect(AnalyticsSeams(isOwner: { true }, options: { OfflineVideoManagerOptions() }, deviceID: { "device" }))
            let subject = OfflineAnalytics.Subject(token: "token", videoID: Catalog.clearVideo, accountID: Catalog.account,
                                                   origin: server.baseURL)
            for position in [0.0, 4.0, 8.0] {
                try await analytics.record(.playStarted, subject, position: position, session: "session")
            }
            #expect(await analytics.sendPending() == 3, "accepted by the collector, but not forgotten: still waiting")
            #expect(try await AnalyticsTests.collected(server).count == 3)

            memory.state.withLock { $0.forgets = true }
            #expect(await analytics.sendPending() == 0)
            #expect(AnalyticsTests.uploads(server).count >= 2, "the batch went again")
            #expect(try await AnalyticsTests.collected(server).count == 3, "each id counted once")
            await analytics.close()
        }
    }
}
