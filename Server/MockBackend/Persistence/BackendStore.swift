import Foundation
import LicenseProtocol
import WireModels

/// Everything the backend keeps, behind one store with two implementations: SQLite
/// (`SQLiteBackendStore`, embedded, the default) and PostgreSQL (`PostgresBackendStore`,
/// shared by several instances). The concerns are separate protocols so each caller names
/// only what it uses; `BackendStore` is all of them plus what spans them.
///
/// Every method is synchronous and may block on the database: it runs on the HTTP server's
/// threads (never on Swift's cooperative pool). Errors are the implementation's own
/// (GRDB's `DatabaseError`, `PostgresError`); routes turn them into a 500 or a 503.
typealias BackendStore = SecretStorage & LicenseStorage & CatalogEditStorage & TrackerStorage & PlaybackKeyStorage & SharedStateStorage
    & DashboardSessionStorage & OAuthClientStorage & IngestJobStorage & StoreMaintenance

/// The secrets every instance must agree on: settings (URL-token secret, admin token), the
/// content keys of protected videos, the FairPlay application certificates. Each is made
/// on first use; when two instances make one at once, both end up with the first stored.
protocol SecretStorage: Sendable {
    /// The value of setting `name`, made with `make()` and stored on first use.
    func setting(_ name: String, orCreate make: () -> [UInt8]) throws -> [UInt8]
    /// The content key of `videoID`, made (random key, key id and IV) on first use.
    func contentKey(videoID: String, now: Date) throws -> ContentKey
    /// The application certificate (DER) and private key of `accountID`, made with `make()`
    /// and stored on first use.
    func applicationIdentity(accountID: String, now: Date, orCreate make: () throws -> StoredIdentity) throws -> StoredIdentity
}

/// A FairPlay application certificate and its private key, as stored.
struct StoredIdentity: Sendable, Equatable {
    var certificate: [UInt8]
    var privateKey: [UInt8]
}

/// Licenses, their history, devices per user and used nonces.
protocol LicenseStorage: Sendable {
    /// Runs the policy on `request` and stores the outcome, atomically: the nonce is recorded
    /// (a nonce already recorded makes the policy refuse), the license and the user's devices
    /// are read, `LicensePolicy` decides, and the decision is written, so two concurrent
    /// requests (from any instance sharing the store) never both take a user's last device slot.
    /// `completion` gets the decision once it is stored (or the store's error): from the
    /// store's license writer thread when the request went into a batch, else before this returns.
    func submit(_ request: LicenseRequest, accountID: String, now: Date, completion: @escaping LicenseBatchWriter.Completion)
    /// A license by id.
    func license(id: String) throws -> LicenseRecord?
    /// The history of a license: (event, time) oldest first.
    func history(licenseID: String) throws -> [(event: String, at: Date)]
    /// The devices registered for a user.
    func devices(accountID: String, userID: String) throws -> Set<String>
    /// Licenses the filter admits, newest first, at most `limit`.
    func licenses(_ filter: LicenseFilter, now: Date, limit: Int) throws -> [LicenseRecord]
    /// Revokes a license (again: keeps the first time); nil when there is none.
    func revoke(id: String, now: Date) throws -> LicenseRecord?
    /// The full history of a license, for the admin API.
    func events(licenseID: String) throws -> [LicenseEvent]
    /// Registered devices of an account (of one user when given).
    func registeredDevices(accountID: String, userID: String?) throws -> [RegisteredDevice]
    /// Frees a device's slot (for one user when given); the number of registrations removed.
    func removeDevice(accountID: String, deviceID: String, userID: String?) throws -> Int
}

/// The admin API's catalog edits, laid over the catalog file at every start.
protocol CatalogEditStorage: Sendable {
    /// Every stored edit, in the order things were first edited.
    func catalogEdits() throws -> [LiveCatalog.Edit]
    /// Stores `edit`, replacing an earlier edit of the same thing in its place.
    func storeCatalogEdit(_ edit: LiveCatalog.Edit) throws
}

