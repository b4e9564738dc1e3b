/// An error of the backend's public API: a stable `code` to decide on, what is wrong in words,
/// and the error underneath when reading a file, parsing or the database failed. One shape for
/// ``CatalogError``, ``TLSSetupError`` and ``FaultRuleError``, which differ only in their codes.
public struct BackendError<Code: Hashable & Sendable & CustomStringConvertible>: Error, Sendable, CustomStringConvertible {
    /// What kind of problem, stable.
    public let code: Code
    /// What is wrong, for a person: naming the file, video, account or rule.
    public let message: String
    /// The file system's, a parser's or the database's error, when one of them failed.
    public let underlying: (any Error & Sendable)?

    init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The message.
    public var description: String { message }
}
