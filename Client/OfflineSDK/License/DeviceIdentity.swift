import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SystemFiles
import WireModels

/// This device's secret identity, the stand-in for a platform keychain: a random 256-bit
/// secret kept outside the offline store (a file only its user can read, made on first use),
/// bound to the machine by mixing in its machine id. From it come the key stored licenses are
/// sealed with, the key that MACs every stored value deciding an expiry (a record's license
/// fields, its first play, the trusted-time mark), and a public fingerprint (`binding`) those
/// values are stamped with, so a copied storage folder reads as "another device", not as edited.
///
/// What it protects against: editing `offline.sqlite` (any single value), copying the storage
/// folder, or the folder and the secret, to another machine. What it cannot: the same user or
/// root on the same machine restoring a whole earlier copy of both, or reading the secret (no
/// secure hardware stands behind it on Linux). docs/sdk.md: "What the device enforces".
struct DeviceIdentity: Sendable {
    /// Public: which device stamped a stored value (16 hex digits).
    let binding: String
    /// Seals stored licenses (`License.sealed(deviceKey:)`).
    let licenseKey: SymmetricKey
    /// MACs stored values that decide an expiry.
    let recordKey: SymmetricKey

    /// Where the secret is kept, and where the machine id is read from.
    struct Source: Sendable, Equatable {
        var secretFile: URL
        /// The first of these that holds a machine id is used; none: the secret alone.
        var machineIDFiles: [String] = Source.standardMachineIDFiles

        /// Where systemd and D-Bus keep the machine id.
        static let standardMachineIDFiles = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
    }

    init(secret: [UInt8], machineID: String) {
        let master = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: secret), salt: Array("OfflineSDK device v1".utf8),
                                            info: Array("machine:\(machineID)".utf8), outputByteCount: 32)
        func derive(_ label: String) -> SymmetricKey {
            HKDF<SHA256>.deriveKey(inputKeyMaterial: master, info: Array(label.utf8), outputByteCount: 32)
        }
        licenseKey = derive("license-seal")
        recordKey = derive("record-mac")
        binding = Hex.lowercase(Array(HMAC<SHA256>.authenticationCode(for: Array("binding".utf8), using: master)).prefix(8))
    }

    /// Reads (or, the first time, makes) the secret and the machine id.
    static func load(_ source: Source) throws(OfflineVideoError) -> DeviceIdentity {
        PoolCheck.note()
        let secret = try DeviceSecretFile.read(source.secretFile)
        let machineID = source.machineIDFiles.lazy.compactMap { path -> String? in
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            return id.isEmpty ? nil : id
        }.first ?? ""
        return DeviceIdentity(secret: secret, machineID: machineID)
    }

    // MARK: Stamps

    /// The stamp of a record's license fields: `binding.mac`.
    func stamp(_ fields: LicenseFields) -> String {
        binding + "." + mac(fields.bytes)
    }

    /// The stamped form of the trusted-time mark: `time mac`.
    func stampMark(_ time: Double) -> Data {
        Data("\(time) \(mac(Self.markBytes(time)))".utf8)
    }

    /// The time of a stamped mark, nil when it was edited (or stamped by another device).
    func openMark(_ stored: Data) -> Double? {
        let parts = String(decoding: stored, as: UTF8.self).split(separator: " ")
        guard parts.count == 2, let time = Double(parts[0]), time.isFinite else { return nil }
        return constantTimeEqual(String(parts[1]), mac(Self.markBytes(time))) ? time : nil
    }

    /// Whether a record's stored stamp is this device's and matches its license fields.
    func check(_ fields: LicenseFields, stamp: String?) -> StampCheck {
        guard !fields.isEmpty else { return .valid }
        guard let stamp, let dot = stamp.firstIndex(of: ".") else { return .altered }
        guard stamp[..<dot] == binding else { return .otherDevice }
        return constantTimeEqual(String(stamp[stamp.index(after: dot)...]), mac(fields.bytes)) ? .valid : .altered
    }

    enum StampCheck: Equatable { case valid, altered, otherDevice }

    /// The setting the mark is kept under: one per device, so a copied folder's mark is not this device's.
    var markSetting: String { "trusted_time." + binding }
    /// The setting this device's license-server device id is kept under.
    var deviceIDSetting: String { "device_id." + binding }

    private func mac(_ bytes: [UInt8]) -> String {
        Hex.lowercase(Array(HMAC<SHA256>.authenticationCode(for: bytes, using: recordKey)))
    }

    private static func markBytes(_ time: Double) -> [UInt8] {
        Array("trusted-time\u{0}".utf8) + withUnsafeBytes(of: time.bitPattern.bigEndian, Array.init)
    }

    private func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// The stored values of a download record that decide whether and until when it plays: what
