import CurlTransfer
public import Foundation
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

        /// The stable number of the kind: `NSError.code` of a `PlaybackServiceError`.
        public var number: Int {
            switch value {
            case .transport: 1
            case .http: 2
            case .decoding: 3
            case .invalidArgument: 4
            }
        }
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

/// The message as `localizedDescription`; `(error as NSError).code` is `code.number`.
extension PlaybackServiceError: LocalizedError, CustomNSError {
    /// The domain of every `PlaybackServiceError`; it never changes.
    public static let errorDomain = "OfflineSDK.PlaybackService"
    /// `code.number`: transport 1, http 2, decoding 3, invalidArgument 4.
    public var errorCode: Int { code.number }
    /// The HTTP status when the server answered, and the error underneath.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: errorDescription ?? message]
        if let recoverySuggestion { info[NSLocalizedRecoverySuggestionErrorKey] = recoverySuggestion }
        if let status { info["OfflineSDKHTTPStatus"] = status }
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return info
    }
    /// The message (with the server's first error code when it sent one).
    public var errorDescription: String? {
        errors.first.map { "\(message) (\($0.errorCode))" } ?? message
    }
    /// What to do next for a failure that may pass.
    public var recoverySuggestion: String? {
        switch code {
        case .transport: "Check the network connection, then try again."
        case .http where (status ?? 0) >= 500: "The service failed; try again later."
        default: nil
        }
    }
}
