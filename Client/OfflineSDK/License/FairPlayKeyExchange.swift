import Foundation

/// The two network steps of the FairPlay key exchange, in the role of Brightcove's
/// authorization proxy (`authProxy`): fetching the application certificate and sending a
/// license request (SPC) for its answer (CKC). Give one in
/// `OfflineVideoManagerConfiguration.keyExchange` to route, sign or answer these requests
/// yourself; each method gets the request the SDK would send and `send`, which sends a request
/// the SDK's way. The defaults just send.
///
/// ```swift
/// struct SigningProxy: FairPlayKeyExchange {
///     func contentKey(_ request: KeyExchangeRequest, send: KeyExchangeSender) async throws -> KeyExchangeResponse {
///         var signed = request
///         signed.headers.append(("X-Signature", sign(request.body)))
///         return try await send(signed)
///     }
/// }
/// ```
///
/// What comes back is checked as if the server had answered: a CKC that does not verify
/// against its request, or a certificate that is not one, is refused. A thrown error fails the
/// step with `applicationCertificateRequestFailed` or `contentKeyRequestFailed` (reason
/// `network`), the error kept as `underlying`.
public protocol FairPlayKeyExchange: Sendable {
    /// The application certificate: `request.url` is the video's certificate URL (GET).
    func applicationCertificate(_ request: KeyExchangeRequest, send: KeyExchangeSender) async throws -> KeyExchangeResponse
    /// A license request: `request.body` is the SPC JSON POSTed to the key request URL.
    func contentKey(_ request: KeyExchangeRequest, send: KeyExchangeSender) async throws -> KeyExchangeResponse
}

extension FairPlayKeyExchange {
    public func applicationCertificate(_ request: KeyExchangeRequest, send: KeyExchangeSender) async throws -> KeyExchangeResponse {
        try await send(request)
    }

    public func contentKey(_ request: KeyExchangeRequest, send: KeyExchangeSender) async throws -> KeyExchangeResponse {
        try await send(request)
    }
}

/// Sends a key-exchange request the SDK's way (its HTTP client, TLS settings and timeouts).
public typealias KeyExchangeSender = @Sendable (KeyExchangeRequest) async throws -> KeyExchangeResponse

/// One request of the key exchange.
public struct KeyExchangeRequest: Sendable {
    /// What the request is for.
    public struct Purpose: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The application certificate.
        public static let certificate = Purpose("certificate")
        /// A new offline license.
        public static let acquire = Purpose("acquire")
        /// A renewal of a license.
        public static let renew = Purpose("renew")
        /// The report of a license's first playback.
        public static let firstPlay = Purpose("first-play")
        /// A license given back.
        public static let release = Purpose("release")
        public var description: String { name }
    }

    /// What the request is for.
    public var purpose: Purpose
    /// The URL (with its `fastly_token`).
    public var url: String
    /// `GET` or `POST`.
    public var method: String
    /// The header fields.
    public var headers: [(String, String)]
    /// The body (the SPC JSON for a license request; empty for the certificate).
    public var body: [UInt8]
    /// The video's account.
    public var accountID: String
    /// The content key id (`skd://` without the scheme); nil for the certificate.
    public var contentKeyID: String?

    /// Creates a request.
    public init(purpose: Purpose, url: String, method: String, headers: [(String, String)] = [], body: [UInt8] = [],
                accountID: String, contentKeyID: String? = nil) {
        self.purpose = purpose
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.accountID = accountID
        self.contentKeyID = contentKeyID
    }
}

/// The answer to a key-exchange request.
public struct KeyExchangeResponse: Sendable {
    /// The HTTP status (200 for a certificate or a CKC).
    public var status: Int
    /// The header fields (`Date` raises the SDK's trusted time).
    public var headers: [(String, String)]
    /// The certificate (DER) or the CKC bytes; the error array on a refusal.
    public var body: [UInt8]

    /// Creates an answer.
    public init(status: Int, headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
}
