/// One parsed HTTP request as a handler sees it. The body has been read in full.
package struct HTTPRequest: Sendable {
    /// The method as sent, e.g. "GET".
    package var method: String
    /// The request target exactly as it arrived (path and query, still percent-encoded).
    package var target: String
    /// The path part of the target, still percent-encoded.
    package var path: String
    /// The path split on "/" with each segment percent-decoded. Never contains "." or "..".
    package var pathSegments: [String]
    /// The query parameters in order, percent-decoded ("+" as space). Repeats are kept.
    package var query: [(name: String, value: String)]
    /// The request headers.
    package var headers: HTTPHeaders
    /// The request body.
    package var body: [UInt8]
    /// The peer's address as text, when known.
    package var remoteAddress: String?
    /// Whether it arrived over TLS (the server that took it serves HTTPS).
    package var isSecure = false

    /// Creates a request; `target` is parsed into path segments and query parameters.
    package init(method: String, target: String, headers: HTTPHeaders = HTTPHeaders(),
                body: [UInt8] = [], remoteAddress: String? = nil) throws(RequestTargetError) {
        let parsed = try RequestTarget(parsing: target)
        self.method = method
        self.target = target
        self.path = parsed.path
        self.pathSegments = parsed.segments
        self.query = parsed.query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The single value of query parameter `name`, or nil if absent.
    package func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// Names that occur more than once in the query, in first-seen order.
    package var duplicateQueryNames: [String] {
        var seen = Set<String>(), dup: [String] = []
        for item in query where !seen.insert(item.name).inserted && !dup.contains(item.name) {
            dup.append(item.name)
        }
        return dup
    }
}
