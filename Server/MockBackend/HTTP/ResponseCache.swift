import Foundation
import Locking

/// Generated bodies (video JSON, playlists) kept while the signed URLs inside them are the
/// ones the current time bucket would produce anyway. An entry is dropped once its bucket has
/// ended (its key, which names the bucket, is not asked for again); at most `capacity` entries,
/// full means start over.
final class ResponseCache: Sendable {
    private struct Entry {
        var body: [UInt8]
        /// When the time bucket of the body's signed URLs ends.
        var validUntil: Date
    }

    private let entries = Locked<[String: Entry]>([:])
    private let capacity: Int

    init(capacity: Int = 512) { self.capacity = capacity }

    /// The cached body for `key`, or the one `make` builds, kept until `validUntil`. A miss
    /// (once per key and bucket) also drops the entries whose bucket ended by `now`.
    func body(for key: String, validUntil: Date, now: Date, make: () -> [UInt8]) -> [UInt8] {
        if let hit = entries.withLock({ $0[key] }) { return hit.body }
        let body = make()
        entries.withLock { entries in
            entries = entries.filter { $0.value.validUntil > now }
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(body: body, validUntil: validUntil)
        }
        return body
    }

    /// How many bodies are kept.
    var count: Int { entries.withLock { $0.count } }
}
