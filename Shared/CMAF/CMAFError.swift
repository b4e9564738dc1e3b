/// Why media could not be remuxed to CMAF, parsed or encrypted. Errors are values: malformed
/// input never traps, it ends up here with a message that says what is wrong and where.
public struct CMAFError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable category. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: Hashable, Sendable {
            case malformedTransportStream, unsupportedStream, malformedSample
            case malformedParameterSet, malformedSlice, invalidKey, cipherFailure
        }
        fileprivate let value: Value

        /// The MPEG-TS input cannot be read (packets, program tables, PES headers).
        public static let malformedTransportStream = Code(value: .malformedTransportStream)
        /// Valid input of a kind CMAF packaging here does not handle (a codec, several streams).
        public static let unsupportedStream = Code(value: .unsupportedStream)
        /// An access unit, a frame or a sample whose bytes do not add up.
        public static let malformedSample = Code(value: .malformedSample)
        /// An SPS, PPS or VPS that cannot be parsed.
        public static let malformedParameterSet = Code(value: .malformedParameterSet)
        /// A slice header that cannot be parsed.
        public static let malformedSlice = Code(value: .malformedSlice)
        /// A key, key id or IV of the wrong size.
        public static let invalidKey = Code(value: .invalidKey)
        /// The AES implementation refused the operation.
        public static let cipherFailure = Code(value: .cipherFailure)

        public var description: String { "\(value)" }
    }

    public let code: Code
    public let message: String
    public let underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public static func == (lhs: CMAFError, rhs: CMAFError) -> Bool { lhs.code == rhs.code && lhs.message == rhs.message }

    public var description: String { "CMAFError(\(code)): \(message)" }
}
