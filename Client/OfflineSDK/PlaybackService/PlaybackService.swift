package import CurlTransfer
public import Foundation
public import WireModels

/// Finds videos and playlists through the Playback API, with a policy key or a
/// playback-restriction JWT.
///
/// ```swift
/// let service = PlaybackService(baseURL: "http://127.0.0.1:8080", accountID: "6415818918001",
///                               policyKey: "BCpk…")
/// let video = try await service.findVideo(referenceID: "nw-clear-bars")
/// print(video.name, video.canBeDownloaded)
/// ```
public struct PlaybackService: Sendable {
    /// Scheme, host and port of the Playback API.
    public var baseURL: String
    /// The account whose videos this service finds.
    public var accountID: String
    /// The policy key, sent as `BCOV-Policy`.
    public var policyKey: String?
    /// A playback-restriction JWT, sent as `Authorization: Bearer`.
    public var authToken: String?
    private let client: HTTPClient
    /// How a lookup that failed on the way is tried again (`RetryPolicy`: transport failures,
    /// 408, 429, 5xx; `Retry-After` honoured). A lookup is interactive: three tries, no time floor,
    /// so a dead server is an error within a second, and a busy one is asked again when it says.
    static let retry = RetryPolicy(failuresWithoutProgress: 3, timeWithoutProgress: .zero)

    /// Creates a service. Give a policy key, a JWT, or both. Services share one HTTP client
    /// (and its connections).
    ///
    /// - Parameters:
    ///   - baseURL: Scheme, host and port of the Playback API (a trailing `/` is dropped).
    ///   - accountID: The account whose videos the service finds.
    ///   - policyKey: The policy key, sent as `BCOV-Policy`; nil by default.
    ///   - authToken: A playback-restriction JWT, sent as `Authorization: Bearer`; nil by default.
    public init(baseURL: String, accountID: String, policyKey: String? = nil, authToken: String? = nil) {
        self.init(baseURL: baseURL, accountID: accountID, policyKey: policyKey, authToken: authToken, client: PlaybackService.sharedClient)
    }

