import Foundation
import Locking
import WireModels

/// Generated bodies (video JSON, playlists with their digests) kept while the signed URLs
/// inside them are the ones the current time bucket would produce anyway. An entry is dropped
/// once its bucket has ended (its key, which names the bucket, is not asked for again); at most
/// `capacity` entries, full means start over.
final class ResponseCache: Sendable {
    private struct Entry {
        var body: [UInt8]
        /// Its `Repr-Digest`, for media bodies (playlists): computed once, with the body.
        var digest: ReprDigest?
        /// When the time bucket of the body's signed URLs ends.
        var validUntil: Date
    }

    private let entries = Locked<[String: Entry]>([:])
    private let capacity: Int

    init(capacity: Int = 512) { self.capacity = capacity }

    /// The cached body for `key`, or the one `make` builds, kept until `validUntil`. A miss
    /// (once per key and bucket) also drops the entries whose bucket ended by `now`.
    func body(for key: String, validUntil: Date, now: Date, make: () -> [UInt8]) -> [UInt8] {
        entry(for: key, validUntil: validUntil, now: now, digested: false, make: make).body
    }

    /// The same for a media body (a playlist), with its `Repr-Digest`: computed when the body
    /// is made and kept beside it, so a cached body is not hashed again.
    func media(for key: String, validUntil: Date, now: Date, make: () -> [UInt8]) -> (body: [UInt8], digest: ReprDigest) {
        let entry = entry(for: key, validUntil: validUntil, now: now, digested: true, make: make)
        return (entry.body, entry.digest ?? ReprDigest(of: entry.body))
    }

    private func entry(for key: String, validUntil: Date, now: Date, digested: Bool, make: () -> [UInt8]) -> Entry {
        if let hit = entries.withLock({ $0[key] }) { return hit }
        let body = make()
        let entry = Entry(body: body, digest: digested ? ReprDigest(of: body) : nil, validUntil: validUntil)
        entries.withLock { entries in
            entries = entries.filter { $0.value.validUntil > now }
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
        return entry
    }

    /// How many bodies are kept.
    var count: Int { entries.withLock { $0.count } }
}
