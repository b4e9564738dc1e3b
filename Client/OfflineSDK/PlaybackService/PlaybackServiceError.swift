import CurlTransfer
public import WireModels

/// Why a Playback API call failed: the HTTP status and the parsed error array when the
/// server answered, the transport error when it did not.
public struct PlaybackServiceError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure, stable across releases.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: Hashable, Sendable { case transport, http, decoding, invalidArgument }
        fileprivate let value: Value
        /// No answer: connection, timeout, cancellation.
        public static let transport = Code(value: .transport)
        /// The server answered with a non-2xx status.
        public static let http = Code(value: .http)
        /// The answer was not the JSON expected.
        public static let decoding = Code(value: .decoding)
        /// The call's arguments were refused before any request.
        public static let invalidArgument = Code(value: .invalidArgument)
        public var description: String { "\(value)" }
    }

    /// The kind of failure.
    public var code: Code
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// The Playback API's error array, when the body held one.
    public var errors: [APIError]
    /// A sentence for logs.
    public var message: String
    /// The transport or decoding error underneath, if any.
    public var underlying: (any Error & Sendable)?

    public var description: String {
        var text = "PlaybackService \(code)"
        if let status { text += " \(status)" }
        if let first = errors.first { text += " \(first.errorCode)" + (first.errorSubcode.map { "/\($0)" } ?? "") }
        return text + ": " + message
    }
}
