import Foundation
import Locking

/// Generated bodies (video JSON, playlists) kept while the signed URLs inside them are the
/// ones the current time bucket would produce anyway. Bounded: full means start over.
final class ResponseCache: Sendable {
    private let entries = Locked<[String: [UInt8]]>([:])
    private let capacity: Int

    init(capacity: Int = 512) { self.capacity = capacity }

    /// The cached body for `key`, or the one `make` builds (then cached).
    func body(for key: String, make: () -> [UInt8]) -> [UInt8] {
        if let hit = entries.withLock({ $0[key] }) { return hit }
        let body = make()
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = body
        }
        return body
    }
}
