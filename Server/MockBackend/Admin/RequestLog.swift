public import Foundation
import Locking
import MicroHTTP
import WireModels

/// The last requests the backend answered, newest last, for the admin API: what a test asks
/// "what did my app send, and what did it get?", and follows live.
public final class RequestLog: Sendable {
    /// One request as the log keeps it.
    public struct Entry: Codable, Sendable, Equatable {
        public var id: Int
        public var time: Date
        public var method: String
        /// Path and query, with secret values replaced by `…` (`SecretRedaction`).
        public var path: String

        /// With the secrets in `path` replaced.
        var redacted: Entry {
            var entry = self
            entry.path = SecretRedaction.redact(path)
            return entry
        }
        public var status: Int
        public var bytes: UInt64
        public var durationMs: Double
        /// Whether the whole answer went out: false from when the answer is handed to the
        /// connection (the entry is recorded then) until its last byte left.
        public var completed: Bool
        /// The fault applied, if one was.
        public var fault: String?

        enum CodingKeys: String, CodingKey {
            case id, time, method, path, status, bytes, completed, fault
            case durationMs = "duration_ms"
        }
    }

    /// Which entries a listing or a stream wants.
    public struct Filter: Sendable {
        public var pathPrefix: String?
        public var status: Int?
        /// Only entries with a larger id.
        public var after: Int?

        /// Every entry, or those under a path, with a status, after an id.
        public init(pathPrefix: String? = nil, status: Int? = nil, after: Int? = nil) {
            self.pathPrefix = pathPrefix
            self.status = status
            self.after = after
        }

        func admits(_ entry: Entry) -> Bool {
            (pathPrefix.map { entry.path.hasPrefix($0) } ?? true) && (status.map { $0 == entry.status } ?? true)
                && (after.map { entry.id > $0 } ?? true)
        }
    }

    /// A live follower: its filter, what its stream has still to send, and the stream (held
    /// weakly: the connection owns it, and when that ends the follower is dropped).
    private struct Follower: Sendable {
        let filter: Filter
        let outbox: Locked<Outbox>
        weak var stream: BodyStream?
    }

    /// What a follower's stream sends next: entries, a keep-alive comment, or its end.
    private struct Outbox: Sendable {
        var entries: [Entry]
        var keepAlive = false
        var closing = false
    }

    /// How often a quiet stream sends a comment: the client sees the stream is alive, and
    /// the server sees a client that went away (the write fails) and frees its connection.
    static let keepAliveInterval: Duration = .seconds(15)

