import Crypto
public import Foundation
import X509
import SwiftASN1

/// The server side: an account's certificate and private key. Opens SPCs, makes CKCs.
public struct LicenseServerIdentity: Sendable {
    /// The certificate clients seal SPCs to.
    public let certificate: ApplicationCertificate
    let signingKey: P256.Signing.PrivateKey
    let agreementKey: P256.KeyAgreement.PrivateKey

    /// Restores an identity from its certificate DER and the 32-byte P-256 private key.
    public init(certificateDER: [UInt8], privateKey: [UInt8]) throws(LicenseProtocolError) {
        certificate = try ApplicationCertificate(derEncoded: certificateDER)
        do {
            signingKey = try P256.Signing.PrivateKey(rawRepresentation: privateKey)
            agreementKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: privateKey)
        } catch {
            throw LicenseProtocolError(.invalidCertificate, "not a P-256 private key", underlying: error)
        }
        guard signingKey.publicKey.rawRepresentation == certificate.signingKey.rawRepresentation else {
            throw LicenseProtocolError(.invalidCertificate, "the private key does not match the certificate")
        }
    }

    /// The 32-byte private key, to store beside the certificate.
    public var privateKey: [UInt8] { Array(signingKey.rawRepresentation) }

    /// Makes a new self-signed application certificate (X.509 v3, ECDSA P-256 with SHA-256,
    /// valid 20 years from `now`, key usage digitalSignature + keyAgreement) and its key.
    public static func generate(accountID: String, now: Date) throws -> LicenseServerIdentity {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName("Mock FairPlay Application Certificate \(accountID)")
            OrganizationName("Mock Video Cloud")
        }
        let publicKey = Certificate.PublicKey(key.publicKey)
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(20 * 365 * 86400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true, keyAgreement: true))
                SubjectKeyIdentifier(hash: publicKey)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        let der = try certificate.serializeAsPEM().derBytes
        return try LicenseServerIdentity(certificateDER: der, privateKey: Array(key.rawRepresentation))
    }

    /// Opens and checks an SPC sealed to this certificate.
    public func open(spc: [UInt8]) throws(LicenseProtocolError) -> ServerPlaybackContext {
        try ServerPlaybackContext.open(spc, certificate: certificate, privateKey: agreementKey)
    }

    /// A signed CKC carrying `terms` and the content key wrapped for the SPC's client key.
    public func makeCKC(terms: LicenseTerms, contentKey: [UInt8], iv: [UInt8],
                        for context: ServerPlaybackContext) throws(LicenseProtocolError) -> [UInt8] {
        let wrappingKey: SymmetricKey
        if let key = context.wrappingKey {
            wrappingKey = key
        } else {
            guard let clientKey = try? P256.KeyAgreement.PublicKey(x963Representation: context.clientKey),
                  let shared = try? agreementKey.sharedSecretFromKeyAgreement(with: clientKey)
            else { throw LicenseProtocolError(.invalidPayload, "the SPC's client key is not a P-256 key") }
            wrappingKey = ExchangeKeys(shared: shared, certificateHash: certificate.hash, clientKey: context.clientKey).wrapping
        }
        return try ContentKeyContext.make(terms: terms, contentKey: contentKey, iv: iv, wrappingKey: wrappingKey, signingKey: signingKey)
    }
}
