/// Why a license-protocol operation failed. `code` is stable; new codes may be added, so
/// switch over it with a `default`.
public struct LicenseProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of failure.
    public enum Code: String, Sendable {
        /// The bytes are not a message of this protocol (length, magic, version, layout).
        case malformed
        /// The message does not decrypt or its signature does not verify: tampered with,
        /// or meant for another key.
        case authenticationFailed
        /// The message is sealed to another application certificate.
        case certificateMismatch
        /// The certificate is not a usable P-256 application certificate.
        case invalidCertificate
        /// The decrypted JSON (SPC payload, terms) is missing members or has bad values.
        case invalidPayload
        /// The CKC answers another request (nonce, device, key id or account differ).
        case responseMismatch
        /// The `X-BC-CRT-CONFIG` profile is not valid.
        case invalidRentalProfile
    }

    /// What went wrong, stable.
    public var code: Code
    /// A sentence for logs and error bodies.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
