/// One HTTP request for `HTTPClient.send(_:)`: an API call whose answer is read into memory.
///
/// ```swift
/// var request = HTTPClientRequest(url: "http://127.0.0.1:8080/playback/v1/accounts/1/videos/2")
/// request.headers = [("BCOV-Policy", policyKey)]
/// request.timeout = .seconds(10)
/// ```
public struct HTTPClientRequest: Sendable {
    /// The request method.
    public var method: Method
    /// The absolute http or https URL.
    public var url: String
    /// Header fields sent in this order. An empty value sends the field with an empty value.
    public var headers: [(String, String)]
    /// The request body; nil sends none (a POST with nil sends an empty body).
    public var body: [UInt8]?
    /// The longest the whole exchange may take, connecting and redirects included (nil: the
    /// engine's `requestTimeout`, 30 seconds unless configured).
    public var timeout: Duration?

    /// Creates a request; GET with no headers, no body and the engine's timeout by default.
    public init(url: String, method: Method = .get, headers: [(String, String)] = [],
                body: [UInt8]? = nil, timeout: Duration? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// An HTTP method: the common ones as constants, any other token by name.
    public struct Method: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The method token as sent, e.g. "GET".
        public let rawValue: String
        /// Creates a method from its token.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Creates a method from its token.
        public init(_ rawValue: String) { self.rawValue = rawValue }

        /// GET.
        public static let get = Method("GET")
        /// HEAD: the response has headers and no body.
        public static let head = Method("HEAD")
        /// POST.
        public static let post = Method("POST")
        /// PUT.
        public static let put = Method("PUT")
        /// DELETE.
        public static let delete = Method("DELETE")

        /// The token.
        public var description: String { rawValue }
    }
}

/// A response read in full. Any status is a response, not an error: 404 and 500 arrive here too.
public struct HTTPClientResponse: Sendable {
    /// The status code of the final response (after redirects).
    public var status: Int
    /// The final response's header fields.
    public var headers: HTTPClientHeaders
    /// The body as received (no content decoding is asked for, so none is applied).
    public var body: [UInt8]
    /// The URL that answered, after following redirects.
    public var effectiveURL: String

    /// Creates a response.
    public init(status: Int, headers: HTTPClientHeaders, body: [UInt8], effectiveURL: String) {
        self.status = status
        self.headers = headers
        self.body = body
        self.effectiveURL = effectiveURL
    }

    /// True for 2xx statuses.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// Response header fields in the order received; names compare case-insensitively and
/// repeated fields keep every value.
public struct HTTPClientHeaders: Sendable, Sequence {
    /// The fields in order, names as the server sent them.
    public let fields: [(name: String, value: String)]

    /// Creates headers from fields.
    public init(_ fields: [(name: String, value: String)]) {
        self.fields = fields
    }

    /// The first value of `name`, compared case-insensitively; nil when absent.
    public subscript(name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Every value of `name`, in the order received.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}
