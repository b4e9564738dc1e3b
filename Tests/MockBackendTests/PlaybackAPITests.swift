import Foundation
import TestKit
import MicroHTTP
import MockBackend
import Testing
import WireModels

@Suite("Playback API: videos, policy keys, methods")
struct PlaybackAPITests {
    static let videoPath = "/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)"

    @Test("a video by id and by ref: are the same video")
    func byIDAndReference() async throws {
        try await withApp { app, _ in
            let byID = try app.video(Fixture.clearVideo)
            let response = try app.playback("/accounts/\(Fixture.northwind)/videos/ref:nw-clear-bars")
            #expect(response.status == 200)
            let byRef = try response.decoded(Video.self)
            #expect(byID.id == Fixture.clearVideo)
            #expect(byRef.id == Fixture.clearVideo)
            #expect(byRef.referenceID == "nw-clear-bars")
            #expect(byRef == byID)
            #expect(response.headers["Content-Type"] == "application/json; charset=utf-8")
        }
    }

    @Test("the policy key is accepted in all three forms, and under any header-name case", arguments: [
        [("BCOV-Policy", Fixture.northwindPlayKey)],
        [("BCOV-POLICY", Fixture.northwindPlayKey)],
        [("bcov-policy", Fixture.northwindPlayKey)],
        [("Authorization", "BCOV-Policy \(Fixture.northwindPlayKey)")],
        [("authorization", "bcov-policy \(Fixture.northwindPlayKey)")],
        [("Accept", "application/json;pk=\(Fixture.northwindPlayKey)")],
        [("Accept", "application/json; pk=\(Fixture.northwindPlayKey)")],
    ])
    func policyKeyForms(headers: [(String, String)]) async throws {
        try await withApp { app, _ in
            let response = try app.playback(Self.videoPath, key: nil, headers: headers)
            #expect(response.status == 200, "\(headers): \(response.debugText)")
            #expect(try response.decoded(Video.self).id == Fixture.clearVideo)
        }
    }

