import MicroHTTP

/// The one rule for showing a request target anywhere (the request log and its stream, the
/// dashboard, the log lines on stderr): the values of secret query parameters (URL tokens,
/// JWTs, keys) replaced by `…`.
///
/// A parameter is secret by its name as the server reads it: percent-decoded (and `+` as a
/// space), compared without case. `?fastly%5Ftoken=…` is the server's `fastly_token`, so it
/// is redacted like `?fastly_token=…`; a name that cannot be decoded is taken for a secret.
enum SecretRedaction {
    /// The query parameters whose values are secrets.
    static let secretNames: Set<String> = ["fastly_token", "token", "jwt", "bcov_auth", "pk", "policy_key", "key"]

    /// `target` (path and query, as it arrived) with the values of secret parameters replaced.
    static func redact(_ target: String) -> String {
        guard let question = target.firstIndex(of: "?") else { return target }
        let query = target[target.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals]
            return isSecret(name) ? "\(name)=…" : String(pair)
        }
        return String(target[..<question]) + "?" + query.joined(separator: "&")
    }

    /// Whether a raw (still encoded) parameter name names a secret once decoded.
    private static func isSecret(_ rawName: Substring) -> Bool {
        guard rawName.contains(where: { $0 == "%" || $0 == "+" }) else { return secretNames.contains(rawName.lowercased()) }
        // Decoded by the parser that decodes every request's query (MicroHTTP's RequestTarget).
        guard let parsed = try? RequestTarget(parsing: "/?" + rawName + "="), let decoded = parsed.query.first?.name else { return true }
        return secretNames.contains(decoded.lowercased())
    }
}
