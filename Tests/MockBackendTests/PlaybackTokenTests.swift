import Foundation
import TestKit
import MicroHTTP
import MockBackend
import Testing
import WireModels
import JWTKit
import CryptoExtras

/// Playback-restriction JWTs on Playback API requests.
@Suite("Playback API: playback-restriction tokens")
struct PlaybackTokenTests {
    static let videoPath = "/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)"

    static func base64URL(_ json: String) -> String { TestKeys.base64URL(Array(json.utf8)) }

    /// A compact JWS with `claims`, RS256-signed by the key `withRegisteredKey` registers.
    static func jwt(_ claims: String) -> String { TestKeys.jwt(claims) }

    /// An app whose Northwind account has the test key registered.
    static func withRegisteredKey(_ body: (MockBackendApp) async throws -> Void) async throws {
        try await withApp { app, _ in
            try app.registerPlaybackKey()
            try await body(app)
        }
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
        try await Self.withRegisteredKey { app in
            for header in ["Authorization", "BCOV-Auth"] {
                try expectError(try Self.send(app, token: token, in: header), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            }
        }
    }

    @Test("a JWT alone, without a policy key, opens the account it verifies for, never search", arguments: ["Authorization", "BCOV-Auth"])
    func withoutPolicyKey(header: String) async throws {
        try await Self.withRegisteredKey { app in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now + 3600)}"#)
            let value = header == "Authorization" ? "Bearer \(token)" : token
            let video = try app.playback(Self.videoPath, key: nil, headers: [(header, value)])
            #expect(video.status == 200, "\(video.debugText)")
            let forged = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now + 3600)}"#, key: TestKeys.other)
            try expectError(try app.playback(Self.videoPath, key: nil, headers: [(header, header == "Authorization" ? "Bearer \(forged)" : forged)]),
                            401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let otherAccount = try app.playback("/accounts/\(Fixture.contoso)/videos/\(Fixture.clearVideo)", key: nil, headers: [(header, value)])
            #expect(otherAccount.status == 403, "\(otherAccount.debugText)")
            try expectError(try app.playback("/accounts/\(Fixture.northwind)/videos?q=name:Big", key: nil, headers: [(header, value)]),
                            403, "ACCESS_DENIED", "API")
            try expectError(try app.playback(Self.videoPath, key: nil), 401, "INVALID_POLICY_KEY", nil)
        }
    }

    @Test("a well-formed token for this account, unexpired, is accepted", arguments: ["Authorization", "BCOV-Auth"])
    func accepted(header: String) async throws {
        try await Self.withRegisteredKey { app in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","iat":\#(Self.now - 60),"exp":\#(Self.now + 3600),"uid":"u1"}"#)
            let response = try Self.send(app, token: token, in: header)
            #expect(response.status == 200, "\(response.debugText)")
            let minimal = try Self.send(app, token: Self.jwt(#"{"accid":\#(Fixture.northwind),"exp":\#(Self.now + 60)}"#), in: header)
            #expect(minimal.status == 200)
            let withoutKid = try Self.send(app, token: TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now + 60)}"#, kid: nil), in: header)
            #expect(withoutKid.status == 200)
        }
    }

    @Test("an expired token is 401 ACCESS_DENIED/TOKEN_VALIDATION", arguments: ["Authorization", "BCOV-Auth"])
    func expired(header: String) async throws {
        try await Self.withRegisteredKey { app in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now - 10)}"#)
            try expectError(try Self.send(app, token: token, in: header), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let notYet = Self.jwt(#"{"accid":"\#(Fixture.northwind)","nbf":\#(Self.now + 600),"exp":\#(Self.now + 3600)}"#)
            try expectError(try Self.send(app, token: notYet, in: header), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("a token becomes expired when the backend clock moves past exp")
    func expiresWithClock() async throws {
        try await Self.withRegisteredKey { app in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now + 600)}"#)
            #expect(try Self.send(app, token: token, in: "BCOV-Auth").status == 200)
            app.clock.offset = 3600
            try expectError(try Self.send(app, token: token, in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("a token for another account is 403 ACCESS_DENIED/ACCOUNT_ID", arguments: ["Authorization", "BCOV-Auth"])
    func otherAccount(header: String) async throws {
        try await Self.withRegisteredKey { app in
            let token = Self.jwt(#"{"accid":"\#(Fixture.contoso)","exp":\#(Self.now + 3600)}"#)
            try expectError(try Self.send(app, token: token, in: header), 403, "ACCESS_DENIED", "ACCOUNT_ID")
            let numeric = Self.jwt(#"{"accid":\#(Fixture.contoso),"exp":\#(Self.now + 3600)}"#)
            try expectError(try Self.send(app, token: numeric, in: header), 403, "ACCESS_DENIED", "ACCOUNT_ID")
        }
    }

    @Test("a token naming a content id opens that video only")
    func contentID() async throws {
        try await Self.withRegisteredKey { app in
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","conid":"\#(Fixture.clearVideo)","exp":\#(Self.now + 3600)}"#)
            #expect(try Self.send(app, token: token, in: "BCOV-Auth").status == 200)
            let other = "/accounts/\(Fixture.northwind)/videos/\(Fixture.aesVideo)"
            try expectError(try Self.send(app, token: token, in: "BCOV-Auth", path: other), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let byRef = Self.jwt(#"{"accid":"\#(Fixture.northwind)","conid":"nw-aes-bars","exp":\#(Self.now + 3600)}"#)
            #expect(try Self.send(app, token: byRef, in: "BCOV-Auth", path: other).status == 200)
        }
    }

    @Test("a policy key is checked before the token; without one, the token alone must verify")
    func keyFirst() async throws {
        try await withApp { app, _ in
            let response = try app.playback(Self.videoPath, key: "BCpkADawqM1nosuchKEY0000000000001", headers: [("BCOV-Auth", "garbage")])
            try expectError(response, 401, "INVALID_POLICY_KEY", nil)
            try expectError(try app.playback(Self.videoPath, key: nil, headers: [("BCOV-Auth", "garbage")]), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("a token is refused unless an account key signed it: other key, unknown kid, no key, deleted key, tampered claims, another alg")
    func signatures() async throws {
        try await withApp { app, _ in
            let claims = #"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now + 600)}"#
            try expectError(try Self.send(app, token: Self.jwt(claims), in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            try app.registerPlaybackKey()
            #expect(try Self.send(app, token: Self.jwt(claims), in: "BCOV-Auth").status == 200)
            let forged = TestKeys.jwt(claims, key: TestKeys.other)
            try expectError(try Self.send(app, token: forged, in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let forgedNoKid = TestKeys.jwt(claims, key: TestKeys.other, kid: nil)
            try expectError(try Self.send(app, token: forgedNoKid, in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let unknownKid = TestKeys.jwt(claims, kid: "nope")
            try expectError(try Self.send(app, token: unknownKid, in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let parts = Self.jwt(claims).split(separator: ".")
            let tampered = "\(parts[0]).\(Self.base64URL(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now + 99999)}"#)).\(parts[2])"
            try expectError(try Self.send(app, token: tampered, in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let hs256 = TestKeys.jwt(claims, alg: "HS256")
            try expectError(try Self.send(app, token: hs256, in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let noExp = Self.jwt(#"{"accid":"\#(Fixture.northwind)"}"#)
            try expectError(try Self.send(app, token: noExp, in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            #expect(try app.request("DELETE", "/_admin/v1/accounts/\(Fixture.northwind)/playback-keys/\(TestKeys.kid)").status == 204)
            try expectError(try Self.send(app, token: Self.jwt(claims), in: "BCOV-Auth"), 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("a token signed with jwt-kit verifies")
    func jwtKitInterop() async throws {
        try await Self.withRegisteredKey { app in
            let keys = JWTKeyCollection()
            await keys.add(rsa: try Insecure.RSA.PrivateKey(backing: TestKeys.rsa), digestAlgorithm: .sha256, kid: JWKIdentifier(string: TestKeys.kid))
            struct Claims: JWTPayload {
                var accid: String
                var uid: String
                var exp: ExpirationClaim
                func verify(using algorithm: some JWTAlgorithm) async throws {}
            }
            let token = try await keys.sign(Claims(accid: Fixture.northwind, uid: "u9", exp: .init(value: Date().addingTimeInterval(600))),
                                            kid: JWKIdentifier(string: TestKeys.kid))
            #expect(try Self.send(app, token: token, in: "Authorization").status == 200)
        }
    }

    @Test("the admin API registers, lists and deletes playback keys; bad keys and duplicates are refused")
    func adminKeys() async throws {
        try await withApp { app, _ in
            let path = "/_admin/v1/accounts/\(Fixture.northwind)/playback-keys"
            try app.registerPlaybackKey()
            try app.registerPlaybackKey(id: "second", key: TestKeys.other)
            let duplicate = try JSONSerialization.data(withJSONObject: ["id": TestKeys.kid, "public_key": TestKeys.rsa.publicKey.pemRepresentation])
            try expectError(try app.request("POST", path, body: Array(duplicate)), 409, "CONFLICT", "KEY_EXISTS")
            let garbage = try JSONSerialization.data(withJSONObject: ["id": "x", "public_key": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"])
            try expectError(try app.request("POST", path, body: Array(garbage)), 400, "BAD_REQUEST", "INVALID_KEY")
            try expectError(try app.request("POST", path, body: Array("{".utf8)), 400, "BAD_REQUEST", "INVALID_BODY")
            let list = try app.request("GET", path)
            #expect(list.status == 200)
            struct Listed: Decodable { var keys: [Key]; struct Key: Decodable { var id: String } }
            #expect(try JSONDecoder().decode(Listed.self, from: Data(list.bytes())).keys.map(\.id) == ["second", TestKeys.kid])
            #expect(try app.request("DELETE", path + "/second").status == 204)
            try expectError(try app.request("DELETE", path + "/second"), 404, "NOT_FOUND", "KEY_NOT_FOUND")
            try expectError(try app.request("GET", "/_admin/v1/accounts/999/playback-keys"), 404, "NOT_FOUND", nil)
        }
    }

    @Test("registered keys survive a restart")
    func keysPersist() async throws {
        try await withTemporaryDirectory { directory in
            try makeApp(dataDirectory: directory).registerPlaybackKey()
            let app = try makeApp(dataDirectory: directory)
            let token = Self.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(Self.now + 600)}"#)
            #expect(try Self.send(app, token: token, in: "BCOV-Auth").status == 200)
        }
    }
}
