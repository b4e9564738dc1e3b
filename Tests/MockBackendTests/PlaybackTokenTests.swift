import Foundation
import TestKit
import MicroHTTP
import MockBackend
import Testing
import WireModels

/// Playback-restriction JWTs on Playback API requests.
@Suite("Playback API: playback-restriction tokens")
struct PlaybackTokenTests {
    static let videoPath = "/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)"

    static func base64URL(_ json: String) -> String {
        Data(json.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A structurally valid compact JWS with `claims`; the signature is not a real one.
    static func jwt(_ claims: String) -> String {
        base64URL(#"{"alg":"RS256","typ":"JWT"}"#) + "." + base64URL(claims) + ".c2lnbmF0dXJl"
    }

    static var now: Int { Int(Date().timeIntervalSince1970) }

    static func send(_ app: MockBackendApp, token: String, in header: String, path: String = PlaybackTokenTests.videoPath) throws -> HTTPResponse {
        let value = header == "Authorization" ? "Bearer \(token)" : token
        return try app.playback(path, key: Fixture.northwindPlayKey, headers: [(header, value)])
    }

    @Test("a malformed JWT is 401 ACCESS_DENIED/TOKEN_VALIDATION, in Authorization: Bearer and in BCOV-Auth", arguments: [
        "not-a-jwt", "a.b", "a.b.c", "a.b.c.d", "..", "\(PlaybackTokenTests.base64URL(#"{"alg":"RS256"}"#)).\(PlaybackTokenTests.base64URL("[1]")).sig",
        "\(PlaybackTokenTests.base64URL(#"{"typ":"JWT"}"#)).\(PlaybackTokenTests.base64URL("{}")).sig",
        "\(PlaybackTokenTests.base64URL(#"{"alg":"RS256"}"#)).\(PlaybackTokenTests.base64URL("{}")).",
        "%%%.%%%.%%%",
    ])
    func malformed(token: String) async throws {
        try await withApp { app, _ in
            for header in ["Authorization", "BCOV-Auth"] {
                try expectError(try Self.send(app, token: token, in: header), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            }
        }
    }

    @Test("a well-formed token for this account, unexpired, is accepted", arguments: ["Authorization", "BCOV-Auth"])
    func accepted(header: String) async throws {
        try await withApp { app, _ in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","iat":\#(Self.now - 60),"exp":\#(Self.now + 3600),"uid":"u1"}"#)
            let response = try Self.send(app, token: token, in: header)
            #expect(response.status == 200, "\(response.debugText)")
            let minimal = try Self.send(app, token: Self.jwt("{}"), in: header)
            #expect(minimal.status == 200)
        }
    }

    @Test("an expired token is 401 ACCESS_DENIED/TOKEN_VALIDATION", arguments: ["Authorization", "BCOV-Auth"])
    func expired(header: String) async throws {
        try await withApp { app, _ in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now - 10)}"#)
            try expectError(try Self.send(app, token: token, in: header), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let notYet = Self.jwt(#"{"accid":"\#(Fixture.northwind)","nbf":\#(Self.now + 600),"exp":\#(Self.now + 3600)}"#)
            try expectError(try Self.send(app, token: notYet, in: header), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("a token becomes expired when the backend clock moves past exp")
    func expiresWithClock() async throws {
        try await withApp { app, _ in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now + 600)}"#)
            #expect(try Self.send(app, token: token, in: "BCOV-Auth").status == 200)
            app.clock.offset = 3600
            try expectError(try Self.send(app, token: token, in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("a token for another account is 403 ACCESS_DENIED/ACCOUNT_ID", arguments: ["Authorization", "BCOV-Auth"])
    func otherAccount(header: String) async throws {
        try await withApp { app, _ in
            let token = Self.jwt(#"{"accid":"\#(Fixture.contoso)","exp":\#(Self.now + 3600)}"#)
            try expectError(try Self.send(app, token: token, in: header), 403, "ACCESS_DENIED", "ACCOUNT_ID")
            let numeric = Self.jwt(#"{"accid":\#(Fixture.contoso),"exp":\#(Self.now + 3600)}"#)
            try expectError(try Self.send(app, token: numeric, in: header), 403, "ACCESS_DENIED", "ACCOUNT_ID")
        }
    }

    @Test("a token naming a content id opens that video only")
    func contentID() async throws {
        try await withApp { app, _ in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","conid":"\#(Fixture.clearVideo)","exp":\#(Self.now + 3600)}"#)
            #expect(try Self.send(app, token: token, in: "BCOV-Auth").status == 200)
            let other = "/accounts/\(Fixture.northwind)/videos/\(Fixture.aesVideo)"
            try expectError(try Self.send(app, token: token, in: "BCOV-Auth", path: other), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let byRef = Self.jwt(#"{"conid":"nw-aes-bars"}"#)
            #expect(try Self.send(app, token: byRef, in: "BCOV-Auth", path: other).status == 200)
        }
    }

    @Test("the policy key is checked before the token")
    func keyFirst() async throws {
        try await withApp { app, _ in
            let response = try app.playback(Self.videoPath, key: nil, headers: [("BCOV-Auth", "garbage")])
            try expectError(response, 401, "INVALID_POLICY_KEY", nil)
        }
    }
}
