import Foundation
import Logging
@testable import MockBackend
import MicroHTTP
import Testing
import TestKit
import WireModels

@Suite("Errors a handler throws, rendered in one place")
struct ErrorRenderingTests {
    static let request = try! HTTPRequest(method: "GET", target: "/somewhere")

    static func body(_ response: HTTPResponse) -> String {
        guard case .bytes(let bytes) = response.body else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("an error that knows its answer is the error array with its status, byte for byte")
    func knownError() {
        let refusal = HTTPError(404, PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound, "No video 1 in account 2")
        let response = APIResponse.error(for: refusal, request: Self.request, logger: quietLogger)
        #expect(response.status == 404)
        #expect(response.headers["Content-Type"] == "application/json; charset=utf-8")
        #expect(Self.body(response) == #"[{"error_code":"NOT_FOUND","error_subcode":"VIDEO_NOT_FOUND","message":"No video 1 in account 2"}]"#)
    }

    @Test("an admin refusal's code sets its status and error code; the subcode stays its own")
    func catalogEditError() {
        let cases: [(CatalogEditError.Code, Int, String)] = [
            (.invalid, 400, "BAD_REQUEST"), (.notFound, 404, "NOT_FOUND"), (.conflict, 409, "CONFLICT"), (.storageFailed, 500, "SERVER_ERROR"),
        ]
        for (code, status, errorCode) in cases {
            let response = APIResponse.error(for: CatalogEditError(code, "SUB", "why"), request: Self.request, logger: quietLogger)
            #expect(response.status == status)
            #expect(Self.body(response) == #"[{"error_code":"\#(errorCode)","error_subcode":"SUB","message":"why"}]"#)
        }
    }

    @Test("any other error is a 500 with the error array, and is logged")
    func unknownError() {
        struct Broken: Error, CustomStringConvertible { var description: String { "disk on fire" } }
        let logged = LoggedMessages()
        let logger = Logger(label: "test") { _ in logged }
        let response = APIResponse.error(for: Broken(), request: Self.request, logger: logger)
        #expect(response.status == 500)
        let errors = try? JSONDecoder().decode([APIError].self, from: Data(Self.body(response).utf8))
        #expect(errors?.count == 1 && errors?.first?.errorCode == "SERVER_ERROR")
        #expect(errors?.first?.message?.contains("disk on fire") == true)
        #expect(logged.messages.contains { $0.contains("GET /somewhere") && $0.contains("disk on fire") })
    }
}

/// A log handler that keeps every message at error level and above.
/// Sendable without checking: `stored` is only touched with `lock` held; `metadata` and
/// `logLevel` are set before the logger is shared.
private final class LoggedMessages: LogHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .error
    var messages: [String] { lock.withLock { stored } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lock.withLock { stored.append(event.message.description) }
    }
}