/// The analytics collector's events, each client event id stored once.
protocol TrackerStorage: Sendable {
    /// Stores the events whose ids are new, in one transaction; how many were new.
    func record(_ events: [TrackerEvent], receivedAt: Date) throws -> Int
    /// Events the filter admits, newest first, at most `limit`; and how many it admits in all.
    func events(_ filter: TrackerFilter, limit: Int) throws -> (events: [RecordedTrackerEvent], total: Int)
    /// How many events are stored.
    func trackerEventCount() throws -> Int
    /// Forgets every event.
    func clearTrackerEvents() throws
}

/// Public keys registered for playback-restriction tokens.
protocol PlaybackKeyStorage: Sendable {
    /// Every registered key.
    func playbackKeys() throws -> [StoredPlaybackKey]
    /// Registers a key; false when the account already has one with that id.
    func insertPlaybackKey(_ key: StoredPlaybackKey) throws -> Bool
    /// Removes a key; false when there was none.
    func deletePlaybackKey(accountID: String, id: String) throws -> Bool
}

/// Dashboard sessions ended before their expiry (signed out): each session's nonce, kept until
/// the session would have expired anyway, so every instance sharing the store refuses it.
protocol DashboardSessionStorage: Sendable {
    /// Records that the session with `nonce` has ended (again: nothing changes), and forgets
    /// the ended sessions that have expired by `now`.
    func endDashboardSession(nonce: String, expiresAt: Date, now: Date) throws
    /// Whether the session with `nonce` was ended.
    func isDashboardSessionEnded(nonce: String) throws -> Bool
}

/// A registered playback key as stored.
struct StoredPlaybackKey: Sendable {
    var accountID: String
    var id: String
    var publicKeyPEM: String
    var createdAt: Date
}

/// What instances sharing a store must agree on beyond its tables: state each keeps in
/// memory (the clock's offset, the fault rules) and changes after which each must reload
/// what it keeps (catalog edits, playback keys). One instance publishes a change; every
/// other hears of it (PostgreSQL: LISTEN/NOTIFY) and reloads. SQLite is one process: it
/// stores nothing here and tells nobody.
protocol SharedStateStorage: Sendable {
    /// The stored value of `topic`; nil when none was published (or the store is not shared).
    func sharedValue(_ topic: SharedTopic) throws -> [UInt8]?
    /// Stores `value` (when given) as `topic`'s and tells the other instances `topic` changed.
    func publish(_ topic: SharedTopic, value: [UInt8]?) throws
    /// From now on calls `onChange` (on a thread of its own) when another instance publishes a
    /// topic, and for every topic when the store comes back after a lost connection (changes
    /// may have been missed meanwhile). Stops at `close()`.
    func watchChanges(_ onChange: @escaping @Sendable (SharedTopic) -> Void)
}

/// What instances tell each other about.
enum SharedTopic: String, CaseIterable, Sendable {
    case catalog, clock, faults
    case playbackKeys = "playback_keys"
}

/// What spans the concerns.
protocol StoreMaintenance: Sendable {
    /// Whether the store answers now (readiness); throws what it fails with.
    func checkReady() throws
    /// Stops watching for changes and closes the connections (at shutdown); calls after it fail.
    func close()
    /// Forgets every catalog edit, license, license event, device, used nonce and analytics
    /// event in one transaction (keys, certificates, settings stay): `--reset` and
    /// `POST /_admin/v1/reset`.
    func forgetState() throws
    /// Where the data lives, for the start-up line and errors (a path, or a URL without its password).
    var location: String { get }
}

/// One entry of a license's history.
struct LicenseEvent: Sendable {
    var event: String
    var at: Date
    var kind: String?
    var expiresAt: Date?
    var firstPlay: Date?
}

/// A device registered for a user of an account (it holds one of the user's device slots).
struct RegisteredDevice: Sendable {
    var accountID: String
    var userID: String
    var deviceID: String
    var registeredAt: Date
}

