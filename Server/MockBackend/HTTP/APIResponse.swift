import Foundation
import Logging
import MicroHTTP
import WireModels

/// Responses in the Playback API's formats: JSON bodies, the error array, CORS headers.
enum APIResponse {
    /// The error array `[{"error_code":…,"error_subcode":…,"message":…}]` with the error's status.
    static func error(_ error: some HTTPResponseError) -> HTTPResponse {
        let body = (try? WireJSON.encoder(sortedKeys: true).encode([error.apiError])) ?? Data("[]".utf8)
        return .bytes(Array(body), status: error.status, contentType: "application/json; charset=utf-8")
    }

    /// The answer to whatever a handler threw: the error's own when it has one; otherwise a
    /// 500 with the error array, and the error logged.
    /// A store that cannot be reached answers 503 with `Retry-After` (`StoreAvailability`).
    static func error(for error: any Error, request: HTTPRequest, logger: Logger) -> HTTPResponse {
        let underlying = (error as? CatalogEditError).flatMap { $0.code == .storageFailed ? $0.underlying : nil } ?? error
        if StoreAvailability.isUnavailable(underlying) {
            logger.warning("\(request.method) \(request.path): database unavailable: \(underlying)")
            var response = self.error(StoreAvailability.unavailable(underlying))
            response.headers.set("Retry-After", "1")
            return response
        }
        if let known = error as? any HTTPResponseError {
            var response = self.error(known)
            if response.status == 503 && response.headers["Retry-After"] == nil { response.headers.set("Retry-After", "1") }
            return response
        }
        logger.error("\(request.method) \(request.path) failed: \(error)")
        return self.error(HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "The request failed: \(error)"))
    }

    /// The error array for a failure found before routing, mapped to the Playback API's codes.
    static func error(status: Int, message: String) -> HTTPResponse {
        let code = switch status {
        case 400: PlaybackAPIErrorCode.badRequest
        case 404: PlaybackAPIErrorCode.notFound
        case 405: PlaybackAPIErrorCode.methodNotAllowed
        case 413: "REQUEST_TOO_LARGE"
        case 431: "REQUEST_HEADERS_TOO_LARGE"
        case 500...599: PlaybackAPIErrorCode.serverError
        default: "ERROR"
        }
        return error(HTTPError(status, code, nil, message))
    }

    /// A JSON body encoded with the wire encoder.
    static func json(_ value: some Encodable, status: Int = 200) -> HTTPResponse {
        do {
            return .bytes(Array(try WireJSON.encoder(sortedKeys: true).encode(value)), status: status, contentType: "application/json; charset=utf-8")
        } catch {
            return self.error(HTTPError(500, PlaybackAPIErrorCode.serverError, nil, "cannot encode response: \(error)"))
        }
    }

    /// Headers that let a browser page call every endpoint.
    static func addCORS(to response: inout HTTPResponse, allowedMethods: String = "GET, HEAD, POST, OPTIONS") {
        response.headers.add("Access-Control-Allow-Origin", "*")
        response.headers.add("Access-Control-Allow-Methods", allowedMethods)
        response.headers.add("Access-Control-Allow-Headers",
                             "Accept, Authorization, BCOV-Policy, BCOV-Auth, Content-Type, Range, If-Range, If-None-Match, X-Admin-Token, X-BOLT-OFFLINE-LICENSE, X-BC-CRT-CONFIG, X-Device-ID, Idempotency-Key")
        response.headers.add("Access-Control-Expose-Headers", "Content-Length, Content-Range, ETag, Repr-Digest, Content-Digest, X-License-ID, X-License-Rental-End, X-License-Play-Duration")
        response.headers.add("Access-Control-Max-Age", "600")
    }
}