    /// A service sending its requests through `client` (the SDK's modules and tests; an app
    /// gives a CA file instead, see `init(baseURL:accountID:policyKey:authToken:trustedCAFile:)`).
    package init(baseURL: String, accountID: String, policyKey: String? = nil, authToken: String? = nil, client: HTTPClient) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.accountID = accountID
        self.policyKey = policyKey
        self.authToken = authToken
        self.client = client
    }

    /// A service whose HTTPS connections trust the CA certificates in `trustedCAFile` (PEM)
    /// instead of the system's: the mock backend's local CA (`tls ca FILE` at its start).
    /// A server certificate they did not sign fails with `TransferError.Code.untrustedCertificate`.
    ///
    /// - Parameters:
    ///   - baseURL: Scheme, host and port of the Playback API (a trailing `/` is dropped).
    ///   - accountID: The account whose videos the service finds.
    ///   - policyKey: The policy key, sent as `BCOV-Policy`; nil by default.
    ///   - authToken: A playback-restriction JWT, sent as `Authorization: Bearer`; nil by default.
    ///   - trustedCAFile: A PEM file of the CA certificates HTTPS connections trust instead of the system's.
    public init(baseURL: String, accountID: String, policyKey: String? = nil, authToken: String? = nil, trustedCAFile: URL) {
        var configuration = TransferEngine.Configuration()
        configuration.trustedCAFile = trustedCAFile.path
        self.init(baseURL: baseURL, accountID: accountID, policyKey: policyKey, authToken: authToken,
                  client: HTTPClient(engine: TransferEngine(configuration: configuration)))
    }

    /// Where a video came from, enough to build the same service again.
    public struct Origin: Sendable, Equatable {
        /// The Playback API's base URL.
        public var baseURL: String
        /// The account.
        public var accountID: String
        /// The policy key, if the service had one.
        public var policyKey: String?
        /// The playback-restriction JWT, if the service had one (kept in memory only; license
        /// requests send it as `BCOV-Auth`).
        public var authToken: String?

        /// Creates an origin.
        ///
        /// - Parameters:
        ///   - baseURL: The Playback API's base URL.
        ///   - accountID: The account.
        ///   - policyKey: The policy key, if the service had one.
        ///   - authToken: The playback-restriction JWT, if the service had one; nil by default.
        public init(baseURL: String, accountID: String, policyKey: String?, authToken: String? = nil) {
            self.baseURL = baseURL
            self.accountID = accountID
            self.policyKey = policyKey
            self.authToken = authToken
        }
    }

    /// This service's origin, stamped on every video it finds.
    public var origin: Origin { Origin(baseURL: baseURL, accountID: accountID, policyKey: policyKey, authToken: authToken) }

    /// A service for `origin` (its policy key and JWT).
    ///
    /// - Parameter origin: The base URL, account, policy key and JWT, as ``origin`` gave them (a video's
    ///   ``PlaybackVideo/origin``).
    public init(origin: Origin) {
        self.init(origin: origin, client: PlaybackService.sharedClient)
    }

    /// A service for `origin` sending its requests through `client`.
    package init(origin: Origin, client: HTTPClient) {
        self.init(baseURL: origin.baseURL, accountID: origin.accountID, policyKey: origin.policyKey, authToken: origin.authToken,
                  client: client)
    }

    /// The client shared by services that are not given one (its connections are reused).
    package static let sharedClient = HTTPClient()

    /// The video with this id.
    ///
    /// - Parameter id: The video id.
    /// - Throws: ``PlaybackServiceError``: ``PlaybackServiceError/Code/invalidArgument`` for an empty id (or
    ///   account id) or one holding `/`, before any request; ``PlaybackServiceError/Code/transport`` when the
    ///   server could not be reached, ``PlaybackServiceError/Code/http`` for a non-2xx answer (its status and
    ///   error array kept), after the retries for failures that may pass;
    ///   ``PlaybackServiceError/Code/decoding`` when the answer is not a video.
    public func findVideo(id: String) async throws(PlaybackServiceError) -> PlaybackVideo {
        try PlaybackVideo.decoding(await get(path: "videos/\(try PlaybackService.segment(id))"), origin: origin)
    }

    /// The video with this reference id.
    ///
    /// - Parameter referenceID: The video's reference id.
    /// - Throws: ``PlaybackServiceError``: ``PlaybackServiceError/Code/invalidArgument`` for an empty reference
    ///   id (or account id) or one holding `/`, before any request; ``PlaybackServiceError/Code/transport``
    ///   when the server could not be reached, ``PlaybackServiceError/Code/http`` for a non-2xx answer (its
    ///   status and error array kept), after the retries for failures that may pass;
    ///   ``PlaybackServiceError/Code/decoding`` when the answer is not a video.
    public func findVideo(referenceID: String) async throws(PlaybackServiceError) -> PlaybackVideo {
        try PlaybackVideo.decoding(await get(path: "videos/ref:\(try PlaybackService.segment(referenceID))"), origin: origin)
    }

    /// A playlist and a page of its videos.
    ///
    /// - Parameters:
    ///   - id: The playlist id.
    ///   - limit: The most videos in the page; nil (the default) leaves it to the server.
    ///   - offset: How many videos to skip before the page; nil (the default) skips none.
    /// - Throws: ``PlaybackServiceError``: ``PlaybackServiceError/Code/invalidArgument`` for an empty id (or
    ///   account id) or one holding `/`, before any request; ``PlaybackServiceError/Code/transport`` when the
    ///   server could not be reached, ``PlaybackServiceError/Code/http`` for a non-2xx answer (its status and
    ///   error array kept), after the retries for failures that may pass;
    ///   ``PlaybackServiceError/Code/decoding`` when the answer is not a playlist.
    public func findPlaylist(id: String, limit: Int? = nil, offset: Int? = nil) async throws(PlaybackServiceError) -> PlaybackPlaylist {
        try PlaybackPlaylist.decoding(await get(path: "playlists/\(try PlaybackService.segment(id))",
                                                query: [("limit", limit.map(String.init)), ("offset", offset.map(String.init))]),
                                      origin: origin)
    }

    /// A playlist by reference id.
    ///
    /// - Parameters:
    ///   - referenceID: The playlist's reference id.
    ///   - limit: The most videos in the page; nil (the default) leaves it to the server.
    ///   - offset: How many videos to skip before the page; nil (the default) skips none.
    /// - Returns: The playlist and the page of its videos.
    /// - Throws: ``PlaybackServiceError``: ``PlaybackServiceError/Code/invalidArgument`` for an empty reference
    ///   id or one holding `/` (or an empty account id, or one holding `/`), before any request;
    ///   ``PlaybackServiceError/Code/transport`` when the server could not be reached,
    ///   ``PlaybackServiceError/Code/http`` for a non-2xx answer (its status and error array kept), after the
    ///   retries for failures that may pass; ``PlaybackServiceError/Code/decoding`` when the answer is not a
    ///   playlist.
    public func findPlaylist(referenceID: String, limit: Int? = nil, offset: Int? = nil) async throws(PlaybackServiceError) -> PlaybackPlaylist {
        _ = try PlaybackService.segment(referenceID)  // an empty one is refused, as `findVideo(referenceID:)` refuses it
        return try await findPlaylist(id: "ref:\(referenceID)", limit: limit, offset: offset)
    }

    /// Searches the account (needs a search-enabled policy key). `sort` is a field, `-field` for descending.
    ///
    /// - Parameters:
    ///   - query: The search expression, sent as `q`.
    ///   - sort: The field to sort by, `-field` for descending; nil (the default) leaves the server's order.
    ///   - limit: The most videos in the page; nil (the default) leaves it to the server.
    ///   - offset: How many videos to skip before the page; nil (the default) skips none.
    /// - Returns: How many videos match in all, and the page of them.
    /// - Throws: ``PlaybackServiceError``: ``PlaybackServiceError/Code/invalidArgument`` for an empty account
    ///   id or one holding `/`, before any request; ``PlaybackServiceError/Code/transport`` when the server
    ///   could not be reached, ``PlaybackServiceError/Code/http`` for a non-2xx answer (its status and error
    ///   array kept), after the retries for failures that may pass; ``PlaybackServiceError/Code/decoding`` when
    ///   the answer is not a search result.
    public func search(query: String, sort: String? = nil, limit: Int? = nil, offset: Int? = nil)
        async throws(PlaybackServiceError) -> (count: Int, videos: [PlaybackVideo]) {
        let body = try await get(path: "videos", query: [("q", query), ("sort", sort), ("limit", limit.map(String.init)),
                                                          ("offset", offset.map(String.init))])
        do {
            let result = try WireJSON.decoder().decode(SearchResult.self, from: Data(body))
            let raw = try WireJSON.decoder().decode(RawList.self, from: Data(body))
            return (result.count, zip(result.videos, raw.videos).map { PlaybackVideo(video: $0, properties: $1, origin: origin) })
        } catch {
            throw PlaybackServiceError(code: .decoding, status: 200, errors: [], message: "search answer is not a search result: \(error)", underlying: error)
        }
    }

    // MARK: Requests

    private func get(path: String, query: [(String, String?)] = []) async throws(PlaybackServiceError) -> [UInt8] {
        var url = "\(baseURL)/playback/v1/accounts/\(try PlaybackService.segment(accountID))/\(path)"
        let items = query.compactMap { name, value in value.map { "\(name)=\(URLToken.percentEncode($0))" } }
        if !items.isEmpty { url += "?" + items.joined(separator: "&") }
        var headers: [(String, String)] = [("Accept", "application/json")]
        if let policyKey { headers.append(("BCOV-Policy", policyKey)) }
        if let authToken { headers.append(("Authorization", "Bearer \(authToken)")) }
        return try await Self.retry.retrying { [client] _ -> Attempt<[UInt8], PlaybackServiceError> in
            let response: HTTPClientResponse
            do throws(TransferError) {
                response = try await client.send(HTTPClientRequest(url: url, headers: headers))
            } catch {
                let failure = PlaybackServiceError(code: .transport, status: nil, errors: [], message: error.message, underlying: error)
                return RetryPolicy.isRetryable(error) ? .again(failure, retryAfter: nil) : .failed(failure)
            }
            guard response.isSuccess else {
                let errors = (try? WireJSON.decoder().decode([APIError].self, from: Data(response.body))) ?? []
                let failure = PlaybackServiceError(code: .http, status: response.status, errors: errors,
                                                   message: errors.first?.message ?? "HTTP \(response.status)", underlying: nil)
                guard RetryPolicy.isRetryable(status: response.status) else { return .failed(failure) }
                return .again(failure, retryAfter: RetryPolicy.retryAfter(response.headers["Retry-After"]))
            }
            return .done(response.body)
        }
    }

    /// A path segment: refused if empty or holding "/", so ids cannot walk the URL.
    private static func segment(_ value: String) throws(PlaybackServiceError) -> String {
        guard !value.isEmpty, !value.contains("/") else {
            throw PlaybackServiceError(code: .invalidArgument, status: nil, errors: [], message: "'\(value)' is not a valid id", underlying: nil)
        }
        return URLToken.percentEncode(value)
    }
}

