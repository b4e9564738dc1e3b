/// One element of the Playback API's error body, which is a JSON **array** of these.
///
/// Nil `error_subcode` and `message` are omitted. Encode and decode bodies as `[APIError]`.
public struct APIError: Codable, Sendable, Equatable, Hashable {
    /// The `error_code`, one of `PlaybackAPIErrorCode`.
    public var errorCode: String
    /// The `error_subcode`, one of `PlaybackAPIErrorCode`, if any.
    public var errorSubcode: String?
    /// A human-readable message, if any.
    public var message: String?

    /// Creates an error element.
    public init(errorCode: String, errorSubcode: String? = nil, message: String? = nil) {
        self.errorCode = errorCode
        self.errorSubcode = errorSubcode
        self.message = message
    }

    enum CodingKeys: String, CodingKey {
        case message
        case errorCode = "error_code"
        case errorSubcode = "error_subcode"
    }
}

/// The `error_code` and `error_subcode` strings of the Playback API (reference section 1).
public enum PlaybackAPIErrorCode {
    // MARK: error_code

    /// 400: the request is malformed (see the subcodes).
    public static let badRequest = "BAD_REQUEST"
    /// 401: missing or unknown policy key.
    public static let invalidPolicyKey = "INVALID_POLICY_KEY"
    /// 401/403: access refused (see the subcodes).
    public static let accessDenied = "ACCESS_DENIED"
    /// 404: no such resource.
    public static let notFound = "NOT_FOUND"
    /// 405: only GET, HEAD and OPTIONS are allowed.
    public static let methodNotAllowed = "METHOD_NOT_ALLOWED"
    /// 500: internal failure.
    public static let serverError = "SERVER_ERROR"
    /// 502/503: an upstream service is unavailable.
    public static let serviceUnavailable = "SERVICE_UNAVAILABLE"
    /// 504: an upstream service timed out.
    public static let serverTimeout = "SERVER_TIMEOUT"

    // MARK: error_subcode of BAD_REQUEST

    /// A query parameter was given more than once.
    public static let duplicateParameters = "DUPLICATE_PARAMETERS"
    /// The search request is invalid.
    public static let invalidSearch = "INVALID_SEARCH"
    /// The `q` expression cannot be parsed.
    public static let illegalQuery = "ILLEGAL_QUERY"
    /// The `sort` value is not supported.
    public static let invalidSort = "INVALID_SORT"

    // MARK: error_subcode of ACCESS_DENIED

    /// 401: the account requires a playback-restriction token.
    public static let tokenRequired = "TOKEN_REQUIRED"
    /// 401: the playback-restriction token does not validate.
    public static let tokenValidation = "TOKEN_VALIDATION"
    /// 403: the policy key belongs to another account.
    public static let accountID = "ACCOUNT_ID"
    /// 403: the policy key does not allow this API (e.g. search).
    public static let api = "API"
    /// 403: the client's location is not allowed.
    public static let clientGeo = "CLIENT_GEO"
    /// 403: the video is not playable (inactive, scheduled, …).
    public static let videoNotPlayable = "VIDEO_NOT_PLAYABLE"
    /// 403: the device limit of the playback-restriction token is reached.
    public static let deniedByDeviceLimiting = "DENIED_BY_DEVICE_LIMITING"
    /// 403: the concurrent-stream limit is reached.
    public static let deniedByStreamLimit = "DENIED_BY_STREAM_LIMIT"

    // MARK: error_subcode of NOT_FOUND

    /// No video with that id or reference id.
    public static let videoNotFound = "VIDEO_NOT_FOUND"
    /// No playlist with that id or reference id.
    public static let playlistNotFound = "PLAYLIST_NOT_FOUND"
}
