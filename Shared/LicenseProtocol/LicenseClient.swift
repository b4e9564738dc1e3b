public import Crypto
public import Foundation

/// The client side of the exchange: builds SPCs and opens the CKCs that answer them.
///
/// ```swift
/// let certificate = try ApplicationCertificate(derEncoded: certificateBytes)
/// let request = try LicenseClient.makeRequest(.acquire, certificate: certificate, accountID: "6415818918001",
///                                             contentKeyID: keyID, deviceID: deviceID)
/// // POST request.body() to the key_request_url; then, with the CKC that comes back:
/// let license = try request.open(ckc)
/// let stored = try license.sealed(deviceKey: deviceKey)   // what goes to disk
/// ```
public enum LicenseClient {
    /// A new SPC of `kind` with a fresh client key and nonce, created at `now` (give the
    /// server's time when talking to a mock whose clock was moved).
    public static func makeRequest(_ kind: LicenseRequestKind, certificate: ApplicationCertificate, accountID: String,
                                   contentKeyID: String, licenseID: String? = nil, deviceID: String,
                                   now: Date = Date()) throws(LicenseProtocolError) -> PendingLicenseRequest {
        let clientKey = P256.KeyAgreement.PrivateKey()
        var generator = SystemRandomNumberGenerator()
        let context = ServerPlaybackContext(
            kind: kind, accountID: accountID, contentKeyID: contentKeyID, licenseID: licenseID, deviceID: deviceID,
            nonce: (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) },
            createdAt: Milliseconds.date(Milliseconds.from(now)), clientKey: Array(clientKey.publicKey.x963Representation))
        try context.validate()
        return PendingLicenseRequest(context: context, spc: try context.sealed(to: certificate, clientKey: clientKey),
                                     certificate: certificate, clientKey: clientKey)
    }
}

/// An SPC on its way to the server, and what is needed to open the answer.
public struct PendingLicenseRequest: Sendable {
    /// What the SPC says.
    public let context: ServerPlaybackContext
    /// The SPC bytes.
    public let spc: [UInt8]
    /// The certificate the SPC is sealed to and the CKC must be signed by.
    public let certificate: ApplicationCertificate
    let clientKey: P256.KeyAgreement.PrivateKey

    /// The license request's JSON body: `{"publisher_id","application_id","key_id","server_playback_context"}`.
    public func body(publisherID: String = "", applicationID: String = "") -> [UInt8] {
        LicenseRequestBody(publisherID: publisherID, applicationID: applicationID, keyID: context.contentKeyID,
                           serverPlaybackContext: spc).encoded()
    }

    /// Verifies the CKC that answers this request and unwraps its content key.
    public func open(_ ckc: [UInt8]) throws(LicenseProtocolError) -> License {
        let (terms, key, iv) = try ContentKeyContext.open(ckc, certificate: certificate, clientKey: clientKey)
        guard terms.requestNonce == context.nonce, terms.deviceID == context.deviceID,
              terms.contentKeyID == context.contentKeyID, terms.accountID == context.accountID
        else { throw LicenseProtocolError(.responseMismatch, "the CKC answers another request") }
        return License(terms: terms, contentKey: key, iv: iv, ckc: ckc, certificate: certificate, clientKey: clientKey)
    }
}

/// A verified license in memory: its terms and the clear content key.
public struct License: Sendable {
    /// The signed terms.
    public let terms: LicenseTerms
    /// The AES-128 content key (16 bytes). Never write it to disk: store `sealed(deviceKey:)`.
    public let contentKey: [UInt8]
    /// The content IV (16 bytes).
    public let iv: [UInt8]
    /// The CKC as received.
    public let ckc: [UInt8]
    /// The certificate that signed the CKC.
    public let certificate: ApplicationCertificate
    let clientKey: P256.KeyAgreement.PrivateKey

    static let magic: [UInt8] = Array("MLIC".utf8)

    /// The persisted form: certificate, CKC and client private key, sealed with `deviceKey`
    /// (a 256-bit key that never leaves the device). Without it nothing reveals the content key.
    public func sealed(deviceKey: SymmetricKey) throws(LicenseProtocolError) -> [UInt8] {
        guard deviceKey.bitCount == 256 else { throw LicenseProtocolError(.invalidPayload, "the device key must be 256 bits") }
        var writer = ByteWriter()
        writer.append(Self.magic)
        writer.append([1])
        writer.appendUInt32(certificate.derEncoded.count)
        writer.append(certificate.derEncoded)
        writer.appendUInt32(ckc.count)
        writer.append(ckc)
        do {
            let box = try AES.GCM.seal(clientKey.rawRepresentation, using: deviceKey, authenticating: writer.bytes)
            writer.append(box.nonce)
            writer.append(box.ciphertext)
            writer.append(box.tag)
        } catch {
            throw LicenseProtocolError(.invalidPayload, "cannot seal the license: \(error)", underlying: error)
        }
        return writer.bytes
    }

    /// Opens a persisted license with the device key, verifying the CKC again.
    public init(sealed bytes: [UInt8], deviceKey: SymmetricKey) throws(LicenseProtocolError) {
        var reader = ByteReader(bytes)
        try reader.expectHeader(magic: Self.magic, version: 1, "stored license")
        let certificateBytes = try reader.read(try reader.readUInt32("certificate length"), "certificate")
        let ckc = try reader.read(try reader.readUInt32("CKC length"), "CKC")
        let aadEnd = reader.offset
        let nonce = try reader.read(12, "nonce")
        let wrapped = try reader.read(32, "wrapped client key")
        let tag = try reader.read(16, "tag")
        guard reader.remaining == 0 else { throw LicenseProtocolError(.malformed, "trailing bytes after the stored license") }
        let clientKey: P256.KeyAgreement.PrivateKey
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: wrapped, tag: tag)
            clientKey = try P256.KeyAgreement.PrivateKey(
                rawRepresentation: try AES.GCM.open(box, using: deviceKey, authenticating: bytes[0..<aadEnd]))
        } catch {
            throw LicenseProtocolError(.authenticationFailed, "the stored license does not open with this device key", underlying: error)
        }
        let certificate = try ApplicationCertificate(derEncoded: certificateBytes)
        let (terms, key, iv) = try ContentKeyContext.open(ckc, certificate: certificate, clientKey: clientKey)
        self.init(terms: terms, contentKey: key, iv: iv, ckc: ckc, certificate: certificate, clientKey: clientKey)
    }

    init(terms: LicenseTerms, contentKey: [UInt8], iv: [UInt8], ckc: [UInt8], certificate: ApplicationCertificate,
         clientKey: P256.KeyAgreement.PrivateKey) {
        self.terms = terms
        self.contentKey = contentKey
        self.iv = iv
        self.ckc = ckc
        self.certificate = certificate
        self.clientKey = clientKey
    }

    /// Reads a CKC's terms after checking its signature, without any private key.
    public static func verifiedTerms(ofCKC ckc: [UInt8], certificate: ApplicationCertificate) throws(LicenseProtocolError) -> LicenseTerms {
        try ContentKeyContext.verifiedTerms(ckc, certificate: certificate).0
    }
}
