public import Foundation

/// Why a playlist could not be parsed, and where: `line` is 1-based, counted in the original text.
public struct HLSParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line the problem was found on.
    public var line: Int
    /// What is wrong, e.g. `EXTINF is not followed by a URI line`.
    public var message: String

    /// Creates a parse error.
    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    /// `line N: message`.
    public var description: String { "line \(line): \(message)" }
}

/// `line N: message` as `localizedDescription`; one kind, so `(error as NSError).code` is 1 and
/// the line is in `userInfo["line"]`.
extension HLSParseError: LocalizedError, CustomNSError {
    /// The domain of every `HLSParseError`; it never changes.
    public static let errorDomain = "WireModels.HLSParseError"
    /// Always 1: a playlist that cannot be read.
    public var errorCode: Int { 1 }
    /// The line.
    public var errorUserInfo: [String: Any] { ["line": line, NSLocalizedDescriptionKey: description] }
    /// `line N: message`.
    public var errorDescription: String? { description }
}
