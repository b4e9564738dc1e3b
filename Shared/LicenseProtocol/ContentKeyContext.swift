import Crypto
import Foundation

/// The CKC: signed terms and the content key wrapped for the client key
/// (docs/license-protocol.md, "CKC").
enum ContentKeyContext {
    static let magic: [UInt8] = Array("MCKC".utf8)
    static let version: UInt8 = 1
    static let maximumTermsSize = 8192

    /// Builds and signs a CKC.
    static func make(terms: LicenseTerms, contentKey: [UInt8], iv: [UInt8], wrappingKey key: SymmetricKey,
                     signingKey: P256.Signing.PrivateKey) throws(LicenseProtocolError) -> [UInt8] {
        guard contentKey.count == 16, iv.count == 16 else { throw LicenseProtocolError(.invalidPayload, "content key and IV must be 16 bytes") }
        let termsBytes = terms.jsonBytes()
        var writer = ByteWriter()
        writer.append(magic)
        writer.append([version])
        writer.appendUInt32(termsBytes.count)
        writer.append(termsBytes)
        do {
            let box = try AES.GCM.seal(contentKey + iv, using: key, authenticating: writer.bytes)
            writer.append(box.nonce)
            writer.append(box.ciphertext)
            writer.append(box.tag)
            writer.append(try signingKey.signature(for: writer.bytes).rawRepresentation)
        } catch {
            throw LicenseProtocolError(.invalidPayload, "cannot build the CKC: \(error)", underlying: error)
        }
        return writer.bytes
    }

    /// Verifies a CKC's signature and reads its terms, without unwrapping the key.
    static func verifiedTerms(_ ckc: [UInt8], certificate: ApplicationCertificate) throws(LicenseProtocolError) -> (LicenseTerms, ByteReader) {
        var reader = ByteReader(ckc)
        try reader.expectHeader(magic: magic, version: version, "CKC")
        let length = try reader.readUInt32("CKC terms length")
        guard length <= maximumTermsSize, ckc.count == 9 + length + 124 else {
            throw LicenseProtocolError(.malformed, "CKC length does not match its terms length")
        }
        let signed = ckc[0..<(ckc.count - 64)]
        let signature = ckc[(ckc.count - 64)...]
        guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              certificate.signingKey.isValidSignature(ecdsa, for: signed)
        else { throw LicenseProtocolError(.authenticationFailed, "the CKC signature does not verify against the certificate") }
        let termsBytes = try reader.read(length, "CKC terms")
        return (try ProtocolJSON.decode(LicenseTerms.self, termsBytes, "CKC terms"), reader)
    }

    /// Verifies a CKC and unwraps its content key and IV with the client's private key.
    static func open(_ ckc: [UInt8], certificate: ApplicationCertificate,
                     clientKey: P256.KeyAgreement.PrivateKey) throws(LicenseProtocolError) -> (terms: LicenseTerms, key: [UInt8], iv: [UInt8]) {
        let (terms, termsReader) = try verifiedTerms(ckc, certificate: certificate)
        var reader = termsReader
        let aadEnd = reader.offset
        let nonce = try reader.read(12, "CKC nonce")
        let wrapped = try reader.read(32, "CKC wrapped key")
        let tag = try reader.read(16, "CKC tag")
        let clear: Data
        do {
            let key = try ExchangeKeys(shared: clientKey.sharedSecretFromKeyAgreement(with: certificate.agreementKey),
                                       certificateHash: certificate.hash, clientKey: Array(clientKey.publicKey.x963Representation)).wrapping
            clear = try AES.GCM.open(AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: wrapped, tag: tag),
                                     using: key, authenticating: ckc[0..<aadEnd])
        } catch {
            throw LicenseProtocolError(.authenticationFailed, "the content key does not unwrap with this client key", underlying: error)
        }
        return (terms, Array(clear.prefix(16)), Array(clear.suffix(16)))
    }
}
