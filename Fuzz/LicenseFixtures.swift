import Crypto
import Foundation
import LicenseProtocol

/// A fixed application certificate, server key, client key and device key, so that SPCs, CKCs
/// and stored licenses in the corpus stay valid from one run to the next (a generated identity
/// would change the certificate hash every SPC names). Made once with openssl; test keys only.
///
/// The sealing helpers rebuild the wire formats of docs/license-protocol.md from the outside, so
/// a target can hand the parser mutated plaintext (SPC payload, CKC terms, stored-license parts)
/// behind valid AES-GCM tags and signatures: random bytes would never get past them.
enum LicenseFixtures {
    static let accountID = "6415818918001"
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    static let certificateDER: [UInt8] = Array(Data(base64Encoded: "MIICKDCCAc6gAwIBAgIUTPO8rkAh1gW5zUnNBDMAeWqdroswCgYIKoZIzj0EAwIwYzFGMEQGA1UEAww9TW9jayBGYWlyUGxheSBBcHBsaWNhdGlvbiBDZXJ0aWZpY2F0ZSA2NDE1ODE4OTE4MDAxIChmdXp6aW5nKTEZMBcGA1UECgwQTW9jayBWaWRlbyBDbG91ZDAeFw0yNjExMjUxMjE3MDhaFw00NjExMjAxMjE3MDhaMGMxRjBEBgNVBAMMPU1vY2sgRmFpclBsYXkgQXBwbGljYXRpb24gQ2VydGlmaWNhdGUgNjQxNTgxODkxODAwMSAoZnV6emluZykxGTAXBgNVBAoMEE1vY2sgVmlkZW8gQ2xvdWQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQNgXxMhW9JD+y7XsZi0sHDQ7NLoZfkuHhq4QwtBCpJgXdD4frcm4SlSEH1EwNf2Ew10+Y1M430yno5pq74X8K+o2AwXjAdBgNVHQ4EFgQUWdObprksVCb/I+gDe6vXL06VZQgwHwYDVR0jBBgwFoAUWdObprksVCb/I+gDe6vXL06VZQgwDgYDVR0PAQH/BAQDAgOIMAwGA1UdEwEB/wQCMAAwCgYIKoZIzj0EAwIDSAAwRQIgIkotUhtjygxU639HdDCLlrsWgIs3nllNh1ZOD/+rIrcCIQCSjQ3wq+3qzfFxtzR8OKzNjqKMAHpdRBqKin/PJuaisw==")!)  // a constant: decodes
    static let serverPrivateKey = hex("404954458d41fadcfc24281a635026dd8e93966e103be24abe513d9136a3bdd3")
    static let clientPrivateKey = hex("b5d04531a365dad32755bbf27c3e7a18738cc53945088104c11c68e45fcb2bc6")
    static let deviceKey = SymmetricKey(data: Array(repeating: UInt8(0x42), count: 32))

    // Fuzzing code: a failure here is a broken fixture, found on the first input.
    static let identity = try! LicenseServerIdentity(certificateDER: certificateDER, privateKey: serverPrivateKey)
    static let certificate = identity.certificate
    static let serverAgreementKey = try! P256.KeyAgreement.PrivateKey(rawRepresentation: serverPrivateKey)
    static let serverSigningKey = try! P256.Signing.PrivateKey(rawRepresentation: serverPrivateKey)
    static let clientKey = try! P256.KeyAgreement.PrivateKey(rawRepresentation: clientPrivateKey)

    /// An SPC with `payload` as its plaintext, sealed to the fixed certificate with the fixed client key.
    static func spc(payload: [UInt8]) -> [UInt8] {
        let clientPublic = Array(clientKey.publicKey.x963Representation)
        let header = Array("MSPC".utf8) + [1] + certificate.hash + clientPublic
        let shared = try! clientKey.sharedSecretFromKeyAgreement(with: serverAgreementKey.publicKey)
        let key = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: certificate.hash,
                                                 sharedInfo: Array("mock-fairplay/spc/v1".utf8) + clientPublic, outputByteCount: 32)
        let box = try! AES.GCM.seal(payload, using: key, authenticating: header)
        return header + box.nonce + box.ciphertext + box.tag
    }

    /// A CKC carrying `terms` (any bytes) and `keyAndIV` (32 bytes to be valid) wrapped for
    /// `clientPublic` (X9.63), signed by the fixed server key.
    static func ckc(terms: [UInt8], keyAndIV: [UInt8], clientPublic: [UInt8]) -> [UInt8] {
        var bytes = Array("MCKC".utf8) + [1] + uint32(terms.count) + terms
        if let client = try? P256.KeyAgreement.PublicKey(x963Representation: clientPublic),
           let shared = try? serverAgreementKey.sharedSecretFromKeyAgreement(with: client) {
            let key = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: certificate.hash,
                                                     sharedInfo: Array("mock-fairplay/ckc/v1".utf8) + clientPublic, outputByteCount: 32)
            let box = try! AES.GCM.seal(keyAndIV, using: key, authenticating: bytes)
            bytes += box.nonce + box.ciphertext + box.tag
        } else {
            bytes += Array(repeating: 0, count: 12 + keyAndIV.count + 16)
        }
        return bytes + Array(try! serverSigningKey.signature(for: bytes).rawRepresentation)
    }

    /// A stored license holding `certificate` and `ckc`, with `clientKey` (32 bytes to be
    /// valid) sealed under the fixed device key.
    static func storedLicense(certificate: [UInt8], ckc: [UInt8], clientKey: [UInt8]) -> [UInt8] {
        let head = Array("MLIC".utf8) + [1] + uint32(certificate.count) + certificate + uint32(ckc.count) + ckc
        let box = try! AES.GCM.seal(clientKey, using: deviceKey, authenticating: head)
        return head + box.nonce + box.ciphertext + box.tag
    }

    /// Terms JSON as the server writes it, for `nonce`; `kind` purchase, rental or streaming.
    static func termsJSON(kind: LicenseKind, nonce: [UInt8], deviceID: String = "device-A") -> [UInt8] {
        LicenseTerms(licenseID: "lic-1", kind: kind, accountID: accountID, videoID: "6415818918104", contentKeyID: "key-1",
                     deviceID: deviceID, issuedAt: now, rentalEnd: kind == .rental ? now.addingTimeInterval(30 * 86400) : nil,
                     playDuration: kind == .rental ? 6 * 3600 : nil, firstPlay: nil,
                     expiresAt: kind == .purchase ? nil : now.addingTimeInterval(kind == .rental ? 30 * 86400 : 600),
                     persistable: kind != .streaming, requestNonce: nonce).jsonBytes()
    }

    static func uint32(_ value: Int) -> [UInt8] {
        let v = UInt32(truncatingIfNeeded: value)
        return [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }

    private static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0 ..< $0 + 2], as: UTF8.self), radix: 16)! }
    }
}