/// A playlist from the Playback API with its videos.
public struct PlaybackPlaylist: Sendable {
    /// The typed playlist (its `videos` as wire models).
    public let playlist: Playlist
    /// The page of videos, each with its whole JSON.
    public let videos: [PlaybackVideo]

    static func decoding(_ body: [UInt8], origin: PlaybackService.Origin?) throws(PlaybackServiceError) -> PlaybackPlaylist {
        do {
            let playlist = try WireJSON.decoder().decode(Playlist.self, from: Data(body))
            let raw = try WireJSON.decoder().decode(RawList.self, from: Data(body))
            return PlaybackPlaylist(playlist: playlist, videos: zip(playlist.videos, raw.videos).map { PlaybackVideo(video: $0, properties: $1, origin: origin) })
        } catch {
            throw PlaybackServiceError(code: .decoding, status: 200, errors: [], message: "answer is not a playlist: \(error)", underlying: error)
        }
    }
}

extension PlaybackVideo {
    static func decoding(_ body: [UInt8], origin: PlaybackService.Origin?) throws(PlaybackServiceError) -> PlaybackVideo {
        do {
            var video = try PlaybackVideo(json: body)
            video.origin = origin
            return video
        } catch {
            throw PlaybackServiceError(code: .decoding, status: 200, errors: [], message: "answer is not a video: \(error)", underlying: error)
        }
    }
}

/// The `videos` array of a playlist or search answer, kept raw.
private struct RawList: Decodable {
    var videos: [[String: JSONValue]]
}
