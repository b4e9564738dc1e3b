import Foundation
import Locking
import MicroHTTP
import WireModels

/// The fault rules in force and what they did. The first active rule that takes a request
/// applies to its answer; every random choice (probability, jitter, corrupted places) comes
/// from one generator seeded at start, so a run with the same seed and the same requests in
/// the same order injects the same faults. Delays, pacing and stalls suspend the connection:
/// no server thread waits with them.
public final class FaultInjector: Sendable {
    /// A rule as the admin API shows it.
    public struct Installed: Codable, Sendable, Equatable {
        public var rule: FaultRule
        /// Answers it changed so far.
        public var applied: Int
        /// What `times` leaves (nil: no limit).
        public var remaining: Int?
    }

    private let state: Locked<(rules: [Installed], random: SplitMix, nextID: Int)>

    init(seed: UInt64, rules: [FaultRule] = []) {
        state = Locked(([], SplitMix(state: seed), 1))
        for rule in rules { _ = try? add(rule) }
    }

    /// The rules in force, in the order they are tried, with what each did so far.
    public var rules: [Installed] { state.withLock { $0.rules } }

    /// Adds a rule (an id is given when it has none); throws when it is not valid
    /// (`.invalidRule`) or its id is taken (`.duplicateID`).
    @discardableResult
    public func add(_ rule: FaultRule) throws(FaultRuleError) -> Installed {
        if let problem = rule.problem { throw FaultRuleError(.invalidRule, problem) }
        return try state.withLock { state throws(FaultRuleError) -> Installed in
            var rule = rule
            if rule.id == nil {
                while state.rules.contains(where: { $0.rule.id == "rule-\(state.nextID)" }) { state.nextID += 1 }
                rule.id = "rule-\(state.nextID)"
                state.nextID += 1
            }
            if state.rules.contains(where: { $0.rule.id == rule.id }) { throw FaultRuleError(.duplicateID, "a rule \(rule.id ?? "") exists already") }
            let installed = Installed(rule: rule, applied: 0, remaining: rule.times)
            state.rules.append(installed)
            return installed
        }
    }

    /// Removes one rule; false when there is none with that id.
    @discardableResult
    public func remove(id: String) -> Bool {
        state.withLock { state in
            let before = state.rules.count
            state.rules.removeAll { $0.rule.id == id }
            return state.rules.count != before
        }
    }

    /// Puts `rules` in force in place of the current ones (another instance sharing the store
    /// changed them); a rule kept unchanged keeps what it did so far.
    func replaceRules(with rules: [FaultRule]) {
        state.withLock { state in
            let current = state.rules
            state.rules = rules.filter { $0.problem == nil }.map { rule in
                current.first { $0.rule == rule } ?? Installed(rule: rule, applied: 0, remaining: rule.times)
            }
        }
    }

    /// Removes every rule.
    public func removeAll() {
        state.withLock { $0.rules = [] }
    }

    /// What the rule that takes a request does to it, its random choices made.
    struct Decision {
        let rule: FaultRule
        /// What the rule does to this request, a wait's jitter chosen.
        let effects: [FaultEffect]
        /// The generator of the body's own choices (corrupted places).
        let random: SplitMix

        /// An error status answers instead of the request, which is not carried out (no license
        /// issued, renewed or released, no nonce used up), as when a real server fails: a
        /// client that takes a 503 for "not done" and asks again is right. The other effects
        /// delay, shape or lose the answer of a request that was carried out (`drop` too, even
        /// with a status: the answer is lost, and the client cannot tell whether it was done).
        var answersInstead: Bool { FaultEffect.answerInstead(effects) != nil }
    }

    /// The first rule that takes `request`, or nil. Decided before the request is carried out
    /// (`Decision.answersInstead`); `apply` then does the rest to the answer.
    func decide(for request: HTTPRequest, catalog: Catalog) -> Decision? {
        guard let (route, account, videoUUID, renditionUUID) = RouteClass.classify(request.pathSegments) else { return nil }
        return state.withLock { state -> Decision? in
            guard !state.rules.isEmpty else { return nil }
            var videoIDs: Set<String> = [], renditionNames: Set<String> = []
            if let video = videoUUID.flatMap(catalog.video(uuid:)) {
                videoIDs = [video.id, video.uuid]
                if let reference = video.referenceID { videoIDs.insert("ref:" + reference) }
                if let rendition = renditionUUID.flatMap({ catalog.rendition(uuid: $0, of: video) }) {
                    renditionNames = [rendition.uuid, video.renditionName(rendition)]
                }
            }
            for index in state.rules.indices {
                let installed = state.rules[index]
                guard installed.remaining != 0,
                      installed.rule.matches(path: request.path, route: route, account: account, videoIDs: videoIDs,
                                             renditionNames: renditionNames) else { continue }
                if let probability = installed.rule.probability, probability < 1,
                   Double(state.random.next() >> 11) / Double(1 << 53) >= probability { continue }
                state.rules[index].applied += 1
                if let remaining = installed.remaining { state.rules[index].remaining = remaining - 1 }
                let effects = FaultEffect.resolved(installed.rule.effects) { most in Int(state.random.next() % UInt64(most + 1)) }
                // The body's own choices (corrupted places) get a generator split off this one.
                let body = SplitMix(state: state.random.next())
                return Decision(rule: installed.rule, effects: effects, random: body)
            }
            return nil
        }
    }

