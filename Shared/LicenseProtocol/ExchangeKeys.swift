import Crypto

/// The keys of one SPC/CKC exchange (docs/license-protocol.md): HKDF-SHA256 of the P-256 ECDH
/// secret between the client key and the certificate's key, salted with the certificate's hash,
/// with the info `mock-fairplay/spc/v1` (the SPC's sealing key) or `mock-fairplay/ckc/v1`
/// (the CKC's wrapping key) followed by the client key. HKDF's extract step is the same for
/// both and is done once, and so is keying the HMAC of the expand step: the server needs both
/// keys for every license, and the two full derivations were 6 % of a license's server time.
struct ExchangeKeys {
    /// HMAC-SHA256 keyed with HKDF's pseudorandom key, nothing hashed yet.
    private let expander: HMAC<SHA256>
    private let clientKey: [UInt8]

    init(shared: SharedSecret, certificateHash: [UInt8], clientKey: [UInt8]) {
        let pseudoRandomKey = shared.withUnsafeBytes { secret in
            HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: secret), salt: certificateHash)
        }
        expander = HMAC(key: SymmetricKey(data: pseudoRandomKey))
        self.clientKey = clientKey
    }

    /// The SPC's AES-GCM key.
    var sealing: SymmetricKey { expand("mock-fairplay/spc/v1") }
    /// The key the CKC wraps the content key with.
    var wrapping: SymmetricKey { expand("mock-fairplay/ckc/v1") }

    /// HKDF's expand step to 32 bytes: one block, T(1) = HMAC(PRK, info ‖ 0x01) (RFC 5869, 2.3).
    private func expand(_ label: String) -> SymmetricKey {
        var hmac = expander
        hmac.update(data: Array(label.utf8) + clientKey + [1])
        return SymmetricKey(data: hmac.finalize())
    }
}