    @Test("no policy key is 401 INVALID_POLICY_KEY")
    func missingKey() async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.videoPath, key: nil), 401, "INVALID_POLICY_KEY", nil)
            try expectError(try app.playback(Self.videoPath, key: nil, headers: [("Accept", "application/json")]),
                            401, "INVALID_POLICY_KEY", nil)
            try expectError(try app.playback(Self.videoPath, key: ""), 401, "INVALID_POLICY_KEY", nil)
        }
    }

    @Test("an unknown policy key is 401 INVALID_POLICY_KEY")
    func wrongKey() async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.videoPath, key: "BCpkADawqM1nosuchkey"), 401, "INVALID_POLICY_KEY", nil)
            try expectError(try app.playback(Self.videoPath, key: nil, headers: [("Authorization", "BCOV-Policy nope")]),
                            401, "INVALID_POLICY_KEY", nil)
        }
    }

    @Test("another account's key is 403 ACCESS_DENIED/ACCOUNT_ID")
    func otherAccountsKey() async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.videoPath, key: Fixture.contosoPlayKey), 403, "ACCESS_DENIED", "ACCOUNT_ID")
            try expectError(try app.playback("/accounts/\(Fixture.contoso)/videos/\(Fixture.contosoClearVideo)",
                                             key: Fixture.northwindSearchKey), 403, "ACCESS_DENIED", "ACCOUNT_ID")
        }
    }

    @Test("an unknown account is refused with 403 ACCESS_DENIED/ACCOUNT_ID: no key belongs to it")
    func unknownAccount() async throws {
        try await withApp { app, _ in
            try expectError(try app.playback("/accounts/1234567890001/videos/\(Fixture.clearVideo)"), 403, "ACCESS_DENIED", "ACCOUNT_ID")
        }
    }

    @Test("unknown videos and references are 404 NOT_FOUND/VIDEO_NOT_FOUND", arguments: [
        "6415818918199", "ref:no-such-reference", "ref:", "ref:contoso-clear", Fixture.contosoClearVideo, "not-a-number",
    ])
    func unknownVideo(id: String) async throws {
        try await withApp { app, _ in
            try expectError(try app.playback("/accounts/\(Fixture.northwind)/videos/\(id)"), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
        }
    }

    @Test("the other account's videos are reachable with its own keys")
    func contosoVideo() async throws {
        try await withApp { app, _ in
            let video = try app.video(Fixture.contosoClearVideo, account: Fixture.contoso, key: Fixture.contosoPlayKey)
            #expect(video.accountID == Fixture.contoso)
            let byRef = try app.playback("/accounts/\(Fixture.contoso)/videos/ref:contoso-clear", key: Fixture.contosoSearchKey)
            #expect(byRef.status == 200)
        }
    }

    @Test("POST, PUT, DELETE and other methods are 405 METHOD_NOT_ALLOWED with Allow", arguments: ["POST", "PUT", "DELETE", "PATCH", "BREW"])
    func methodNotAllowed(method: String) async throws {
        try await withApp { app, _ in
            for path in [Self.videoPath, "/accounts/\(Fixture.northwind)/videos", "/accounts/\(Fixture.northwind)/playlists/1"] {
                let response = try app.request(method, "/playback/v1" + path, headers: [("BCOV-Policy", Fixture.northwindPlayKey)])
                try expectError(response, 405, "METHOD_NOT_ALLOWED", nil)
                let allowed = Set((response.headers["Allow"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                #expect(allowed == ["GET", "HEAD", "OPTIONS"])
            }
        }
    }

    @Test("HEAD is answered like GET")
    func head() async throws {
        try await withApp { app, _ in
            let response = try app.request("HEAD", "/playback/v1" + Self.videoPath, headers: [("BCOV-Policy", Fixture.northwindPlayKey)])
            #expect(response.status == 200)
        }
    }

    @Test("OPTIONS is a 204 CORS preflight answer, without a policy key")
    func options() async throws {
        try await withApp { app, _ in
            for path in ["/playback/v1" + Self.videoPath, "/playback/v1/accounts/\(Fixture.northwind)/videos"] {
                let response = try app.request("OPTIONS", path, headers: [("Origin", "https://player.example"),
                                                                          ("Access-Control-Request-Method", "GET")])
                #expect(response.status == 204)
                #expect(response.body == .empty)
                #expect(response.headers["Access-Control-Allow-Origin"] == "*")
                let methods = response.headers["Access-Control-Allow-Methods"] ?? ""
                #expect(methods == "GET, HEAD, OPTIONS", "the Playback API is read-only: \(methods)")
                #expect(response.headers["Allow"] == "GET, HEAD, OPTIONS")
                let allowedHeaders = (response.headers["Access-Control-Allow-Headers"] ?? "").lowercased()
                for header in ["bcov-policy", "authorization", "accept", "bcov-auth", "range", "if-range", "if-none-match"] {
                    #expect(allowedHeaders.contains(header), "\(header) missing from Access-Control-Allow-Headers")
                }
                #expect(response.headers["Access-Control-Max-Age"] != nil)
            }
        }
    }

    @Test("OPTIONS on the license URL allows POST; on an unknown path it is 404")
    func optionsPerResource() async throws {
        try await withApp { app, _ in
            let license = try app.request("OPTIONS", "/license/v1/fairplay/\(Fixture.northwind)/a/b")
            #expect(license.status == 204)
            #expect(license.headers["Allow"] == "POST, OPTIONS")
            #expect(license.headers["Access-Control-Allow-Methods"] == "POST, OPTIONS")
            let unknown = try app.request("OPTIONS", "/no/such/place")
            #expect(unknown.status == 404)
            #expect(try unknown.apiErrors().first?.errorCode == PlaybackAPIErrorCode.notFound)
        }
    }

    @Test("normal answers and errors carry CORS headers too")
    func corsEverywhere() async throws {
        try await withApp { app, _ in
            #expect(try app.playback(Self.videoPath).headers["Access-Control-Allow-Origin"] == "*")
            let error = try app.playback(Self.videoPath, key: nil)
            #expect(error.headers["Access-Control-Allow-Origin"] == "*")
            let exposed = try app.playback(Self.videoPath).headers["Access-Control-Expose-Headers"] ?? ""
            #expect(exposed.contains("Content-Range") && exposed.contains("ETag") && exposed.contains("Repr-Digest"))
        }
    }

    @Test("unknown paths are 404 NOT_FOUND in the error-array format, for OPTIONS too")
    func unknownPath() async throws {
        try await withApp { app, _ in
            try expectError(try app.request("GET", "/playback/v2/whatever"), 404, "NOT_FOUND", nil)
            try expectError(try app.request("OPTIONS", "/nothing/here"), 404, "NOT_FOUND", nil)
            // `/` itself redirects to the dashboard (DashboardTests); unknown paths beneath it are 404s.
            try expectError(try app.request("GET", "/_dashboard/nothing"), 404, "NOT_FOUND", nil)
            try expectError(try app.request("GET", "/nothing"), 404, "NOT_FOUND", nil)
        }
    }

    @Test("a repeated query parameter is 400 BAD_REQUEST/DUPLICATE_PARAMETERS, before the key is looked at")
    func duplicateParameters() async throws {
        try await withApp { app, _ in
            try expectError(try app.playback(Self.videoPath + "?config_id=1&config_id=2"), 400, "BAD_REQUEST", "DUPLICATE_PARAMETERS")
            try expectError(try app.playback("/accounts/\(Fixture.northwind)/videos?q=a&limit=1&q=b"), 400, "BAD_REQUEST", "DUPLICATE_PARAMETERS")
            try expectError(try app.playback("/accounts/\(Fixture.northwind)/playlists/\(Fixture.featuredPlaylist)?limit=1&limit=1"),
                            400, "BAD_REQUEST", "DUPLICATE_PARAMETERS")
            try expectError(try app.playback(Self.videoPath + "?a=1&a=1", key: nil), 400, "BAD_REQUEST", "DUPLICATE_PARAMETERS")
            // Known one-off parameters are fine.
            #expect(try app.playback(Self.videoPath + "?config_id=x&ad_config_id=y").status == 200)
        }
    }
}
