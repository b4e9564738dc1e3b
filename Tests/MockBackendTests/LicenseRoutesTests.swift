import Foundation
import LicenseProtocol
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// The license endpoint called through `MockBackendApp.handle`, with real SPCs.
@Suite("License routes")
struct LicenseRoutesTests {
    static let day: TimeInterval = 86400

    static func rental(_ app: MockBackendApp, days: Double, playHours: Double?) -> [(String, String)] {
        LicenseTestClient.offline(LicenseProfile(.rental(absoluteExpiration: app.clock.now().addingTimeInterval(days * day),
                                                          playDuration: playHours.map { $0 * 3600 })))
    }

    @Test("an offline purchase: a CKC whose key is the video's content key, terms signed, never expiring")
    func purchase() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let license = try client.license()
            let key = try #require(app.contentKeys[Fixture.fairPlayVideo])
            #expect(license.contentKey == key.key)
            #expect(license.iv == key.iv)
            #expect(license.terms.kind == .purchase)
            #expect(license.terms.expiresAt == nil)
            #expect(license.terms.persistable)
            #expect(license.terms.videoID == Fixture.fairPlayVideo)
            let stored = try #require(try app.licenses.license(id: license.terms.licenseID))
            #expect(stored.terms.kind == .purchase)
            #expect(try app.licenses.history(licenseID: license.terms.licenseID).map(\.event) == ["acquire"])
        }
    }

    @Test("a retried acquisition (a fresh SPC, the same Idempotency-Key) gets the same license: the server holds one per device and download")
    func idempotentAcquisition() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let key = [("Idempotency-Key", "9f1c2b7e-acquire-1")]
            let purchase = LicenseTestClient.offline(LicenseProfile(.purchase))
            let first = try client.license(headers: purchase + key)
            let again = try client.license(headers: purchase + key)  // the first answer "was lost"
            #expect(again.terms.licenseID == first.terms.licenseID)
            let held = try app.licenses.licenses(LicenseFilter(deviceID: "device-1"), now: app.clock.now(), limit: 10)
            #expect(held.map(\.terms.licenseID) == [first.terms.licenseID], "one license for the device")
            // Another key is another acquisition; another device with the same key another license.
            let other = try client.license(headers: purchase + [("Idempotency-Key", "9f1c2b7e-acquire-2")])
            #expect(other.terms.licenseID != first.terms.licenseID)
            let elsewhere = try client.license(device: "device-2", headers: purchase + key)
            #expect(elsewhere.terms.licenseID != first.terms.licenseID)
            // Once released, the key cannot bring the license back; a malformed key is a 400.
            _ = try client.send(.release, licenseID: first.terms.licenseID)
            let reused = try client.send(headers: purchase + key).response
            #expect(reused.status == 409 && reused.debugText.contains("IDEMPOTENCY_KEY_REUSED"), "\(reused.status) \(reused.debugText)")
            let malformed = try client.send(headers: purchase + [("Idempotency-Key", "has space")]).response
            #expect(malformed.status == 400 && malformed.debugText.contains("INVALID_IDEMPOTENCY_KEY"))
        }
    }

    @Test("without the offline header: a streaming license for 5 minutes, not persistable")
    func streaming() async throws {
        try await withApp { app, _ in
            let license = try LicenseTestClient(app).license(headers: [])
            #expect(license.terms.kind == .streaming)
            #expect(!license.terms.persistable)
            #expect(license.terms.expiresAt == license.terms.issuedAt.addingTimeInterval(300))
        }
    }

    @Test("a 30-day rental with a 24-hour play window, tested by moving the clock")
    func rentalWithClock() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let license = try client.license(headers: Self.rental(app, days: 30, playHours: 24))
            let id = license.terms.licenseID
            #expect(license.terms.kind == .rental)
            #expect(license.terms.firstPlay == nil)
            app.clock.offset = 2 * Self.day
            let played = try client.license(.firstPlay, licenseID: id)
            let firstPlay = try #require(played.terms.firstPlay)
            #expect(abs(firstPlay.timeIntervalSince(app.clock.now())) < 5)
            #expect(played.terms.expiresAt == firstPlay.addingTimeInterval(Self.day))
            app.clock.offset = 2 * Self.day + 3600
            let again = try client.license(.firstPlay, licenseID: id)
            #expect(again.terms.firstPlay == firstPlay)
            app.clock.offset = 3 * Self.day + 60
            #expect(again.terms.isExpired(at: app.clock.now()))
            try expectError(try client.send(.firstPlay, licenseID: id).response, 403, "ACCESS_DENIED", "LICENSE_EXPIRED")
            // Renewing the expired rental as a purchase keeps the id.
            let renewed = try client.license(.renew, licenseID: id)
            #expect(renewed.terms.licenseID == id)
            #expect(renewed.terms.kind == .purchase)
            #expect(try app.licenses.history(licenseID: id).map(\.event) == ["acquire", "first_play", "first_play", "renew"])
        }
    }

    @Test("a rental never played ends at its absolute expiration (clock moved 31 days)")
    func rentalEnds() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let license = try client.license(headers: Self.rental(app, days: 30, playHours: nil))
            app.clock.offset = 31 * Self.day
            #expect(license.terms.isExpired(at: app.clock.now()))
            try expectError(try client.send(.firstPlay, licenseID: license.terms.licenseID).response, 403, "ACCESS_DENIED", "LICENSE_EXPIRED")
        }
    }

    @Test("release answers 204, frees the license; it cannot be renewed or released again")
    func release() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let id = try client.license().terms.licenseID
            let released = try client.send(.release, licenseID: id).response
            #expect(released.status == 204)
            #expect(try app.licenses.license(id: id)?.releasedAt != nil)
            try expectError(try client.send(.release, licenseID: id).response, 410, "GONE", "LICENSE_RELEASED")
            try expectError(try client.send(.renew, licenseID: id).response, 410, "GONE", "LICENSE_RELEASED")
            try expectError(try client.send(.renew, licenseID: "no-such").response, 404, "NOT_FOUND", "LICENSE_NOT_FOUND")
            let other = try client.license(device: "device-2").terms.licenseID
            try expectError(try client.send(.firstPlay, licenseID: other).response, 403, "ACCESS_DENIED", "LICENSE_MISMATCH")
        }
    }

    @Test("a fault rule's error answers instead of the request: no license issued or renewed, the SPC still good; a dropped answer was carried out")
    func faultedLicenseRequests() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let purchase = LicenseTestClient.offline(LicenseProfile(.purchase))
            try app.faults.add(FaultRule(route: .license, times: 1, status: 503, retryAfter: 1))
            let request = try client.makeRequest()
            let refused = try client.post(request.body(), headers: purchase)
            try expectError(refused, 503, PlaybackAPIErrorCode.serverError, "FAULT_INJECTED")
            #expect(refused.headers["Retry-After"] == "1")
            #expect(try app.licenses.licenses(LicenseFilter(), now: app.clock.now(), limit: 10).isEmpty, "no license issued")
            // The same SPC once more: its nonce was not used up.
            let answer = try client.post(request.body(), headers: purchase)
            try #require(answer.status == 200, "\(answer.status) \(answer.debugText)")
            let id = try request.open(try answer.bytes()).terms.licenseID

            // A renewal answered 503 leaves the license as it was.
            let rental = Self.rental(app, days: 1, playHours: nil)
            try app.faults.add(FaultRule(route: .license, times: 1, status: 503))
            #expect(try client.send(.renew, licenseID: id, headers: rental).response.status == 503)
            #expect(try app.licenses.license(id: id)?.terms.kind == .purchase)
            #expect(try app.licenses.history(licenseID: id).map(\.event) == ["acquire"])

            // A dropped connection loses the answer of a renewal that was carried out.
            try app.faults.add(FaultRule(route: .license, times: 1, drop: true))
            #expect(try client.send(.renew, licenseID: id, headers: rental).response.dropsConnection)
            #expect(try app.licenses.license(id: id)?.terms.kind == .rental)
        }
    }

    @Test("bad bodies: malformed JSON, bad base64, tampered SPC, replayed SPC, stale SPC, SPC for another key")
    func badBodies() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let offline = LicenseTestClient.offline(LicenseProfile(.purchase))
            try expectError(try client.post(Array("{not json".utf8), headers: offline), 400, "BAD_REQUEST", "INVALID_BODY")
            try expectError(try client.post(Array(#"{"server_playback_context":42}"#.utf8), headers: offline), 400, "BAD_REQUEST", "INVALID_BODY")
            try expectError(try client.post(Array(#"{"server_playback_context":"!!!"}"#.utf8), headers: offline), 400, "BAD_REQUEST", "INVALID_BASE64")
            try expectError(try client.post(LicenseRequestBody(serverPlaybackContext: Array("hello".utf8)).encoded(), headers: offline),
                            400, "BAD_REQUEST", "INVALID_SPC")
            let request = try client.makeRequest()
            var tampered = request.spc
            tampered[tampered.count - 20] ^= 1
            try expectError(try client.post(LicenseRequestBody(serverPlaybackContext: tampered).encoded(), headers: offline),
                            400, "BAD_REQUEST", "INVALID_SPC")
            #expect(try client.post(request.body(), headers: offline).status == 200)
            try expectError(try client.post(request.body(), headers: offline), 403, "ACCESS_DENIED", "SPC_REPLAYED")
            let stale = try client.makeRequest(now: app.clock.now().addingTimeInterval(-3600))
            try expectError(try client.post(stale.body(), headers: offline), 400, "BAD_REQUEST", "SPC_STALE")
            let otherKey = try client.makeRequest(keyID: "another-key")
            try expectError(try client.post(otherKey.body(), headers: offline), 400, "BAD_REQUEST", "SPC_MISMATCH")
        }
    }

    @Test("an SPC sealed to another account's certificate is 403 CERTIFICATE_MISMATCH")
    func otherCertificate() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            let foreign = try LicenseServerIdentity.generate(accountID: Fixture.contoso, now: Date())
            let request = try client.makeRequest(certificate: foreign.certificate)
            try expectError(try client.post(request.body(), headers: LicenseTestClient.offline(LicenseProfile(.purchase))),
                            403, "ACCESS_DENIED", "CERTIFICATE_MISMATCH")
        }
    }

    @Test("bad CRTs: missing, neither purchase nor rental, not base64, rental in the past")
    func badProfiles() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            try expectError(try client.send(headers: [("X-BOLT-OFFLINE-LICENSE", "true")]).response, 400, "BAD_REQUEST", "CRT_REQUIRED")
            let neither = Data(#"{"profile":{},"storeLicense":true}"#.utf8).base64EncodedString()
            try expectError(try client.send(headers: [("X-BOLT-OFFLINE-LICENSE", "true"), ("X-BC-CRT-CONFIG", neither)]).response,
                            400, "BAD_REQUEST", "INVALID_CRT")
            try expectError(try client.send(headers: [("X-BOLT-OFFLINE-LICENSE", "true"), ("X-BC-CRT-CONFIG", "%%%")]).response,
                            400, "BAD_REQUEST", "INVALID_CRT")
            try expectError(try client.send(headers: Self.rental(app, days: -1, playHours: nil)).response, 400, "BAD_REQUEST", "RENTAL_IN_PAST")
            var bitrate = LicenseProfile(.purchase)
            bitrate.bitrate = 1_000_000
            let id = try client.license().terms.licenseID
            try expectError(try client.send(.renew, licenseID: id, headers: LicenseTestClient.offline(bitrate)).response,
                            400, "BAD_REQUEST", "RENEWAL_BITRATE")
        }
    }

    @Test("X-BOLT-OFFLINE-LICENSE is `true` in any case, spaces around it allowed; anything else asks for a streaming license")
    func offlineHeaderValues() async throws {
        try await withApp { app, _ in
            let client = try LicenseTestClient(app)
            for value in ["TRUE", " True\t", "\ttrue "] {
                // Offline without a CRT: the CRT is required, so the header was read as offline.
                try expectError(try client.send(headers: [("X-BOLT-OFFLINE-LICENSE", value)]).response, 400, "BAD_REQUEST", "CRT_REQUIRED")
            }
            for value in ["false", "yes", "truex", ""] {
                #expect(try client.send(headers: [("X-BOLT-OFFLINE-LICENSE", value)]).response.status == 200, "\(value)")
            }
        }
    }

    @Test("unknown key id, video or account: 404; a URL without its token: 403")
    func unknownThings() async throws {
        try await withApp { app, directory in
            let client = try LicenseTestClient(app)
            let secret = try urlSigningSecret(dataDirectory: directory)
            let video = try #require(app.catalog.videos[Fixture.fairPlayVideo])
            let wrongKey = signedTarget("/license/v1/fairplay/\(Fixture.northwind)/\(video.uuid)/not-the-key", secret: secret, now: app.clock.now())
            let body = try client.makeRequest().body()
            try expectError(try app.request("POST", wrongKey, body: body), 404, "NOT_FOUND", "KEY_NOT_FOUND")
            let clearVideo = try #require(app.catalog.videos[Fixture.clearVideo])
            let notFairPlay = signedTarget("/license/v1/fairplay/\(Fixture.northwind)/\(clearVideo.uuid)/\(client.keyID)", secret: secret, now: app.clock.now())
            try expectError(try app.request("POST", notFairPlay, body: body), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            let unsigned = "/license/v1/fairplay/\(Fixture.northwind)/\(video.uuid)/\(client.keyID)"
            try expectError(try app.request("POST", unsigned, body: body), 403, "ACCESS_DENIED", "TOKEN_REQUIRED")
        }
    }

    @Test("playback-restriction tokens on license requests: signature, expiry, conid, account")
    func tokens() async throws {
        try await withApp { app, _ in
            try app.registerPlaybackKey()
            let client = try LicenseTestClient(app)
            let now = Int(app.clock.now().timeIntervalSince1970)
            let good = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","conid":"\#(Fixture.fairPlayVideo)","uid":"u1","exp":\#(now + 600)}"#)
            _ = try client.license(token: good)
            let forged = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(now + 600)}"#, key: TestKeys.other)
            try expectError(try client.send(token: forged).response, 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let expired = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","exp":\#(now - 10)}"#)
            try expectError(try client.send(token: expired).response, 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let otherVideo = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","conid":"\#(Fixture.clearVideo)","exp":\#(now + 600)}"#)
            try expectError(try client.send(token: otherVideo).response, 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            let otherAccount = TestKeys.jwt(#"{"accid":"\#(Fixture.contoso)","exp":\#(now + 600)}"#)
            try expectError(try client.send(token: otherAccount).response, 403, "ACCESS_DENIED", "ACCOUNT_ID")
            // The token expires when the backend clock passes exp.
            app.clock.offset = 3600
            let (_, late) = try client.send(token: good)
            try expectError(late, 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("device limits per uid: the third device is refused, lowering dlimit evicts nobody, a release frees a slot")
    func deviceLimits() async throws {
        try await withApp { app, _ in
            try app.registerPlaybackKey()
            let client = try LicenseTestClient(app)
            let now = Int(app.clock.now().timeIntervalSince1970)
            func token(_ limit: Int, user: String = "u1") -> String {
                TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","uid":"\#(user)","dlimit":\#(limit),"exp":\#(now + 3600)}"#)
            }
            _ = try client.license(device: "A", token: token(2))
            let b = try client.license(device: "B", token: token(2))
            _ = try client.license(device: "A", token: token(2))
            try expectError(try client.send(device: "C", token: token(2)).response, 403, "ACCESS_DENIED", "DENIED_BY_DEVICE_LIMITING")
            #expect(try app.licenses.devices(accountID: Fixture.northwind, userID: "u1") == ["A", "B"])
            // Lowering dlimit keeps A and B working; C still refused.
            let b2 = try client.license(device: "B", token: token(1))
            try expectError(try client.send(device: "C", token: token(1)).response, 403, "ACCESS_DENIED", "DENIED_BY_DEVICE_LIMITING")
            // Another user has their own slots; no token means no limit.
            _ = try client.license(device: "C", token: token(1, user: "u2"))
            _ = try client.license(device: "Z")
            // Releasing B's licenses frees its slot once the last one is gone.
            #expect(try client.send(.release, licenseID: b.terms.licenseID, device: "B", token: token(2)).response.status == 204)
            #expect(try app.licenses.devices(accountID: Fixture.northwind, userID: "u1") == ["A", "B"])
            #expect(try client.send(.release, licenseID: b2.terms.licenseID, device: "B", token: token(2)).response.status == 204)
            #expect(try app.licenses.devices(accountID: Fixture.northwind, userID: "u1") == ["A"])
            _ = try client.license(device: "C", token: token(2))
            let zero = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","uid":"u3","dlimit":0,"exp":\#(now + 3600)}"#)
            try expectError(try client.send(device: "A", token: zero).response, 401, "ACCESS_DENIED", "TOKEN_VALIDATION")
        }
    }

    @Test("the certificate and licenses survive a restart")
    func persistence() async throws {
        try await withTemporaryDirectory { directory in
            let first = try makeApp(dataDirectory: directory)
            let client = try LicenseTestClient(first)
            let license = try client.license()
            let second = try makeApp(dataDirectory: directory)
            let again = try LicenseTestClient(second)
            #expect(again.certificate == client.certificate)
            let renewed = try again.license(.renew, licenseID: license.terms.licenseID)
            #expect(renewed.terms.licenseID == license.terms.licenseID)
        }
    }
}
