import Foundation
import MicroHTTP
import WireModels

/// Responses in the Playback API's formats: JSON bodies, the error array, CORS headers.
enum APIResponse {
    /// The error array `[{"error_code":…,"error_subcode":…,"message":…}]` with `status`.
    static func error(_ status: Int, _ code: String, _ subcode: String? = nil, _ message: String) -> HTTPResponse {
        let body = (try? WireJSON.encoder(sortedKeys: true).encode([APIError(errorCode: code, errorSubcode: subcode, message: message)])) ?? Data("[]".utf8)
        return .bytes(Array(body), status: status, contentType: "application/json; charset=utf-8")
    }

    /// The error array for a failure found before routing, mapped to the Playback API's codes.
    static func error(status: Int, message: String) -> HTTPResponse {
        switch status {
        case 400: error(400, PlaybackAPIErrorCode.badRequest, nil, message)
        case 404: error(404, PlaybackAPIErrorCode.notFound, nil, message)
        case 405: error(405, PlaybackAPIErrorCode.methodNotAllowed, nil, message)
        case 413: error(413, "REQUEST_TOO_LARGE", nil, message)
        case 431: error(431, "REQUEST_HEADERS_TOO_LARGE", nil, message)
        case 500...599: error(status, PlaybackAPIErrorCode.serverError, nil, message)
        default: error(status, "ERROR", nil, message)
        }
    }

    /// A JSON body encoded with the wire encoder.
    static func json(_ value: some Encodable, status: Int = 200) -> HTTPResponse {
        do {
            return .bytes(Array(try WireJSON.encoder(sortedKeys: true).encode(value)), status: status, contentType: "application/json; charset=utf-8")
        } catch {
            return self.error(500, PlaybackAPIErrorCode.serverError, nil, "cannot encode response: \(error)")
        }
    }

    /// Headers that let a browser page call every endpoint.
    static func addCORS(to response: inout HTTPResponse, allowedMethods: String = "GET, HEAD, POST, OPTIONS") {
        response.headers.add("Access-Control-Allow-Origin", "*")
        response.headers.add("Access-Control-Allow-Methods", allowedMethods)
        response.headers.add("Access-Control-Allow-Headers",
                             "Accept, Authorization, BCOV-Policy, BCOV-Auth, Content-Type, Range, If-None-Match, X-BOLT-OFFLINE-LICENSE, X-BC-CRT-CONFIG")
        response.headers.add("Access-Control-Expose-Headers", "Content-Length, Content-Range, ETag")
        response.headers.add("Access-Control-Max-Age", "600")
    }
}
