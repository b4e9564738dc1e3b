import MicroHTTP

/// `request-target`: the request line's target as MHD hands it over, parsed before any
/// handler runs (the backend's routes and the SDK's loopback server both rely on it refusing
/// path traversal).
enum RequestTargetTarget {
    static let target = FuzzTarget(name: "request-target") { buffer in
        let text = String(decoding: buffer, as: UTF8.self)
        guard let parsed = try? RequestTarget(parsing: text) else { return }
        for segment in parsed.segments {
            FuzzCheck.expect(!segment.isEmpty && segment != "." && segment != "..", "segment \"\(segment)\" passed")
            FuzzCheck.expect(!segment.utf8.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") || $0 == 0 },
                             "segment \"\(segment)\" holds a separator or NUL")
        }
        FuzzCheck.expect(parsed.path.utf8.first == UInt8(ascii: "/"), "path \"\(parsed.path)\" does not start with /")
        if let request = try? HTTPRequest(method: "GET", target: text) {
            FuzzCheck.expect(request.pathSegments == parsed.segments, "HTTPRequest and RequestTarget disagree")
            _ = request.duplicateQueryNames
        } else {
            FuzzCheck.expect(false, "HTTPRequest refused a target RequestTarget accepts")
        }
    }
}
