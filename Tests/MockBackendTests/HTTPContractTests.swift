import Foundation
import MicroHTTP
import MockBackend
import Testing
import TestKit
import WireModels

/// CORS preflights, strict query parameters, and what the spec and the server say of null and NUL (issue 26).
@Suite("Contract, live: CORS, strict parameters, null and NUL")
struct HTTPContractTests {
    // MARK: 6. CORS and Allow

    @Test("OPTIONS on admin videos and accounts lists PATCH; a browser's PATCH preflight, then the PATCH, work")
    func patchPreflight() async throws {
        try await withLiveServer { server in
            let video = "/_admin/v1/accounts/\(Fixture.contoso)/videos/\(Fixture.contosoClearVideo)"
            let account = "/_admin/v1/accounts/\(Fixture.contoso)"
            for path in [video, account, "/_admin/v1/accounts/\(Fixture.contoso)/playlists/\(Fixture.contosoPlaylist)"] {
                let preflight = try await Curl.fetch(server.app.baseURL + path, [
                    "-X", "OPTIONS", "-H", "Origin: https://app.example", "-H", "Access-Control-Request-Method: PATCH",
                    "-H", "Access-Control-Request-Headers: authorization, content-type",
                ])
                #expect(preflight.status == 204, "\(path)")
                #expect(preflight.header("Allow")?.contains("PATCH") == true, "\(path): \(preflight.header("Allow") ?? "")")
                let methods = (preflight.header("Access-Control-Allow-Methods") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                #expect(methods.contains("PATCH"), "\(path)")
                let headers = (preflight.header("Access-Control-Allow-Headers") ?? "").lowercased()
                #expect(headers.contains("authorization") && headers.contains("content-type"))
                #expect(preflight.header("Access-Control-Allow-Origin") == "*")
            }
            #expect(try await Curl.fetch(server.app.baseURL + video, ["-X", "OPTIONS"]).header("Allow") == "GET, HEAD, PUT, PATCH, DELETE, OPTIONS")
            let patched = try await Contract.admin(server, video, ["-X", "PATCH", "-H", "Origin: https://app.example",
                                                               "-H", "Content-Type: application/merge-patch+json", "--data-binary", #"{"name":"Renamed"}"#])
            #expect(patched.status == 200, "\(patched.text)")
            #expect(patched.header("Access-Control-Allow-Origin") == "*")
        }
    }

    // MARK: 7. Strict parameters

    @Test("a query parameter that does not parse is a 400 with the error array, everywhere")
    func strictParameters() async throws {
        try await withLiveServer { server in
            for (path, subcode) in [
                ("/_admin/v1/requests?limit=abc", "INVALID_LIMIT"), ("/_admin/v1/requests?limit=null", "INVALID_LIMIT"),
                ("/_admin/v1/requests?limit=", "INVALID_LIMIT"), ("/_admin/v1/requests?limit=%2B5", "INVALID_LIMIT"),
                ("/_admin/v1/requests?status=null", "INVALID_STATUS"), ("/_admin/v1/requests?after=1.5", "INVALID_AFTER"),
                ("/_admin/v1/requests/stream?after=x", "INVALID_AFTER"),
                ("/_admin/v1/licenses?limit=null", "INVALID_LIMIT"), ("/_admin/v1/licenses?state=null", "INVALID_STATE"),
                ("/_admin/v1/tracker/events?limit=abc", "INVALID_LIMIT"),
            ] {
                try Contract.expectError(try await Contract.admin(server, path), 400, "BAD_REQUEST", subcode)
            }
            for path in [Contract.videos + "?limit=null", Contract.videos + "?offset=abc",
                         "/playback/v1/accounts/\(Fixture.northwind)/playlists/\(Fixture.featuredPlaylist)?limit=null"] {
                try Contract.expectError(try await Contract.get(server, path), 400, "BAD_REQUEST", "ILLEGAL_QUERY")
            }
            #expect(try await Contract.admin(server, "/_admin/v1/requests?limit=0").status == 200)
        }
    }

    // MARK: 8. Spec and server agree on null and NUL

    @Test("null where the spec says integer or object, and NUL in any string, are refused")
    func nullAndNUL() async throws {
        try await withLiveServer { server in
            let rule = try await Contract.admin(server, "/_admin/v1/faults", ["-X", "POST", "-H", "Content-Type: application/json",
                                                                          "--data-binary", #"{"route":"image","status":503,"corrupt_bytes":null}"#])
            try Contract.expectError(rule, 400, "BAD_REQUEST", "INVALID_RULE")
            #expect(try await Contract.admin(server, "/_admin/v1/faults").text.contains(#""rules":[]"#))
            let event = #"[{"id":"e1","event":"play_started","video_id":"6415818918101","account_id":"6415818918001","time":"2026-11-25T17:00:00.000Z","details":null}]"#
            try Contract.expectError(try await Curl.fetch(server.app.baseURL + "/tracker", ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", event]),
                                 400, "BAD_REQUEST", "INVALID_EVENT")
            let nul = #"[{"id":"e\u0000","event":"play_started","video_id":"6415818918101","account_id":"6415818918001","time":"2026-11-25T17:00:00.000Z"}]"#
            try Contract.expectError(try await Curl.fetch(server.app.baseURL + "/tracker", ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", nul]),
                                 400, "BAD_REQUEST", "INVALID_BODY")
            try Contract.expectError(try await Contract.admin(server, "/_admin/v1/tracker/events?video=a%00b"), 400, "BAD_REQUEST", "INVALID_PARAMETER")

            // The spec says the same: the fault rule's and event's members are not nullable, strings exclude NUL.
            let spec = try String(contentsOf: OpenAPITests.specFile, encoding: .utf8)
            #expect(spec.contains("corrupt_bytes: {type: integer, minimum: 1}"))
            #expect(spec.contains("details: {type: object, description: Anything else.}"))
            #expect(!spec.contains("{type: string}"))
            #expect(spec.contains(#"account: {type: string, pattern: '^[^\x00]*$'}"#))
        }
    }
}
