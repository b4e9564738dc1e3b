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
    /// Byte-wise, and without a copy when nothing is secret: it runs for every request's log line.
    static func redact(_ target: String) -> String {
        var target = target
        let redacted: String? = target.withUTF8 { bytes in
            guard let question = bytes.firstIndex(of: UInt8(ascii: "?")) else { return nil }
            var output: [UInt8] = []
            var copied = 0  // bytes of `target` already in `output`
            var start = question + 1
            while start <= bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
                if let equals = bytes[start..<end].firstIndex(of: UInt8(ascii: "=")),
                   isSecret(UnsafeBufferPointer(rebasing: bytes[start..<equals])) {
                    if output.isEmpty { output.reserveCapacity(bytes.count) }
                    output.append(contentsOf: bytes[copied...equals])
                    output.append(contentsOf: "…".utf8)
                    copied = end
                }
                start = end + 1
            }
            guard copied > 0 else { return nil }
            output.append(contentsOf: bytes[copied...])
            return String(decoding: output, as: UTF8.self)
        }
        return redacted ?? target
    }

    /// The secret names as bytes, for comparing without making a string.
    private static let secretNameBytes: [[UInt8]] = secretNames.map { Array($0.utf8) }

    /// Whether a raw (still encoded) parameter name names a secret once decoded.
    private static func isSecret(_ rawName: UnsafeBufferPointer<UInt8>) -> Bool {
        guard rawName.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") || $0 >= 0x80 }) else {
            return secretNameBytes.contains { name in
                name.count == rawName.count && zip(name, rawName).allSatisfy { $0 == ($1 | (($1 >= 65 && $1 <= 90) ? 0x20 : 0)) }
            }
        }
        // Decoded (and lowercased beyond ASCII) as a string, by the parser that decodes every
        // request's query (MicroHTTP's RequestTarget).
        let raw = String(decoding: rawName, as: UTF8.self)
        guard let parsed = try? RequestTarget(parsing: "/?" + raw + "="), let decoded = parsed.query.first?.name else { return true }
        return secretNames.contains(decoded.lowercased())
    }
}
