public import Crypto
public import Foundation

extension URLToken {
    /// Signs a URL: computes the token for the URL's path and appends it as `fastly_token`.
    public static func sign(url: String, expiresAt: Date, secret: SymmetricKey) -> String {
        appending(token: make(path: path(ofURL: url), expiresAt: expiresAt, secret: secret), to: url)
    }

    /// Adds `fastly_token=<percent-encoded token>` to a URL with `?` or `&`, replacing an existing one.
    public static func appending(token: String, to url: String) -> String {
        let (beforeFragment, fragment) = split(url, at: "#")
        let (base, query) = split(beforeFragment, at: "?")
        var items = (query ?? "").split(separator: "&").filter { item in
            item.split(separator: "=", maxSplits: 1).first.map(String.init) != queryName
        }.map(String.init)
        items.append("\(queryName)=\(percentEncode(token))")
        return base + "?" + items.joined(separator: "&") + (fragment.map { "#" + $0 } ?? "")
    }

    /// The percent-decoded `fastly_token` query value of a URL, if present.
    public static func token(inURL url: String) -> String? {
        let (beforeFragment, _) = split(url, at: "#")
        guard let query = split(beforeFragment, at: "?").1 else { return nil }
        for item in query.split(separator: "&") {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, pair[0] == queryName else { continue }
            return String(pair[1]).removingPercentEncoding
        }
        return nil
    }

    /// The path of a URL exactly as written: no scheme, host, query or fragment (`/` if it has none).
    public static func path(ofURL url: String) -> String {
        // Byte-wise: clients call this for every segment of a download.
        let utf8 = url.utf8
        let end = utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? utf8.endIndex
        var start = utf8.startIndex
        if let colon = utf8[..<end].firstIndex(of: UInt8(ascii: ":")),
           utf8[colon...].starts(with: "://".utf8) {
            let host = utf8.index(colon, offsetBy: 3)
            guard let slash = utf8[host..<end].firstIndex(of: UInt8(ascii: "/")) else { return "/" }
            start = slash
        }
        return start == end ? "/" : String(url[start..<end])
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters (so `+`, `/`, `=` become `%2B`, `%2F`, `%3D`).
    public static func percentEncode(_ value: String) -> String {
        var encoded = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += "%" + hex(UInt64(byte), width: 2).uppercased()
            }
        }
        return encoded
    }

    /// Splits at the first `separator`: the part before, and the part after if the separator occurs.
    private static func split(_ text: String, at separator: Character) -> (String, String?) {
        guard let index = text.firstIndex(of: separator) else { return (text, nil) }
        return (String(text[..<index]), String(text[text.index(after: index)...]))
    }
}
