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
