/// Byte ranges and conditional GETs, applied by the server to every 200 answer to GET or HEAD.
///
/// Pure: it only looks at the request's headers and the response, so it is tested without a socket.
extension HTTPResponse {
    /// The answer after If-None-Match (304) and Range (206/416, with If-Range) are taken into
    /// account. A 206 keeps every header of the 200 (an ETag, a `Repr-Digest`: both describe the
    /// whole representation, not the range) and, for a ranged body that has one, adds the range's
    /// `Content-Digest`; a 304 keeps the ones RFC 9110 §15.4.5 says a 304
    /// sends, and the `Repr-Digest` (RFC 9530) of the representation it stands for. A ranged body
    /// is made for the range sent, or whole when none applies.
    package func applyingConditionals(for request: HTTPRequest) -> HTTPResponse {
        conditionalAnswer(for: request).withRangedBodyMade()
    }

    /// A ranged body no range was applied to, made whole; any other answer as it is.
    package func withRangedBodyMade() -> HTTPResponse {
        guard case .ranged(let ranged) = body else { return self }
        var response = self
        response.body = ranged.whole
        return response
    }

    private func conditionalAnswer(for request: HTTPRequest) -> HTTPResponse {
        guard status == 200, request.method == "GET" || request.method == "HEAD" else { return self }
        var response = self
        if case .empty = body {} else { response.headers.set("Accept-Ranges", "bytes") }

        if let etag = headers["ETag"], let condition = request.headers["If-None-Match"],
           HTTPResponse.etagList(condition, matches: etag) {
            var notModified = HTTPResponse(status: 304, body: .empty)
            for name in ["ETag", "Repr-Digest", "Cache-Control", "Last-Modified", "Vary"] {
                if let value = headers[name] { notModified.headers.set(name, value) }
            }
            notModified.copyCORSHeaders(from: self)
            return notModified
        }

        if case .stream = body { return response }  // made while sent: no ranges
        guard let rangeHeader = request.headers["Range"], body != .empty else { return response }
        // If-Range: the range applies only when the validator is this representation's strong
        // ETag (RFC 9110 §13.1.5 compares strongly); another tag, a weak one or a date means:
        // send the whole, current representation.
        if let ifRange = request.headers["If-Range"], !HTTPResponse.strongETag(ifRange, matches: headers["ETag"]) { return response }
        let size = body.count
        switch ByteRange.parse(rangeHeader, size: size) {
        case .none:
            return response  // not a single bytes range we understand: ignore it, as RFC 9110 allows
        case .unsatisfiable:
            var refused = HTTPResponse(status: 416, body: .empty)
            refused.headers.set("Content-Range", "bytes */\(size)")
            refused.copyCORSHeaders(from: self)
            return refused
        case .range(let lower, let upper):
            response.status = 206
            response.headers.set("Content-Range", "bytes \(lower)-\(upper)/\(size)")
            switch body {
            case .empty: break
            case .bytes(let bytes): response.body = .bytes(Array(bytes[Int(lower)...Int(upper)]))
            case .file(let path, let offset, _):
                response.body = .file(path: path, offset: offset + lower, length: upper - lower + 1)
            case .stream: break
            case .ranged(let ranged):
                response.body = ranged.body(lower, upper)
                if let digest = ranged.contentDigest(lower, upper) { response.headers.set("Content-Digest", digest) }
            }
            return response
        }
    }

    /// A browser drops any cross-origin answer without these, 304 and 416 included.
    private mutating func copyCORSHeaders(from original: HTTPResponse) {
        for field in original.headers where field.name.lowercased().hasPrefix("access-control-") {
            headers.add(field.name, field.value)
        }
    }

    /// RFC 9110's strong comparison: both tags strong (no `W/`) and the same characters.
    private static func strongETag(_ validator: String, matches etag: String?) -> Bool {
        guard let etag else { return false }
        let given = validator.trimmingWhitespace(), own = etag.trimmingWhitespace()
        return given.hasPrefix("\"") && !own.hasPrefix("W/") && given == own
    }

    private static func etagList(_ list: String, matches etag: String) -> Bool {
        let weakless = { (tag: Substring) -> Substring in tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
        let target = weakless(Substring(etag))
        return list.split(separator: ",").contains { item in
            let tag = item.trimmingWhitespace()
            return tag == "*" || weakless(tag) == target
        }
    }
}

/// The outcome of reading a Range header against a body of known size.
package enum ByteRange: Equatable {
    /// Inclusive byte positions.
    case range(UInt64, UInt64)
    /// A syntactically valid range that selects nothing (416).
    case unsatisfiable

    /// Parses a single `bytes=` range (`a-b`, `a-`, `-n`). Multiple ranges or other units give nil.
    package static func parse(_ header: String, size: UInt64) -> ByteRange? {
        let trimmed = header.trimmingWhitespace()
        guard trimmed.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = trimmed.dropFirst(6).trimmingWhitespace()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingWhitespace(), last = spec[spec.index(after: dash)...].trimmingWhitespace()
        if first.isEmpty {
            guard let suffix = UInt64(last) else { return nil }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .range(size - min(suffix, size), size - 1)
        }
        guard let lower = UInt64(first) else { return nil }
        let upper: UInt64
        if last.isEmpty { upper = size &- 1 } else {
            guard let value = UInt64(last), value >= lower else { return nil }
            upper = min(value, size &- 1)
        }
        guard lower < size else { return .unsatisfiable }
        return .range(lower, upper)
    }
}

extension StringProtocol {
    package func trimmingWhitespace() -> Substring {
        var slice = self[...]
        while let c = slice.first, c == " " || c == "\t" { slice = slice.dropFirst() }
        while let c = slice.last, c == " " || c == "\t" { slice = slice.dropLast() }
        return Substring(slice)
    }
}
