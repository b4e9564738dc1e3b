import Crypto
import WireModels

/// Deterministic UUIDs for URLs (video, rendition, text-track ids): the same catalog always
/// yields the same URLs, so clients and tests can rely on them across restarts.
enum StableID {
    /// A version-5-shaped UUID string (lowercase) derived from SHA-256 of `name`.
    static func uuid(_ name: String) -> String {
        var bytes = Array(SHA256.hash(data: Array(name.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return Hex.uuid(bytes)
    }
}
