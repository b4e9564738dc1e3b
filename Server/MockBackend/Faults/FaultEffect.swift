/// One thing a fault rule does to the answers it takes. A rule's JSON spells its effects as
/// optional members (`status`, `latency_ms`, `drop`, …: the admin API's wire format);
/// `FaultRule.effects` reads them into this type in one place, and everything else (validation,
/// the injector, the request log, the dashboard) goes by the list.
public enum FaultEffect: Sendable, Equatable, CustomStringConvertible {
    /// This error status (with the Playback API's error array, `FAULT_INJECTED`) answered instead of
    /// the request, which is not carried out; with a 503, `Retry-After: retryAfter` (seconds).
    case answer(status: Int, retryAfter: Int?)
    /// The answer waits `milliseconds`, and up to `jitterMilliseconds` more chosen at random.
    case wait(milliseconds: Int, jitterMilliseconds: Int?)
    /// The body sent at most this many bytes per second.
    case pace(bytesPerSecond: Int)
    /// The full length announced, then the connection closed after this many body bytes.
    case cut(afterBytes: Int)
    /// This many body bytes flipped at random places.
    case corrupt(bytes: Int)
    /// Headers, then nothing: the body never comes.
    case stall
    /// The connection closed before any answer (the request was carried out; its answer is lost).
    case drop

    /// The effect in words, as the request log and the dashboard show it: `503 (Retry-After 2)`,
    /// `200 ms + up to 50 ms`, `50000 B/s`, `cut after 4000 B`, `3 B corrupted`, `stalled`, `dropped`.
    public var description: String {
        switch self {
        case .answer(let status, let retryAfter): "\(status)" + (retryAfter.map { " (Retry-After \($0))" } ?? "")
        case .wait(let milliseconds, let jitter): "\(milliseconds) ms" + (jitter.map { " + up to \($0) ms" } ?? "")
        case .pace(let rate): "\(rate) B/s"
        case .cut(let bytes): "cut after \(bytes) B"
        case .corrupt(let bytes): "\(bytes) B corrupted"
        case .stall: "stalled"
        case .drop: "dropped"
        }
    }

    /// Effects in words, one after the other: `503, dropped`.
    static func describe(_ effects: [FaultEffect]) -> String {
        effects.map(\.description).joined(separator: ", ")
    }

    /// Whether the effects answer an error instead of carrying the request out: an `answer`
    /// without a `drop` (a dropped connection loses the answer of a request that was carried out,
    /// so the client cannot tell whether it was done).
    static func answerInstead(_ effects: [FaultEffect]) -> (status: Int, retryAfter: Int?)? {
        guard !effects.contains(.drop) else { return nil }
        for case .answer(let status, let retryAfter) in effects { return (status, retryAfter) }
        return nil
    }

    /// The effects with a `wait`'s jitter chosen by `jitter` (given the most it may add): what one
    /// request gets, for the injector and the request log.
    static func resolved(_ effects: [FaultEffect], jitter: (Int) -> Int) -> [FaultEffect] {
        effects.map { effect in
            guard case .wait(let milliseconds, let most?) = effect else { return effect }
            return .wait(milliseconds: milliseconds + jitter(most), jitterMilliseconds: nil)
        }
    }
}

extension FaultRule {
    /// What the rule does, in a fixed order (answer, wait, pace, cut, corrupt, stall, drop): the one
    /// place its optional effect members are read. Empty for a rule without an effect, which
    /// `problem` refuses. `retry_after` alone, `drop: false` and `stall: false` are no effect.
    public var effects: [FaultEffect] {
        var effects: [FaultEffect] = []
        if let status { effects.append(.answer(status: status, retryAfter: retryAfter)) }
        if latencyMs != nil || latencyJitterMs != nil {
            effects.append(.wait(milliseconds: latencyMs ?? 0, jitterMilliseconds: latencyJitterMs))
        }
        if let bytesPerSecond { effects.append(.pace(bytesPerSecond: bytesPerSecond)) }
        if let cutAfterBytes { effects.append(.cut(afterBytes: cutAfterBytes)) }
        if let corruptBytes { effects.append(.corrupt(bytes: corruptBytes)) }
        if stall == true { effects.append(.stall) }
        if drop == true { effects.append(.drop) }
        return effects
    }
}
