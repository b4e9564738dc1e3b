import Crypto
public import Foundation
import X509
import SwiftASN1

/// An account's application certificate: an X.509 certificate (DER) whose P-256 public key
/// seals SPCs, wraps content keys and verifies CKC signatures.
public struct ApplicationCertificate: Sendable, Equatable {
    /// The certificate as served, DER.
    public let derEncoded: [UInt8]
    /// SHA-256 of `derEncoded`: the certificate hash every SPC names.
    public let hash: [UInt8]
    /// The end of the certificate's validity.
    public let notValidAfter: Date
    let signingKey: P256.Signing.PublicKey
    let agreementKey: P256.KeyAgreement.PublicKey

    /// Parses a DER certificate and checks that its key is a P-256 key.
    public init(derEncoded: [UInt8]) throws(LicenseProtocolError) {
        let certificate: Certificate
        do { certificate = try Certificate(derEncoded: derEncoded) } catch {
            throw LicenseProtocolError(.invalidCertificate, "not a DER X.509 certificate: \(error)", underlying: error)
        }
        guard let key = P256.Signing.PublicKey(certificate.publicKey),
              let agreement = try? P256.KeyAgreement.PublicKey(rawRepresentation: key.rawRepresentation)
        else { throw LicenseProtocolError(.invalidCertificate, "the certificate's key is not a P-256 key") }
        self.derEncoded = derEncoded
        hash = Array(SHA256.hash(data: derEncoded))
        notValidAfter = certificate.notValidAfter
        signingKey = key
        agreementKey = agreement
    }

    public static func == (lhs: ApplicationCertificate, rhs: ApplicationCertificate) -> Bool { lhs.derEncoded == rhs.derEncoded }
}