    /// The entries kept (the oldest go first).
    public let capacity: Int
    /// `pending`: the entries of answers still going out, by request serial → entry id.
    private let state: Locked<(entries: Ring, next: Int, followers: [Follower], closed: Bool, pending: [UInt64: Int])>
    /// Sends keep-alives while anyone follows.
    private let keepAlive = Locked<Task<Void, Never>?>(nil)

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Locked((Ring(capacity: self.capacity), 1, [], false, [:]))
    }

    /// The kept entries: a fixed ring, so recording (on every request) moves nothing. They
    /// keep the target as it arrived; secrets are redacted when an entry is read.
    struct Ring: Sendable {
        private var slots: [Entry] = []
        private var start = 0
        let capacity: Int
        init(capacity: Int) { self.capacity = capacity }

        mutating func append(_ entry: Entry) {
            if slots.count < capacity {
                slots.append(entry)
            } else {
                slots[start] = entry
                start = (start + 1) % capacity
            }
        }

        /// Oldest first, redacted.
        var ordered: [Entry] {
            (slots[start...] + slots[..<start]).map(\.redacted)
        }

        /// Changes the entry with `id`, if it is still kept. Ids are kept in a contiguous run,
        /// oldest first from `start`, so its slot is found by arithmetic.
        mutating func update(id: Int, _ change: (inout Entry) -> Void) {
            guard !slots.isEmpty else { return }
            let offset = id - slots[start].id
            guard offset >= 0, offset < slots.count else { return }
            let index = (start + offset) % slots.count
            if slots[index].id == id { change(&slots[index]) }
        }

        mutating func removeAll() {
            slots = []
            start = 0
        }
    }

    /// Records a request whose answer is about to go out (the HTTP server's answer observer,
    /// called before any byte of it leaves): a client that holds its answer finds it here.
    /// `completed` stays false until `record` updates the entry when the answer ended.
    func recordAnswer(_ request: CompletedRequest, at time: Date) {
        state.withLock { state in
            state.pending[request.serial] = state.next
            state.entries.append(Entry(id: state.next, time: time, method: request.method, path: request.target,
                                       status: request.status, bytes: request.bytesSent, durationMs: Self.milliseconds(request.duration),
                                       completed: false, fault: request.note))
            state.next += 1
        }
    }

    /// Records a finished request (called by the HTTP server's completion observer): updates
    /// the entry its answer made, or adds one when it had none (a dropped connection). Followers
    /// get the entry now, as it ended.
    func record(_ request: CompletedRequest, at time: Date) {
        let followers = state.withLock { state -> [Follower] in
            var entry = Entry(id: state.next, time: time, method: request.method, path: request.target,
                              status: request.status, bytes: request.bytesSent, durationMs: Self.milliseconds(request.duration),
                              completed: request.completed, fault: request.note)
            if let id = state.pending.removeValue(forKey: request.serial) {
                entry.id = id
                // Its time becomes the answer's end, as its duration does: time - duration is when it arrived.
                state.entries.update(id: id) { kept in kept = entry }
            } else {
                state.next += 1
                state.entries.append(entry)
            }
            guard !state.followers.isEmpty else { return [] }
            state.followers.removeAll { $0.stream == nil }
            let redacted = entry.redacted
            let admitting = state.followers.filter { $0.filter.admits(redacted) }
            for follower in admitting { follower.outbox.withLock { $0.entries.append(redacted) } }
            return admitting
        }
        for follower in followers { follower.stream?.signal() }
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return (milliseconds * 10).rounded() / 10
    }

    /// The kept entries a filter admits, oldest first, at most `limit` (the newest).
    public func entries(_ filter: Filter = Filter(), limit: Int = .max) -> [Entry] {
        let all = state.withLock { $0.entries }.ordered.filter(filter.admits)
        return Array(all.suffix(max(0, limit)))
    }

    /// Forgets every entry (ids go on counting).
    public func clear() {
        state.withLock { $0.entries.removeAll() }
    }

    /// A server-sent-events body that carries every entry the filter admits from now on (and
    /// the kept ones after `filter.after`, when given), one `request` event each, with a
    /// comment line when nothing happened for `keepAliveInterval`. Nil once the log is closed.
    func follow(_ filter: Filter) -> BodyStream? {
        let stream = state.withLock { state -> BodyStream? in
            guard !state.closed else { return nil }
            // Answers still going out are left to their end, when every follower gets them.
            let pending = Set(state.pending.values)
            let outbox = Locked(Outbox(entries: filter.after == nil ? []
                : state.entries.ordered.filter { filter.admits($0) && !pending.contains($0.id) }))
            let stream = BodyStream(length: nil) { max in
                let next = outbox.withLock { box -> (entry: Entry?, keepAlive: Bool, end: Bool) in
                    if !box.entries.isEmpty { return (box.entries.removeFirst(), false, false) }
                    defer { box.keepAlive = false }
                    return (nil, box.keepAlive, box.closing)
                }
                if let entry = next.entry {
                    let json = (try? WireJSON.encoder(sortedKeys: true).encode(entry)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
                    return .bytes(Array("id: \(entry.id)\nevent: request\ndata: \(json)\n\n".utf8.prefix(max)))
                }
                if next.end { return .end }
                return next.keepAlive ? .bytes(Array(": keep-alive\n\n".utf8.prefix(max))) : .waitForSignal
            }
            state.followers.append(Follower(filter: filter, outbox: outbox, stream: stream))
            return stream
        }
        if stream != nil { startKeepAlive() }
        return stream
    }

    /// Ends every stream (after what it has still to send) and refuses new ones: the server
    /// is shutting down, and open-ended streams would hold it for its whole grace period.
    func close() {
        let followers = state.withLock { state -> [Follower] in
            state.closed = true
            defer { state.followers = [] }
            return state.followers
        }
        for follower in followers {
            follower.outbox.withLock { $0.closing = true }
            follower.stream?.signal()
        }
        keepAlive.withLock { $0?.cancel(); $0 = nil }
    }

    /// Starts the keep-alive loop unless it runs; it stops itself when no one follows.
    private func startKeepAlive() {
        keepAlive.withLock { task in
            guard task == nil else { return }
            task = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: RequestLog.keepAliveInterval)
                    guard let self, !Task.isCancelled else { return }
                    if !self.sendKeepAlives() { return }
                }
            }
        }
    }

    /// Asks every live stream for a keep-alive; false (and the loop forgotten) when none is left.
    private func sendKeepAlives() -> Bool {
        // Checked and forgotten under one lock: a follower added meanwhile starts a new loop.
        let followers = keepAlive.withLock { task -> [Follower] in
            let followers = state.withLock { state -> [Follower] in
                state.followers.removeAll { $0.stream == nil }
                return state.followers
            }
            if followers.isEmpty { task = nil }
            return followers
        }
        guard !followers.isEmpty else { return false }
        for follower in followers {
            follower.outbox.withLock { $0.keepAlive = true }
            follower.stream?.signal()
        }
        return true
    }
}
