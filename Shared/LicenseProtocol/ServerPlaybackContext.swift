import Crypto
public import Foundation

/// What a client asks for with an SPC.
public enum LicenseRequestKind: String, Sendable, Codable, CaseIterable {
    /// A new license.
    case acquire
    /// New terms for an existing license (same license id).
    case renew
    /// The first playback of an existing license happened.
    case firstPlay = "first_play"
    /// The client gives the license back.
    case release
}

/// The decrypted contents of an SPC (docs/license-protocol.md, "SPC payload").
public struct ServerPlaybackContext: Sendable, Equatable {
    public static func == (lhs: ServerPlaybackContext, rhs: ServerPlaybackContext) -> Bool {
        lhs.kind == rhs.kind && lhs.accountID == rhs.accountID && lhs.contentKeyID == rhs.contentKeyID
            && lhs.licenseID == rhs.licenseID && lhs.deviceID == rhs.deviceID && lhs.nonce == rhs.nonce
            && lhs.createdAt == rhs.createdAt && lhs.clientKey == rhs.clientKey
    }

    /// Server side: the CKC wrapping key, derived from the same key agreement that opened
    /// the SPC, so answering costs no second ECDH.
    var wrappingKey: SymmetricKey?

    /// What the client asks for.
    public var kind: LicenseRequestKind
    /// The account whose certificate sealed the SPC.
    public var accountID: String
    /// The content key id (the key URL's last segment).
    public var contentKeyID: String
    /// The license concerned, for renew, first play and release.
    public var licenseID: String?
    /// The device's stable id.
    public var deviceID: String
    /// 16 random bytes, never reused.
    public var nonce: [UInt8]
    /// When the client made the SPC (millisecond precision).
    public var createdAt: Date
    /// The fresh P-256 public key the SPC is sealed with and the CKC wraps the content key
    /// for (X9.63, 65 bytes; the SPC header carries it).
    public var clientKey: [UInt8]

    /// Creates a payload.
    public init(kind: LicenseRequestKind, accountID: String, contentKeyID: String, licenseID: String?, deviceID: String,
                nonce: [UInt8], createdAt: Date, clientKey: [UInt8]) {
        self.kind = kind
        self.accountID = accountID
        self.contentKeyID = contentKeyID
        self.licenseID = licenseID
        self.deviceID = deviceID
        self.nonce = nonce
        self.createdAt = createdAt
        self.clientKey = clientKey
    }

