import MicroHTTP
import WireModels

/// An error that knows its answer: an HTTP status and the one entry of the Playback API's
/// error array. Route handlers throw these, and `MockBackendApp.handle` renders whatever
/// they throw with `APIResponse.error(for:logger:)`, the one place the array is written.
protocol HTTPResponseError: Error {
    /// The HTTP status of the answer.
    var status: Int { get }
    /// The error array's entry: `error_code`, `error_subcode`, `message`.
    var apiError: APIError { get }
}

extension HTTPResponseError {
    /// The error array with the status.
    var response: HTTPResponse { APIResponse.error(self) }
}

/// A refusal with its status, code, subcode and message, for the failures that have no
/// error type of their own.
struct HTTPError: HTTPResponseError, Equatable {
    var status: Int
    var code: String
    var subcode: String?
    var message: String

    init(_ status: Int, _ code: String, _ subcode: String?, _ message: String) {
        self.status = status
        self.code = code
        self.subcode = subcode
        self.message = message
    }

    var apiError: APIError { APIError(errorCode: code, errorSubcode: subcode, message: message) }

    /// The 404 for a path that names nothing.
    static func notFound(_ request: HTTPRequest) -> HTTPError {
        HTTPError(404, PlaybackAPIErrorCode.notFound, nil, "No such resource: \(request.path)")
    }
}
