import Crypto
import Testing
@testable import LicenseProtocol

/// The exchange's two keys, as docs/license-protocol.md defines them: each one full
/// HKDF-SHA256 (extract, then expand) of the ECDH secret, salted with the certificate's hash.
@Suite("Exchange keys")
struct ExchangeKeysTests {
    @Test("sealing and wrapping keys are the protocol's HKDF-SHA256 derivations, for random secrets, salts and client keys")
    func matchTheDefinition() {
        for _ in 0..<20 {
            let client = P256.KeyAgreement.PrivateKey(), server = P256.KeyAgreement.PrivateKey()
            let shared = try! client.sharedSecretFromKeyAgreement(with: server.publicKey)
            let salt = Array(SHA256.hash(data: Array(server.publicKey.x963Representation)))
            let clientKey = Array(client.publicKey.x963Representation)
            let keys = ExchangeKeys(shared: shared, certificateHash: salt, clientKey: clientKey)
            func defined(_ label: String) -> SymmetricKey {
                shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: salt, sharedInfo: Array(label.utf8) + clientKey, outputByteCount: 32)
            }
            #expect(keys.sealing == defined("mock-fairplay/spc/v1"))
            #expect(keys.wrapping == defined("mock-fairplay/ckc/v1"))
            #expect(keys.sealing != keys.wrapping)
        }
    }
}