    /// The error array a rule with a status answers (`FAULT_INJECTED`), with Retry-After on a 503.
    static func refusal(_ rule: FaultRule) -> HTTPResponse {
        let (status, retryAfter) = FaultEffect.answerInstead(rule.effects) ?? (503, nil)
        var refusal = HTTPError(status, status >= 500 ? PlaybackAPIErrorCode.serverError : "FAULT_INJECTED", "FAULT_INJECTED",
                                "Fault rule \(rule.id ?? "") answered \(status)").response
        if status == 503, let retryAfter { refusal.headers.set("Retry-After", "\(retryAfter)") }
        return refusal
    }

    /// Does what `decision` says to `response`: the answer of the request, or, when the decision
    /// answers instead of it, the refusal. Only the body is shaped: the headers stay as the
    /// handler made them, so a media body's `Repr-Digest` and ETag (`MediaResponse`) still say
    /// what the body should have been, and a client can tell it was cut or corrupted.
    static func apply(_ decision: Decision, to response: inout HTTPResponse) {
        let note = "\(decision.rule.id ?? "fault"): \(FaultEffect.describe(decision.effects))"
        var corrupt: Int?
        var stream: (bytesPerSecond: Int?, cutAfter: Int?, stall: Bool)?
        for effect in decision.effects {
            switch effect {
            case .answer:
                continue  // answered instead (`refusal`), or lost with a drop
            case .wait(let milliseconds, _):
                response.delay = .milliseconds(milliseconds)
            case .pace(let rate):
                stream = (rate, stream?.cutAfter, stream?.stall ?? false)
            case .cut(let bytes):
                stream = (stream?.bytesPerSecond, bytes, stream?.stall ?? false)
            case .stall:
                stream = (stream?.bytesPerSecond, stream?.cutAfter, true)
            case .corrupt(let bytes):
                corrupt = bytes
            case .drop:
                response = HTTPResponse(status: 0)
                response.dropsConnection = true
                response.note = note
                return
            }
        }
        response.note = note
        guard corrupt != nil || stream != nil else { return }
        if case .ranged(let ranged) = response.body {
            // Made for the range asked for: the range made is what is cut or corrupted.
            response.body = .ranged(ranged.mapping { [corrupt, stream, random = decision.random] body in
                FaultInjector.shaped(body, corrupt: corrupt, stream: stream, random: random) ?? body
            })
        } else if let shaped = FaultInjector.shaped(response.body, corrupt: corrupt, stream: stream, random: decision.random) {
            response.body = shaped
        }
    }

    /// `body` corrupted (`corrupt` bytes flipped) and paced, cut or stalled as `stream` says; nil
    /// for a body already made while sent.
    private static func shaped(_ body: HTTPResponse.Body, corrupt: Int?, stream: (bytesPerSecond: Int?, cutAfter: Int?, stall: Bool)?,
                               random: SplitMix) -> HTTPResponse.Body? {
        guard var bytes = body.contents else { return nil }
        if let corrupt, !bytes.isEmpty {
            var random = random
            for _ in 0..<corrupt {
                let index = Int(random.next() % UInt64(bytes.count))
                bytes[index] ^= UInt8(truncatingIfNeeded: random.next() | 1)  // never a no-op flip
            }
        }
        if let stream {
            return .stream(FaultInjector.shaped(bytes, bytesPerSecond: stream.bytesPerSecond, cutAfter: stream.cutAfter, stall: stream.stall))
        }
        return .bytes(bytes)
    }

    /// `bytes` (their full length announced) paced to `bytesPerSecond` in tenth-of-a-second
    /// pieces, broken off after `cutAfter` bytes, or stalled after the headers.
    static func shaped(_ bytes: [UInt8], bytesPerSecond: Int?, cutAfter: Int?, stall: Bool) -> BodyStream {
        let position = Locked((offset: 0, paused: false))
        let piece = bytesPerSecond.map { max(1, $0 / 10) }
        return BodyStream(length: UInt64(bytes.count)) { max in
            if stall { return .waitForSignal }  // never signalled: the body never comes
            return position.withLock { state in
                if let cutAfter, state.offset >= cutAfter { return .abort }
                if state.offset >= bytes.count { return .end }
                if piece != nil, state.offset > 0, !state.paused {
                    state.paused = true
                    return .waitFor(.milliseconds(100))
                }
                state.paused = false
                var end = min(bytes.count, state.offset + min(max, piece ?? max))
                if let cutAfter { end = min(end, cutAfter) }
                if end == state.offset { return .abort }
                defer { state.offset = end }
                return .bytes(Array(bytes[state.offset..<end]))
            }
        }
    }
}

/// Why a fault rule was refused: a stable `code` and a sentence.
public typealias FaultRuleError = BackendError<FaultRuleErrorCode>

/// The kinds of ``FaultRuleError``. A struct over a private enum, so kinds can be added later
/// without breaking anyone's exhaustive switch.
public struct FaultRuleErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Hashable, Sendable { case invalidRule, duplicateID }
    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// The rule cannot be used (`FaultRule.problem` says why).
    public static let invalidRule = FaultRuleErrorCode(.invalidRule)
    /// A rule with that id is in force already.
    public static let duplicateID = FaultRuleErrorCode(.duplicateID)

    /// The stable name of the kind, e.g. "duplicateID".
    public var description: String { base.rawValue }
}

/// A small, fast, seedable generator (SplitMix64): the same seed gives the same faults.
struct SplitMix: RandomNumberGenerator, Sendable {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
