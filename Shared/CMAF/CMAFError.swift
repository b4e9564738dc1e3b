/// Why a CMAF step (remuxing MPEG-TS, reading parameter sets and slice headers, laying out
/// subsamples, encrypting or decrypting a sample, reading boxes back) failed. Errors are values: these parsers read media
/// bytes, so malformed input never traps or loops; it ends up here with a message that says
/// what is wrong and where, and the AES implementation's error when it refused.
package struct CMAFError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable category, so callers can tell bad media from a bad key without matching
    /// messages. New codes may be added; switch with a `default`.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: Hashable, Sendable {
            case malformedTransportStream, malformedParameterSet, malformedSlice, malformedSample, malformedBox, unsupportedStream
            case invalidKey, invalidPattern, cipherFailure
        }
        fileprivate let value: Value

        /// MPEG-TS input that cannot be remuxed: packets, program tables or PES headers that
        /// cannot be read, a PES without times, a file that cannot be read.
        package static let malformedTransportStream = Code(value: .malformedTransportStream)
        /// An SPS, PPS or VPS that cannot be read: truncated, a value out of its range, an
        /// exp-Golomb code longer than 32 bits.
        package static let malformedParameterSet = Code(value: .malformedParameterSet)
        /// A slice header that cannot be read, or one that names a parameter set never seen.
        package static let malformedSlice = Code(value: .malformedSlice)
        /// A sample whose NAL unit lengths do not add up to its size, or subsamples that do
        /// not add up to the sample.
        package static let malformedSample = Code(value: .malformedSample)
        /// ISO BMFF input that cannot be read: a box whose size runs past its parent or is
        /// smaller than its header, a field past a box's end, a required box missing, sample data
        /// or auxiliary information outside the segment.
        package static let malformedBox = Code(value: .malformedBox)
        /// Valid media this layer does not handle (H.264 slice groups, HEVC screen-content
        /// coding or layers above the base layer); the message says which.
        package static let unsupportedStream = Code(value: .unsupportedStream)
        /// The key or IV has the wrong size.
        package static let invalidKey = Code(value: .invalidKey)
        /// A crypt:skip pattern that is not two 4-bit block counts, or protects nothing.
        package static let invalidPattern = Code(value: .invalidPattern)
        /// The AES implementation refused the operation.
        package static let cipherFailure = Code(value: .cipherFailure)

        package var description: String { "\(value)" }
    }

    /// The category of the failure.
    package let code: Code
    /// What went wrong, in words, with the bit or byte offset where it helps.
    package let message: String

    /// The AES implementation's error, when it refused.
    package let underlying: (any Error & Sendable)?

    /// Creates an error of `code` saying `message`.
    package init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// Equal when code and message are; the underlying error is not compared.
    package static func == (lhs: CMAFError, rhs: CMAFError) -> Bool { lhs.code == rhs.code && lhs.message == rhs.message }

    package var description: String { "CMAFError(\(code)): \(message)" }
}
