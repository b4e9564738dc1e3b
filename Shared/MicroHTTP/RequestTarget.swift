/// Why a request target was refused before any handler saw it: a stable `code` and a
/// message for the 400's body.
package struct RequestTargetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, stable.
    package let code: Code
    /// A sentence for the 400's body.
    package let message: String

    /// Creates the error for `code`, with the message that goes with it.
    package init(_ code: Code) {
        self.code = code
        message = code.message
    }

    package var description: String { message }

    /// The kinds of refusal. A struct over a private enum, so kinds can be added later
    /// without breaking anyone's exhaustive switch.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable { case notOriginForm, badPercentEncoding, pathTraversal }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The target does not start with "/" (absolute-form and asterisk-form are not served).
        package static let notOriginForm = Code(.notOriginForm)
        /// A percent escape is not two hex digits, or decodes to invalid UTF-8.
        package static let badPercentEncoding = Code(.badPercentEncoding)
        /// A path segment is "." or "..", or decodes to something holding "/", "\\" or NUL.
        package static let pathTraversal = Code(.pathTraversal)

        /// The stable name of the kind, e.g. "pathTraversal".
        package var description: String { base.rawValue }

        fileprivate var message: String {
            switch base {
            case .notOriginForm: "request target must be an absolute path"
            case .badPercentEncoding: "malformed percent-encoding in request target"
            case .pathTraversal: "path segments may not be '.', '..' or contain '/', '\\' or NUL once decoded"
            }
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
        // Byte-wise on the UTF-8 buffer: this runs on every request, and Character-based
        // `split`/`firstIndex` cost more than everything else a segment request does.
        var target = target
        let parsed = target.withUTF8 { bytes in Result { () throws(RequestTargetError) in try RequestTarget.parse(bytes) } }
        (path, segments, query) = try parsed.get()
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(RequestTargetError)
        -> (String, [String], [(name: String, value: String)]) {
        let slash = UInt8(ascii: "/"), question = UInt8(ascii: "?"), hash = UInt8(ascii: "#")
        guard bytes.first == slash else { throw RequestTargetError(.notOriginForm) }
        let pathEnd = bytes.firstIndex { $0 == question || $0 == hash } ?? bytes.endIndex
        let path = string(bytes[..<pathEnd])

        var segments: [String] = []
        var start = 0
        while start < pathEnd {
            let end = bytes[start..<pathEnd].firstIndex(of: slash) ?? pathEnd
            if end > start {
                guard let segment = decode(bytes[start..<end], plusAsSpace: false) else { throw RequestTargetError(.badPercentEncoding) }
                if segment == "." || segment == ".."
                    || segment.utf8.contains(where: { $0 == slash || $0 == UInt8(ascii: "\\") || $0 == 0 }) {
                    throw RequestTargetError(.pathTraversal)
                }
                segments.append(segment)
            }
            start = end + 1
        }

        var query: [(name: String, value: String)] = []
        guard pathEnd < bytes.endIndex, bytes[pathEnd] == question else { return (path, segments, query) }
        let queryEnd = bytes[(pathEnd + 1)...].firstIndex(of: hash) ?? bytes.endIndex
        start = pathEnd + 1
        while start < queryEnd {
            let end = bytes[start..<queryEnd].firstIndex(of: UInt8(ascii: "&")) ?? queryEnd
            if end > start {
                let pair = bytes[start..<end]
                let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? end
                guard let name = decode(bytes[start..<equals], plusAsSpace: true),
                      let value = decode(equals < end ? bytes[(equals + 1)..<end] : bytes[end..<end], plusAsSpace: true)
                else { throw RequestTargetError(.badPercentEncoding) }
                query.append((name: name, value: value))
            }
            start = end + 1
        }
        return (path, segments, query)
    }

    private static func string(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes), as: UTF8.self)
    }

    /// Percent-decodes bytes cut from a valid UTF-8 target at ASCII delimiters.
    private static func decode(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, plusAsSpace: Bool) -> String? {
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) {
            return string(bytes)
        }
        return decodeEscapes(bytes, plusAsSpace: plusAsSpace)
    }

    /// Decodes "%XX" escapes (and "+" as space when asked); nil when an escape is malformed
    /// or the result is not UTF-8.
    private static func decodeEscapes(_ text: some Collection<UInt8>, plusAsSpace: Bool) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var iterator = text.makeIterator()
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
