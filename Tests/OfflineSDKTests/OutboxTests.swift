@testable import OfflineSDK
import TestKit
import Testing

/// The queue machinery license reports and analytics share: one pass at a time, back-off.
@Suite("Outbox: passes and back-off")
struct OutboxTests {
    /// Runs passes that end as `results` says (then `.finished`), retried by the outbox itself.
    actor Driver {
        let outbox: Outbox
        var results: [OutboxPassResult]
        var passes = 0

        init(_ results: [OutboxPassResult], initialDelay: Duration, maximumDelay: Duration = .seconds(300)) {
            outbox = Outbox(initialDelay: initialDelay, maximumDelay: maximumDelay)
            self.results = results
        }

        /// What happened, in order ("pass ended", "closed").
        var log: [String] = []

        func retries() { outbox.startPass = { [weak self] in await self?.pass() } }

        /// A pass; with `gate`, one that waits for it before it ends (a send under way).
        func pass(holdingAt gate: Gate? = nil) async {
            await outbox.run {
                passes += 1
                if let gate {
                    await gate.wait()
                    log.append("pass ended")
                }
                return results.isEmpty ? .finished : results.removeFirst()
            }
        }

        func close() async {
            await outbox.close()
            log.append("closed")
        }

        var isClosed: Bool { outbox.isClosed }
        var retryWaiting: Bool { outbox.retryWaiting }

        var backOff: Duration { outbox.backOff }
    }

    @Test("a pass that cannot reach its server runs again after the back-off, until one gets through")
    func retriesAfterBackOff() async throws {
        let driver = Driver([.unreachable, .unreachable], initialDelay: .milliseconds(20))
        await driver.retries()
        await driver.pass()
        #expect(try await eventually { await driver.passes == 3 })
        #expect(await driver.backOff == .milliseconds(20), "a pass that got through starts the back-off over")
    }

    @Test("close waits for the pass under way; afterwards no pass runs, asked for or as a retry of that pass")
    func closeWaitsForThePass() async throws {
        let driver = Driver([.unreachable], initialDelay: .milliseconds(20))
        await driver.retries()
        let gate = Gate()
        let passing = Task { await driver.pass(holdingAt: gate) }
        #expect(try await eventually { await driver.passes == 1 })
        let closing = Task { await driver.close() }
        // close() marks the outbox closed at once; had it not waited, it would have returned then.
        #expect(try await eventually { await driver.isClosed })
        gate.open()
        await passing.value
        await closing.value
        #expect(await driver.log == ["pass ended", "closed"], "close() returned only once the pass had ended")
        #expect(await !driver.retryWaiting, "the unreachable pass's retry was not scheduled")
        await driver.pass()
        #expect(await driver.passes == 1, "no pass after close")
        #expect(await driver.backOff == .milliseconds(20))
    }

    @Test("the back-off doubles per failure up to its ceiling; waiting for the network is no failure")
    func doubles() async throws {
        let driver = Driver([.unreachable, .unreachable, .waitingForNetwork, .unreachable, .unreachable],
                            initialDelay: .milliseconds(100), maximumDelay: .milliseconds(300))
        var seen: [Duration] = []
        for _ in 0..<5 {
            await driver.pass()
            seen.append(await driver.backOff)
        }
        #expect(seen == [.milliseconds(100), .milliseconds(200), .milliseconds(200), .milliseconds(300), .milliseconds(300)])
        #expect(await driver.passes == 5, "no retries without startPass")
    }
}