    /// True when `id` is 1–128 characters of `A-Z a-z 0-9 . _ : -`.
    public static func isValidDeviceID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x3A || c == 0x2D
        }
    }

    // MARK: Wire form

    static let magic: [UInt8] = Array("MSPC".utf8)
    static let version: UInt8 = 1
    static let maximumSize = 4096
    static let headerSize = 102

    /// The JSON members, version 1.
    struct Payload: Codable, Equatable {
        var version: Int
        var kind: LicenseRequestKind
        var account_id: String
        var content_key_id: String
        var license_id: String?
        var device_id: String
        var nonce: String
        var created_at: Int64
    }

    func payloadBytes() throws(LicenseProtocolError) -> [UInt8] {
        try ProtocolJSON.encode(Payload(
            version: 1, kind: kind, account_id: accountID, content_key_id: contentKeyID, license_id: licenseID,
            device_id: deviceID, nonce: Data(nonce).base64EncodedString(), created_at: Milliseconds.from(createdAt)))
    }

    init(payload bytes: [UInt8], clientKey: [UInt8]) throws(LicenseProtocolError) {
        let p: Payload
        if let plain = Payload(plain: bytes) { p = plain } else { p = try ProtocolJSON.decode(Payload.self, bytes, "SPC payload") }
        guard p.version == 1 else { throw LicenseProtocolError(.invalidPayload, "unsupported SPC payload version \(p.version)") }
        guard let nonce = Data(base64Encoded: p.nonce) else {
            throw LicenseProtocolError(.invalidPayload, "nonce must be 16 bytes of base64")
        }
        guard let createdAt = Milliseconds.checkedDate(p.created_at) else {
            throw LicenseProtocolError(.invalidPayload, "created_at is out of range")
        }
        self.init(kind: p.kind, accountID: p.account_id, contentKeyID: p.content_key_id, licenseID: p.license_id,
                  deviceID: p.device_id, nonce: Array(nonce), createdAt: createdAt, clientKey: clientKey)
        try validate()
    }

    /// The rules every SPC payload meets: checked where one is made and where one is opened.
    func validate() throws(LicenseProtocolError) {
        guard nonce.count == 16 else { throw LicenseProtocolError(.invalidPayload, "nonce must be 16 bytes of base64") }
        guard ServerPlaybackContext.isValidDeviceID(deviceID) else {
            throw LicenseProtocolError(.invalidPayload, "device_id must be 1-128 of A-Z a-z 0-9 . _ : -")
        }
        guard !accountID.isEmpty, !contentKeyID.isEmpty else {
            throw LicenseProtocolError(.invalidPayload, "account_id and content_key_id are required")
        }
        if kind != .acquire, (licenseID ?? "").isEmpty {
            throw LicenseProtocolError(.invalidPayload, "\(kind.rawValue) needs a license_id")
        }
    }

    /// Seals this payload to `certificate` with the client key (the SPC bytes).
    func sealed(to certificate: ApplicationCertificate, clientKey: P256.KeyAgreement.PrivateKey) throws(LicenseProtocolError) -> [UInt8] {
        var writer = ByteWriter()
        writer.append(Self.magic)
        writer.append([Self.version])
        writer.append(certificate.hash)
        writer.append(clientKey.publicKey.x963Representation)
        let header = writer.bytes
        do {
            let shared = try clientKey.sharedSecretFromKeyAgreement(with: certificate.agreementKey)
            let key = ExchangeKeys(shared: shared, certificateHash: certificate.hash, clientKey: Array(clientKey.publicKey.x963Representation)).sealing
            let box = try AES.GCM.seal(try payloadBytes(), using: key, authenticating: header)
            writer.append(box.nonce)
            writer.append(box.ciphertext)
            writer.append(box.tag)
        } catch let error as LicenseProtocolError {
            throw error
        } catch {
            throw LicenseProtocolError(.invalidPayload, "cannot seal the SPC: \(error)", underlying: error)
        }
        return writer.bytes
    }

    /// Opens an SPC with the certificate's private key.
    static func open(_ spc: [UInt8], certificate: ApplicationCertificate,
                     privateKey: P256.KeyAgreement.PrivateKey) throws(LicenseProtocolError) -> ServerPlaybackContext {
        guard spc.count <= maximumSize else { throw LicenseProtocolError(.malformed, "SPC over \(maximumSize) bytes") }
        var reader = ByteReader(spc)
        try reader.expectHeader(magic: magic, version: version, "SPC")
        guard try reader.read(32, "SPC certificate hash") == certificate.hash else {
            throw LicenseProtocolError(.certificateMismatch, "the SPC is sealed to another application certificate")
        }
        let clientKey = try reader.read(65, "SPC client key")
        let nonce = try reader.read(12, "SPC nonce")
        guard reader.remaining >= 16 else { throw LicenseProtocolError(.malformed, "truncated SPC ciphertext") }
        let ciphertext = try reader.read(reader.remaining - 16, "SPC ciphertext")
        let tag = try reader.read(16, "SPC tag")
        let plaintext: Data
        let wrappingKey: SymmetricKey
        do {
            let publicKey = try P256.KeyAgreement.PublicKey(x963Representation: clientKey)
            let shared = try privateKey.sharedSecretFromKeyAgreement(with: publicKey)
            let keys = ExchangeKeys(shared: shared, certificateHash: certificate.hash, clientKey: clientKey)
            let key = keys.sealing
            wrappingKey = keys.wrapping
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext, tag: tag)
            plaintext = try AES.GCM.open(box, using: key, authenticating: Array(spc[0..<headerSize]))
        } catch {
            throw LicenseProtocolError(.authenticationFailed, "the SPC does not open: tampered with or not for this certificate", underlying: error)
        }
        var context = try ServerPlaybackContext(payload: Array(plaintext), clientKey: clientKey)
        context.wrappingKey = wrappingKey
        return context
    }
}

extension ServerPlaybackContext.Payload {
    /// The payload read without `JSONDecoder` (`PlainJSONObject`); nil when it needs `JSONDecoder`.
    init?(plain bytes: [UInt8]) {
        guard let object = PlainJSONObject(bytes), let version = object.integer("version"), let version = Int(exactly: version),
              let kind = object.string("kind").flatMap(LicenseRequestKind.init(rawValue:)),
              let account = object.string("account_id"), let contentKey = object.string("content_key_id"),
              let license = object.optionalString("license_id"), let device = object.string("device_id"),
              let nonce = object.string("nonce"), let createdAt = object.integer("created_at")
        else { return nil }
        self.init(version: version, kind: kind, account_id: account, content_key_id: contentKey, license_id: license,
                  device_id: device, nonce: nonce, created_at: createdAt)
    }
}
