import Crypto

/// The keys of one SPC/CKC exchange (docs/license-protocol.md): HKDF-SHA256 of the P-256 ECDH
/// secret between the client key and the certificate's key, salted with the certificate's hash,
/// with the info `mock-fairplay/spc/v1` (the SPC's sealing key) or `mock-fairplay/ckc/v1`
/// (the CKC's wrapping key) followed by the client key. HKDF's extract step is the same for
/// both and is done once: the server needs both keys for every license, and the two full
/// derivations were 6 % of a license's server time.
struct ExchangeKeys {
    private let pseudoRandomKey: HashedAuthenticationCode<SHA256>
    private let clientKey: [UInt8]

    init(shared: SharedSecret, certificateHash: [UInt8], clientKey: [UInt8]) {
        pseudoRandomKey = shared.withUnsafeBytes { secret in
            HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: secret), salt: certificateHash)
        }
        self.clientKey = clientKey
    }

    /// The SPC's AES-GCM key.
    var sealing: SymmetricKey { expand("mock-fairplay/spc/v1") }
    /// The key the CKC wraps the content key with.
    var wrapping: SymmetricKey { expand("mock-fairplay/ckc/v1") }

    private func expand(_ label: String) -> SymmetricKey {
        HKDF<SHA256>.expand(pseudoRandomKey: pseudoRandomKey, info: Array(label.utf8) + clientKey, outputByteCount: 32)
    }
}
