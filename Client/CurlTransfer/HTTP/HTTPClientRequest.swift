/// One HTTP request for `HTTPClient.send(_:)`: an API call whose answer is read into memory.
///
/// ```swift
/// var request = HTTPClientRequest(url: "http://127.0.0.1:8080/playback/v1/accounts/1/videos/2")
/// request.headers = [("BCOV-Policy", policyKey)]
/// request.timeout = .seconds(10)
/// ```
package struct HTTPClientRequest: Sendable {
    /// The request method.
    package var method: Method
    /// The absolute http or https URL.
    package var url: String
    /// Header fields sent in this order. An empty value sends the field with an empty value.
    package var headers: [(String, String)]
    /// The request body; nil sends none (a POST with nil sends an empty body).
    package var body: [UInt8]?
    /// The longest the whole exchange may take, connecting and redirects included (nil: the
    /// engine's `requestTimeout`, 30 seconds unless configured).
    package var timeout: Duration?
    /// Sent at most once: on a new connection, so libcurl never sends it again by itself when a
    /// kept-alive connection turns out to have died (it does that for any request, POSTs too).
    /// For a request that must not reach the server twice, as a license request's SPC.
    package var sendOnce: Bool

    /// Creates a request; GET with no headers, no body and the engine's timeout by default.
    package init(url: String, method: Method = .get, headers: [(String, String)] = [],
                body: [UInt8]? = nil, timeout: Duration? = nil, sendOnce: Bool = false) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.sendOnce = sendOnce
    }

    /// An HTTP method: the common ones as constants, any other token by name.
    package struct Method: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The method token as sent, e.g. "GET".
        package let rawValue: String
        /// Creates a method from its token.
        package init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a method from its token.
        package init(_ rawValue: String) { self.rawValue = rawValue }

        /// GET.
        package static let get = Method("GET")
        /// HEAD: the response has headers and no body.
        package static let head = Method("HEAD")
        /// POST.
        package static let post = Method("POST")
        /// PUT.
        package static let put = Method("PUT")
        /// DELETE.
        package static let delete = Method("DELETE")

        /// The token.
        package var description: String { rawValue }
    }
}

/// A response read in full. Any status is a response, not an error: 404 and 500 arrive here too.
package struct HTTPClientResponse: Sendable {
    /// The status code of the final response (after redirects).
    package var status: Int
    /// The final response's header fields.
    package var headers: HTTPClientHeaders
    /// The body as received (no content decoding is asked for, so none is applied).
    package var body: [UInt8]
    /// The URL that answered, after following redirects.
    package var effectiveURL: String

    /// Creates a response.
    package init(status: Int, headers: HTTPClientHeaders, body: [UInt8], effectiveURL: String) {
        self.status = status
        self.headers = headers
        self.body = body
        self.effectiveURL = effectiveURL
    }

    /// True for 2xx statuses.
    package var isSuccess: Bool { (200..<300).contains(status) }
}

/// Response header fields in the order received; names compare case-insensitively and
/// repeated fields keep every value.
package struct HTTPClientHeaders: Sendable, Sequence {
    /// The fields in order, names as the server sent them.
    package let fields: [(name: String, value: String)]

    /// Creates headers from fields.
    package init(_ fields: [(name: String, value: String)]) {
        self.fields = fields
    }

    /// The first value of `name`, compared case-insensitively; nil when absent.
    package subscript(name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Every value of `name`, in the order received.
    package func values(for name: String) -> [String] {
        fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// Iterates the fields in order.
    package func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}