/// Which licenses a listing wants (nil: any).
struct LicenseFilter: Sendable {
    var accountID, videoID, userID, deviceID, state: String?
}

/// Which analytics events a listing wants (nil: any).
struct TrackerFilter: Sendable {
    var accountID, videoID, event, token, session: String?

    /// The (column, value) pairs the filter sets, in one order both stores use.
    var conditions: [(column: String, value: String)] {
        [("account_id", accountID), ("video_id", videoID), ("event", event), ("token", token), ("session", session)]
            .compactMap { column, value in value.map { (column, $0) } }
    }
}

extension LicenseFilter {
    /// The (column, value) pairs the filter sets on the license table (`state` is computed, not stored).
    var conditions: [(column: String, value: String)] {
        [("account_id", accountID), ("video_id", videoID), ("user_id", userID), ("device_id", deviceID)]
            .compactMap { column, value in value.map { (column, $0) } }
    }
}

/// An analytics event as stored, with when it arrived.
struct RecordedTrackerEvent: Encodable {
    var event: TrackerEvent
    var receivedAt: Date

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(WireDate.string(from: receivedAt), forKey: .receivedAt)
    }

    enum Keys: String, CodingKey { case receivedAt = "received_at" }
}

/// A protected video's AES-128 key, its public key id (used in key URLs) and its IV.
struct ContentKey: Sendable, Equatable {
    var keyID: String
    var key: [UInt8]
    var iv: [UInt8]

    /// A new random key, key id and IV.
    static func random() -> ContentKey {
        ContentKey(keyID: UUID().uuidString.lowercased(), key: SecureBytes.random(16), iv: SecureBytes.random(16))
    }
}

/// Random bytes from the system's CSPRNG.
enum SecureBytes {
    static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// Whether two secrets are equal, in a time that does not depend on where they differ.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

/// License ids.
enum LicenseID {
    /// A UUID-shaped id whose first 48 bits are the time in milliseconds (as UUIDv7), so
    /// new licenses append to the end of the table's b-tree instead of dirtying random pages.
    static func timeOrdered(now: Date) -> String {
        var generator = SystemRandomNumberGenerator()  // two reads, not one syscall per byte
        let high = generator.next() as UInt64, low = generator.next() as UInt64
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: high >> (8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (8 * UInt64($0))) }
        let ms = UInt64(max(0, now.timeIntervalSince1970 * 1000))
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: ms >> (40 - 8 * UInt64(i))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return Hex.uuid(bytes)
    }
}

/// The catalog edit's stored form: kind, id, body (catalog.json form; nil for deleted).
extension LiveCatalog.Edit {
    var stored: (kind: String, id: String, body: Data?) {
        get throws {
            let encoder = JSONEncoder()
            switch self {
            case .account(let account): return ("account", account.id, try encoder.encode(account))
            case .video(let videoID, let video): return ("video", videoID, try video.map { try encoder.encode($0) })
            case .playlist(let playlistID, let playlist): return ("playlist", playlistID, try playlist.map { try encoder.encode($0) })
            }
        }
    }

    /// The edit of a stored row; nil for a kind this version does not know.
    init?(kind: String, id: String, body: Data?) throws {
        let decoder = JSONDecoder()
        switch kind {
        case "account":
            guard let body else { return nil }
            self = .account(try decoder.decode(CatalogFile.Account.self, from: body))
        case "video": self = .video(id: id, try body.map { try decoder.decode(CatalogFile.Video.self, from: $0) })
        case "playlist": self = .playlist(id: id, try body.map { try decoder.decode(CatalogFile.Playlist.self, from: $0) })
        default: return nil
        }
    }
}

extension TrackerEvent {
    /// The event's free-form details as stored (JSON), nil without any.
    var storedDetails: Data? { get throws { try details.map { try JSONEncoder().encode($0) } } }

    /// `details` read back from its stored form.
    static func details(stored: Data?) throws -> [String: JSONValue]? {
        try stored.map { try JSONDecoder().decode([String: JSONValue].self, from: $0) }
    }
}
