import Foundation
import MicroHTTP
import MockBackend
import Testing
import TestKit
import WireModels

/// Requests the contract tests (issue 26) make of a live server with curl.
enum Contract {
    static let videos = "/playback/v1/accounts/\(Fixture.northwind)/videos"

    static func get(_ server: MockBackendServer, _ path: String, key: String? = Fixture.northwindSearchKey,
                    _ options: [String] = []) async throws -> CurlResponse {
        try await Curl.fetch(server.app.baseURL + path, (key.map { ["-H", "BCOV-Policy: \($0)"] } ?? []) + options)
    }

    static func admin(_ server: MockBackendServer, _ path: String, _ options: [String] = []) async throws -> CurlResponse {
        try await Curl.fetch(server.app.baseURL + path, ["-H", "Authorization: Bearer \(server.app.adminToken)"] + options)
    }

    static func expectError(_ response: CurlResponse, _ status: Int, _ code: String, _ subcode: String?,
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        let errors = try response.apiErrors()
        #expect(errors.count == 1, sourceLocation: sourceLocation)
        #expect(errors.first?.errorCode == code, sourceLocation: sourceLocation)
        #expect(errors.first?.errorSubcode == subcode, "\(response.text)", sourceLocation: sourceLocation)
    }
}
