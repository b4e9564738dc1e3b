/// Why a segment could not be encrypted or decrypted. Errors are values: malformed input
/// never traps, it ends up here with a message that says what is wrong and where, and the
/// AES implementation's error when it refused.
public struct SampleAESError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable category, so callers can tell bad input from a bad key size without
    /// matching messages. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: Hashable, Sendable {
            case invalidKey, malformedTransportStream, malformedProgramTable, malformedPES
            case malformedElementaryStream, unsupportedLayout, cipherFailure
        }
        fileprivate let value: Value

        /// The key or IV is not 16 bytes.
        public static let invalidKey = Code(value: .invalidKey)
        /// Not a whole number of 188-byte packets with sync bytes, or a bad packet header.
        public static let malformedTransportStream = Code(value: .malformedTransportStream)
        /// A PAT or PMT that cannot be read (bad CRC, truncated, split over packets).
        public static let malformedProgramTable = Code(value: .malformedProgramTable)
        /// A PES packet whose header or length does not add up.
        public static let malformedPES = Code(value: .malformedPES)
        /// ADTS frames or H.264 NAL units that cannot be followed.
        public static let malformedElementaryStream = Code(value: .malformedElementaryStream)
        /// Valid input this implementation will not transform, because the result could
        /// not be turned back into the input exactly (see the message).
        public static let unsupportedLayout = Code(value: .unsupportedLayout)
        /// The AES implementation refused the operation.
        public static let cipherFailure = Code(value: .cipherFailure)

        public var description: String { "\(value)" }
    }

    /// The category of the failure.
    public let code: Code
    /// What went wrong, in words, with the packet or byte offset where it helps.
    public let message: String

    /// The AES implementation's error, when it refused (a cipher failure, an unusable IV).
    public let underlying: (any Error & Sendable)?

    /// Creates an error of `code` saying `message`.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// Equal when code and message are; the underlying error is not compared.
    public static func == (lhs: SampleAESError, rhs: SampleAESError) -> Bool { lhs.code == rhs.code && lhs.message == rhs.message }

    public var description: String { "SampleAESError(\(code)): \(message)" }
}
