/// Why a request target was refused before any handler saw it.
public enum RequestTargetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The target does not start with "/" (absolute-form and asterisk-form are not served).
    case notOriginForm
    /// A percent escape is not two hex digits, or decodes to invalid UTF-8.
    case badPercentEncoding
    /// A path segment is "." or "..", or decodes to something holding "/", "\\" or NUL.
    case pathTraversal

    public var description: String {
        switch self {
        case .notOriginForm: "request target must be an absolute path"
        case .badPercentEncoding: "malformed percent-encoding in request target"
        case .pathTraversal: "path segments may not be '.', '..' or contain '/', '\\' or NUL once decoded"
        }
    }
}

/// The request target split into decoded path segments and query parameters.
///
/// Decoding happens here, once, on the raw target: MHD's own unescaping is never used,
/// so "%2e%2e" and "%2F" are caught however they are spelled.
package struct RequestTarget: Sendable {
    package var path: String
    package var segments: [String]
    package var query: [(name: String, value: String)]

    package init(parsing target: String) throws(RequestTargetError) {
        guard target.hasPrefix("/") else { throw .notOriginForm }
        let pathEnd = target.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? target.endIndex
        path = String(target[..<pathEnd])
        var segments: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = RequestTarget.percentDecode(raw, plusAsSpace: false) else { throw .badPercentEncoding }
            if segment == "." || segment == ".." || segment.contains(where: { $0 == "/" || $0 == "\\" || $0 == "\0" }) {
                throw .pathTraversal
            }
            segments.append(segment)
        }
        self.segments = segments
        query = []
        guard pathEnd < target.endIndex, target[pathEnd] == "?" else { return }
        var queryString = target[target.index(after: pathEnd)...]
        if let hash = queryString.firstIndex(of: "#") { queryString = queryString[..<hash] }
        for pair in queryString.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = RequestTarget.percentDecode(parts[0], plusAsSpace: true),
                  let value = RequestTarget.percentDecode(parts.count > 1 ? parts[1] : "", plusAsSpace: true)
            else { throw .badPercentEncoding }
            query.append((name: name, value: value))
        }
    }

    /// Percent-decodes `text`; nil when an escape is malformed or the result is not UTF-8.
    package static func percentDecode(_ text: Substring, plusAsSpace: Bool) -> String? {
        if !text.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusAsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
