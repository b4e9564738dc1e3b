/// The status line and header fields of the response being received, built from the
/// lines libcurl hands to its header callback.
///
/// curl reports the header block of every response it reads: interim 1xx answers and
/// redirects too. Each status line starts a new block, so after the blank line that ends
/// a block, `status` and `fields` describe the latest response, which is the final one
/// once body bytes arrive. Pure value: tested without I/O.
struct ResponseHead: Equatable, Sendable {
    /// The status code of the latest status line, 0 before one arrived.
    private(set) var status = 0
    /// The header fields of the latest response, in order, names as sent.
    private(set) var fields: [(name: String, value: String)] = []
    /// True once the blank line ending the latest block was seen.
    private(set) var isComplete = false

    /// Consumes one raw header line (with or without its CRLF).
    mutating func consume(line raw: String) {
        var line = Substring(raw)
        while let last = line.last, last.isNewline { line = line.dropLast() }  // "\r\n" is one Character
        if line.isEmpty {
            isComplete = true
            return
        }
        if line.hasPrefix("HTTP/") {
            // "HTTP/1.1 206 Partial Content" or "HTTP/2 200"
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            fields = []
            isComplete = false
            return
        }
        if let first = line.first, first == " " || first == "\t", !fields.isEmpty {
            // obsolete line folding: a continuation of the previous field's value
            fields[fields.count - 1].value += " " + line.trimmedHTTPWhitespace()
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].trimmedHTTPWhitespace()
        guard !name.isEmpty else { return }
        fields.append((name: String(name), value: String(line[line.index(after: colon)...].trimmedHTTPWhitespace())))
    }

    /// The first value of field `name`, compared case-insensitively.
    func value(_ name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// The Content-Length, when present and a valid number.
    var contentLength: Int64? {
        value("Content-Length").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The parsed Content-Range, when present and well formed.
    var contentRange: ContentRange? {
        value("Content-Range").flatMap(ContentRange.init(parsing:))
    }

    static func == (lhs: ResponseHead, rhs: ResponseHead) -> Bool {
        lhs.status == rhs.status && lhs.isComplete == rhs.isComplete
            && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// A `Content-Range: bytes first-last/complete` (206) or `bytes */complete` (416) value.
struct ContentRange: Equatable, Sendable {
    /// The inclusive byte positions sent; nil for the unsatisfied form `*/complete`.
    var range: ClosedRange<Int64>?
    /// The full size of the representation; nil when the server sent `*`.
    var completeLength: Int64?

    init(range: ClosedRange<Int64>?, completeLength: Int64?) {
        self.range = range
        self.completeLength = completeLength
    }

    /// Parses the header value; nil unless it is a well-formed `bytes` range.
    init?(parsing value: String) {
        let text = value.trimmedHTTPWhitespace()
        guard text.count > 6, text.prefix(6).lowercased() == "bytes " else { return nil }
        let spec = text.dropFirst(6).trimmedHTTPWhitespace()
        guard let slash = spec.firstIndex(of: "/") else { return nil }
        let rangePart = spec[..<slash], lengthPart = spec[spec.index(after: slash)...]
        if lengthPart == "*" {
            completeLength = nil
        } else {
            guard let length = Int64(lengthPart), length >= 0 else { return nil }
            completeLength = length
        }
        if rangePart == "*" {
            guard completeLength != nil else { return nil }
            range = nil
            return
        }
        guard let dash = rangePart.firstIndex(of: "-"),
              let first = Int64(rangePart[..<dash]), let last = Int64(rangePart[rangePart.index(after: dash)...]),
              first >= 0, first <= last else { return nil }
        if let completeLength, last >= completeLength { return nil }
        range = first...last
    }
}

extension StringProtocol {
    /// Drops leading and trailing spaces and tabs.
    func trimmedHTTPWhitespace() -> Substring {
        var slice = self[...]
        while let c = slice.first, c == " " || c == "\t" { slice = slice.dropFirst() }
        while let c = slice.last, c == " " || c == "\t" { slice = slice.dropLast() }
        return Substring(slice)
    }

    /// ASCII case-insensitive equality, as header names need.
    func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A)
        }
    }
}
