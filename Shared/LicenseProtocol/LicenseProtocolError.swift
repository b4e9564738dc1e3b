public import Foundation

/// Why a license-protocol operation failed: a stable `code` to decide on, a message for
/// logs and error bodies, and the error underneath when a library refused.
public struct LicenseProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, stable.
    public var code: Code
    /// A sentence for logs and error bodies.
    public var message: String
    /// The error a library threw (Crypto, X.509, the JSON decoder), when there was one.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The code and the message on one line.
    public var description: String { "\(code): \(message)" }

    /// Equal when code and message are; the underlying error is not compared.
    public static func == (lhs: LicenseProtocolError, rhs: LicenseProtocolError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }

    /// The kinds of failure. A struct over a private enum, so kinds can be added later
    /// without breaking anyone's exhaustive switch.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case malformed, authenticationFailed, certificateMismatch, invalidCertificate
            case invalidPayload, responseMismatch, invalidRentalProfile
            case invalidRequestBody, invalidBase64
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The bytes are not a message of this protocol (length, magic, version, layout).
        public static let malformed = Code(.malformed)
        /// The message does not decrypt or its signature does not verify: tampered with,
        /// or meant for another key.
        public static let authenticationFailed = Code(.authenticationFailed)
        /// The message is sealed to another application certificate.
        public static let certificateMismatch = Code(.certificateMismatch)
        /// The certificate is not a usable P-256 application certificate.
        public static let invalidCertificate = Code(.invalidCertificate)
        /// The decrypted JSON (SPC payload, terms) is missing members or has bad values.
        public static let invalidPayload = Code(.invalidPayload)
        /// The CKC answers another request (nonce, device, key id or account differ).
        public static let responseMismatch = Code(.responseMismatch)
        /// The `X-BC-CRT-CONFIG` profile is not valid.
        public static let invalidRentalProfile = Code(.invalidRentalProfile)
        /// The license request's body is not a JSON object with a string `server_playback_context`.
        public static let invalidRequestBody = Code(.invalidRequestBody)
        /// The license request's `server_playback_context` is not base64.
        public static let invalidBase64 = Code(.invalidBase64)

        /// The stable number of the kind (`NSError.code`): 1 … 9 in the order above (never renumbered).
        public var number: Int {
            switch base {
            case .malformed: 1
            case .authenticationFailed: 2
            case .certificateMismatch: 3
            case .invalidCertificate: 4
            case .invalidPayload: 5
            case .responseMismatch: 6
            case .invalidRentalProfile: 7
            case .invalidRequestBody: 8
            case .invalidBase64: 9
            }
        }

        /// The stable name of the kind, e.g. "malformed".
        public var description: String { base.rawValue }
    }
}

/// The message as `localizedDescription`; `(error as NSError).code` is `code.number`.
extension LicenseProtocolError: LocalizedError, CustomNSError {
    /// The domain of every `LicenseProtocolError`; it never changes.
    public static let errorDomain = "LicenseProtocol.LicenseProtocolError"
    /// `code.number`.
    public var errorCode: Int { code.number }
    /// The message (swift-corelibs-foundation reads it only from here).
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
    /// The message.
    public var errorDescription: String? { message }
}
