import Foundation

/// The base URL every link in an answer starts with: `--public-base-url` when it is given (for
/// every listener, plain and HTTPS alike: it is what clients put before every path, e.g. a proxy
/// in front), else the listener's own scheme, address and port. The one place that decides it.
///
/// Bases are normalised as the real services write their URLs: the scheme and host in lower
/// case, no default port (`:80` for http, `:443` for https) and no trailing slash.
enum PublicBaseURL {
    /// The base of the answers a listener gives: `configured`, else its own address. A wildcard
    /// bind (`0.0.0.0`, `::`) answers with the loopback address, the one every local client reaches.
    static func base(configured: String?, secure: Bool, host: String, port: Int) -> String {
        if let configured { return normalized(configured) }
        let shown = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
        return normalized("\(secure ? "https" : "http")://\(shown.contains(":") ? "[\(shown)]" : shown):\(port)")
    }

    /// `url` without a default port, a trailing slash or upper-case letters in its scheme and host.
    /// Anything after the authority (a path prefix a proxy strips) is kept as it is.
    static func normalized(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return trimmedSlashes(url) }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        var authority = String(rest[..<authorityEnd])
        let path = trimmedSlashes(String(rest[authorityEnd...]))
        // The port is the digits after the last ':' that is not inside an IPv6 literal's brackets.
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            let port = authority[authority.index(after: colon)...]
            let isDefault = (scheme == "http" && port == "80") || (scheme == "https" && port == "443")
            if isDefault || port.isEmpty { authority = String(authority[..<colon]) }
        }
        let userEnd = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
        authority = String(authority[..<userEnd]) + authority[userEnd...].lowercased()
        return "\(scheme)://\(authority)\(path)"
    }

    private static func trimmedSlashes(_ text: String) -> String {
        var text = Substring(text)
        while text.hasSuffix("/") { text = text.dropLast() }
        return String(text)
    }
}
