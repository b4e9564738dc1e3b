import Foundation
import MicroHTTP
@testable import MockBackend
import Testing

@Suite("Fault effects: read from a rule's members once, worded once, the wire format unchanged")
struct FaultEffectTests {
    @Test("a rule's members become its effects in a fixed order; retry_after alone, drop: false and stall: false are none")
    func effectsFromMembers() {
        let every = FaultRule(latencyMs: 200, latencyJitterMs: 50, bytesPerSecond: 1000, status: 503, retryAfter: 2,
                              cutAfterBytes: 4000, drop: true, stall: true, corruptBytes: 3)
        #expect(every.effects == [.answer(status: 503, retryAfter: 2), .wait(milliseconds: 200, jitterMilliseconds: 50),
                                  .pace(bytesPerSecond: 1000), .cut(afterBytes: 4000), .corrupt(bytes: 3), .stall, .drop])
        #expect(FaultRule(latencyJitterMs: 30).effects == [.wait(milliseconds: 0, jitterMilliseconds: 30)])
        #expect(FaultRule(cutAfterBytes: 0).effects == [.cut(afterBytes: 0)], "0 is right after the headers, still an effect")
        #expect(FaultRule(retryAfter: 5, drop: false, stall: false).effects.isEmpty)
        #expect(FaultRule(route: .segment, retryAfter: 5).problem?.contains("needs an effect") == true)
        #expect(FaultRule(drop: true).problem == nil)
    }

    @Test("each effect has one wording, used by the request log and the dashboard alike")
    func wording() {
        let effects: [FaultEffect] = [.answer(status: 503, retryAfter: 2), .answer(status: 404, retryAfter: nil),
                                      .wait(milliseconds: 200, jitterMilliseconds: 50), .wait(milliseconds: 7, jitterMilliseconds: nil),
                                      .pace(bytesPerSecond: 50_000), .cut(afterBytes: 4000), .corrupt(bytes: 3), .stall, .drop]
        #expect(effects.map(\.description) == ["503 (Retry-After 2)", "404", "200 ms + up to 50 ms", "7 ms", "50000 B/s",
                                                "cut after 4000 B", "3 B corrupted", "stalled", "dropped"])
        #expect(FaultEffect.describe([.answer(status: 500, retryAfter: nil), .drop]) == "500, dropped")
        let rule = FaultRule(latencyMs: 10, status: 429)
        #expect(DashboardPage.does(rule) == "\(FaultEffect.describe(rule.effects))")
    }

    @Test("an answer stands instead of the request unless the connection is dropped")
    func answerInstead() {
        #expect(FaultEffect.answerInstead([.wait(milliseconds: 5, jitterMilliseconds: nil), .answer(status: 503, retryAfter: 1)])?.status == 503)
        #expect(FaultEffect.answerInstead([.answer(status: 503, retryAfter: 1), .drop]) == nil)
        #expect(FaultEffect.answerInstead([.stall, .corrupt(bytes: 1)]) == nil)
        let refusal = FaultInjector.refusal(FaultRule(id: "busy", status: 503, retryAfter: 4))
        #expect(refusal.status == 503 && refusal.headers["Retry-After"] == "4")
        let notFound = FaultInjector.refusal(FaultRule(id: "gone", status: 404, retryAfter: 4))
        #expect(notFound.status == 404 && notFound.headers["Retry-After"] == nil, "Retry-After only with a 503")
    }

    @Test("a wait's jitter is chosen once per request, within its bound; other effects pass unchanged")
    func resolvedJitter() {
        let effects: [FaultEffect] = [.wait(milliseconds: 100, jitterMilliseconds: 40), .cut(afterBytes: 9)]
        var asked: [Int] = []
        let resolved = FaultEffect.resolved(effects) { most in asked.append(most); return 25 }
        #expect(asked == [40])
        #expect(resolved == [.wait(milliseconds: 125, jitterMilliseconds: nil), .cut(afterBytes: 9)])
        #expect(FaultEffect.resolved([.wait(milliseconds: 3, jitterMilliseconds: nil)]) { _ in Issue.record("no jitter to choose"); return 0 }
                == [.wait(milliseconds: 3, jitterMilliseconds: nil)])
    }

    @Test("the request log's note names the rule and its effects as this request got them")
    func note() throws {
        let injector = FaultInjector(seed: 7, rules: [FaultRule(id: "slow", latencyMs: 100, latencyJitterMs: 10, corruptBytes: 1)])
        let catalog = try Catalog.load(from: BackendConfiguration.defaultCatalogFile)
        let request = try HTTPRequest(method: "GET", target: "/image/v1/6415818918001/x/160x90/image.jpg")
        let decision = try #require(injector.decide(for: request, catalog: catalog))
        guard case .wait(let milliseconds, nil) = decision.effects.first else { Issue.record("\(decision.effects)"); return }
        #expect((100...110).contains(milliseconds))
        var response = HTTPResponse(status: 200)
        response.body = .bytes([1, 2, 3])
        FaultInjector.apply(decision, to: &response)
        #expect(response.note == "slow: \(milliseconds) ms, 1 B corrupted")
        #expect(response.delay == .milliseconds(milliseconds))
        guard case .bytes(let bytes) = response.body else { Issue.record("a corrupted body stays bytes"); return }
        #expect(zip(bytes, [1, 2, 3] as [UInt8]).filter { $0 != $1 }.count == 1)
    }

    @Test("the JSON of a rule is the admin API's (docs/openapi.yaml): flat snake_case members, read and written back the same")
    func wireFormat() throws {
        let json = #"""
            {"id":"all","route":"segment","probability":0.5,"times":3,"latency_ms":200,"latency_jitter_ms":50,
             "bytes_per_second":1000,"status":503,"retry_after":2,"cut_after_bytes":4000,"drop":false,"stall":true,"corrupt_bytes":3}
            """#
        let rule = try JSONDecoder().decode(FaultRule.self, from: Data(json.utf8))
        #expect(rule.effects == [.answer(status: 503, retryAfter: 2), .wait(milliseconds: 200, jitterMilliseconds: 50),
                                 .pace(bytesPerSecond: 1000), .cut(afterBytes: 4000), .corrupt(bytes: 3), .stall])
        let written = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(rule)) as? [String: Any])
        let original = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(Set(written.keys) == Set(original.keys))
        #expect(written["drop"] as? Bool == false && written["latency_jitter_ms"] as? Int == 50)
        #expect(try JSONDecoder().decode(FaultRule.self, from: JSONEncoder().encode(rule)) == rule)
    }
}