/// the device's stamp covers. Length-prefixed, so no two field sets share bytes.
struct LicenseFields: Equatable, Sendable {
    var token: String
    var videoID: String
    var accountID: String
    var license: Data?
    var terms: Data?
    var expiresAt: Double?
    var firstPlay: Double?

    init(_ record: DownloadRecord) {
        token = record.token
        videoID = record.videoID
        accountID = record.accountID
        license = record.license
        terms = record.licenseTerms
        expiresAt = record.licenseExpiresAt
        firstPlay = record.initialPlaybackAt
    }

    /// No license and no first play: nothing to stamp.
    var isEmpty: Bool { license == nil && terms == nil && expiresAt == nil && firstPlay == nil }

    var bytes: [UInt8] {
        var out = Array("license-fields v1".utf8)
        func add(_ value: [UInt8]?) {
            guard let value else { return out.append(0) }
            out.append(1)
            out += withUnsafeBytes(of: UInt64(value.count).bigEndian, Array.init)
            out += value
        }
        func add(_ number: Double?) { add(number.map { withUnsafeBytes(of: $0.bitPattern.bigEndian, Array.init) }) }
        add(Array(token.utf8))
        add(Array(videoID.utf8))
        add(Array(accountID.utf8))
        add(license.map(Array.init))
        add(terms.map(Array.init))
        add(expiresAt)
        add(firstPlay)
        return out
    }
}

/// The device secret's file: 32 random bytes, mode 0600 in a folder of mode 0700, owned by the
/// user; made on first use by one process (link(2) decides a race), refused when others may
/// read it (as ssh refuses such a key) or when it is damaged.
enum DeviceSecretFile {
    static func read(_ url: URL) throws(OfflineVideoError) -> [UInt8] {
        let path = url.path
        if let secret = try existing(path) { return secret }
        try create(path)
        guard let secret = try existing(path) else {
            throw failure("Cannot read the device secret \(path) just made")
        }
        return secret
    }

    private static func existing(_ path: String) throws(OfflineVideoError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw failure("Cannot open the device secret \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        guard let status = FileStatus(descriptor: descriptor), status.isRegularFile else {
            throw failure("The device secret \(path) is not a regular file")
        }
        guard status.owner == geteuid() else { throw failure("The device secret \(path) belongs to another user") }
        guard status.permissions & 0o077 == 0 else {
            throw failure("The device secret \(path) may be read by other users (mode \(String(status.permissions & 0o777, radix: 8))); "
                            + "licenses are not opened with it: chmod 600 it if it never left this user, else delete it and renew the licenses")
        }
        var bytes = [UInt8](repeating: 0, count: 33)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, 33) }
        guard count == 32 else { throw failure("The device secret \(path) is damaged (\(max(count, 0)) bytes, not 32)") }
        return Array(bytes.prefix(32))
    }

    private static func create(_ path: String) throws(OfflineVideoError) {
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw failure("Cannot make the folder of the device secret \(folder): \(error)")
        }
        let temporary = path + ".\(getpid()).\(UUID().uuidString.prefix(8))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw failure("Cannot write the device secret \(path): \(String(cString: strerror(errno)))") }
        defer { unlink(temporary) }
        let secret = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let written = secret.withUnsafeBytes { write(descriptor, $0.baseAddress, 32) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == 32, synced else { throw failure("Cannot write the device secret \(path): \(String(cString: strerror(errno)))") }
        // Another process may have made it meanwhile: the first link wins, everyone reads it.
        guard link(temporary, path) == 0 || errno == EEXIST else {
            throw failure("Cannot put the device secret in place at \(path): \(String(cString: strerror(errno)))")
        }
    }

    private static func failure(_ message: String) -> OfflineVideoError {
        OfflineVideoError(.invalidLicense, .deviceSecret, message)
    }
}
