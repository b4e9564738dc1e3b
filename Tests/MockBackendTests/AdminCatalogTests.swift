import Foundation
import LicenseProtocol
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// The admin API's catalog, licenses and devices, through `MockBackendApp.handle`.
@Suite("Admin API: the catalog live, licenses, devices, reset")
struct AdminCatalogTests {
    static let videos = "/_admin/v1/accounts/\(Fixture.northwind)/videos"
    static let playlists = "/_admin/v1/accounts/\(Fixture.northwind)/playlists"

    static func json(_ object: Any) throws -> [UInt8] { Array(try JSONSerialization.data(withJSONObject: object)) }

    static func send(_ app: MockBackendApp, _ method: String, _ path: String, _ body: Any? = nil) throws -> HTTPResponse {
        try app.request(method, path, headers: [("Content-Type", "application/json")], body: try body.map(json) ?? [])
    }

    static func object(_ response: HTTPResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [String: Any], "\(response.debugText)")
    }

    @Test("a video created, patched, replaced and deleted shows in the Playback API and the HLS at once")
    func videoLifecycle() async throws {
        try await withApp { app, _ in
            let created = try Self.send(app, "POST", Self.videos, [
                "name": "Two renditions", "reference_id": "two", "renditions": ["416x234", "960x540"],
                "audio_languages": ["fr"], "subtitle_languages": ["de"], "subtitles_in_manifest": true, "sideband_text_tracks": true,
                "tags": ["new"], "custom_fields": ["genre": "test"],
            ])
            #expect(created.status == 201, "\(created.debugText)")
            let id = try #require(try Self.object(created)["id"] as? String)
            #expect(id == "6415818918110", "one more than the largest id")

            // The Playback API and the playlists reflect it.
            let video = try app.video("ref:two", key: Fixture.northwindPlayKey)
            #expect(video.id == id && video.name == "Two renditions" && video.tags == ["new"] && video.customFields == ["genre": "test"])
            #expect(video.textTracks.map(\.srclang) == ["de", ""])  // the thumbnail track has no language
            let master = try app.master(id)
            #expect(master.variants.compactMap(\.resolution?.width) == [416, 960])
            #expect(master.renditions.filter { $0.type == .audio }.map(\.language) == ["fr"])
            #expect(master.renditions.filter { $0.type == .subtitles }.map(\.language) == ["de"])

            // PATCH merges (null removes); the cached video JSON does not outlive the change.
            let patched = try Self.send(app, "PATCH", "\(Self.videos)/\(id)", ["name": "Renamed", "tags": NSNull(), "offline_enabled": false])
            #expect(patched.status == 200, "\(patched.debugText)")
            let after = try app.video(id, key: Fixture.northwindPlayKey)
            #expect(after.name == "Renamed" && after.tags.isEmpty && after.offlineEnabled == false && after.customFields == ["genre": "test"])

            // PUT replaces whole (what it leaves out takes defaults) and creates when missing.
            let replaced = try Self.send(app, "PUT", "\(Self.videos)/\(id)", ["name": "Replaced", "asset": "bars", "protection": "clear",
                                                                             "offline_enabled": true])
            #expect(replaced.status == 200)
            #expect(try app.master(id).variants.count == 3, "every rendition again")
            #expect(try Self.object(replaced)["created_at"] as? String == (try Self.object(created)["created_at"] as? String))
            let upserted = try Self.send(app, "PUT", "\(Self.videos)/my-own-id", ["name": "Mine", "asset": "bars", "protection": "fairplay",
                                                                                  "offline_enabled": true])
            #expect(upserted.status == 201)
            let fairPlay = try app.video("my-own-id", key: Fixture.northwindPlayKey)
            #expect(fairPlay.sources.first?.fairPlay?.keyRequestURL != nil, "a protected video gets its content key")

            // DELETE: gone from the API (404) and from the admin list.
            #expect(try Self.send(app, "DELETE", "\(Self.videos)/\(id)").status == 204)
            try expectError(try app.playback("/accounts/\(Fixture.northwind)/videos/\(id)"), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            try expectError(try Self.send(app, "DELETE", "\(Self.videos)/\(id)"), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            let list = try Self.object(try Self.send(app, "GET", Self.videos))["videos"] as? [[String: Any]]
            #expect(list?.contains { $0["id"] as? String == id } == false)
            #expect(list?.contains { $0["id"] as? String == "my-own-id" } == true)
        }
    }

    @Test("edits that would break the catalog are refused with a reason and change nothing")
    func refusals() async throws {
        try await withApp { app, _ in
            let video = "\(Self.videos)/\(Fixture.clearVideo)"
            try expectError(try Self.send(app, "PATCH", video, ["audio_languages": ["de"]]), 400, "BAD_REQUEST", "INVALID_VIDEO")
            try expectError(try Self.send(app, "PATCH", video, ["renditions": ["1920x1080"]]), 400, "BAD_REQUEST", "INVALID_VIDEO")
            try expectError(try Self.send(app, "PATCH", video, ["asset": "missing"]), 400, "BAD_REQUEST", "INVALID_VIDEO")
            try expectError(try Self.send(app, "PATCH", video, ["name": 7]), 400, "BAD_REQUEST", "INVALID_VIDEO")
            try expectError(try Self.send(app, "PATCH", video, ["id": "other"]), 400, "BAD_REQUEST", "INVALID_VIDEO")
            try expectError(try Self.send(app, "PATCH", video, ["reference_id": "nw-aes-bars"]), 400, "BAD_REQUEST", "INVALID_VIDEO")
            try expectError(try Self.send(app, "PATCH", "\(Self.videos)/\(Fixture.clearVideo)", ["protection": "fairplay", "account_id": Fixture.contoso]),
                        400, "BAD_REQUEST", "INVALID_VIDEO")
            try expectError(try app.request("POST", Self.videos, body: Array("[1]".utf8)), 400, "BAD_REQUEST", "INVALID_BODY")
            try expectError(try Self.send(app, "POST", Self.videos, ["id": Fixture.clearVideo, "name": "again"]), 409, "CONFLICT", "VIDEO_EXISTS")
            try expectError(try Self.send(app, "POST", Self.videos, ["name": "x", "id": "ref:nope"]), 400, "BAD_REQUEST", "INVALID_VIDEO")
            try expectError(try Self.send(app, "POST", "/_admin/v1/accounts/999/videos", ["name": "x"]), 404, "NOT_FOUND", "ACCOUNT_NOT_FOUND")
            // Contoso has no FairPlay.
            try expectError(try Self.send(app, "POST", "/_admin/v1/accounts/\(Fixture.contoso)/videos", ["name": "x", "protection": "fairplay"]),
                        400, "BAD_REQUEST", "INVALID_VIDEO")
            // A video a playlist holds cannot go.
            let held = try Self.send(app, "DELETE", video)
            try expectError(held, 409, "CONFLICT", "VIDEO_IN_PLAYLIST")
            // Nothing changed.
            let unchanged = try app.video(Fixture.clearVideo)
            #expect(unchanged.name == "Color Bars (clear)" && unchanged.referenceID == "nw-clear-bars")
            #expect(try app.master(Fixture.clearVideo).renditions.filter { $0.type == .audio }.count == 3)
        }
    }

    @Test("playlists: created, reordered, emptied, deleted; accounts: manifest TTL and policy keys")
    func playlistsAndAccounts() async throws {
        try await withApp { app, _ in
            let created = try Self.send(app, "POST", Self.playlists, ["name": "Mine", "reference_id": "mine",
                                                                      "video_ids": [Fixture.fairPlayVideo, Fixture.clearVideo]])
            #expect(created.status == 201, "\(created.debugText)")
            let id = try #require(try Self.object(created)["id"] as? String)
            let listed = try app.playback("/accounts/\(Fixture.northwind)/playlists/ref:mine").decoded(Playlist.self)
            #expect(listed.videos.map(\.id) == [Fixture.fairPlayVideo, Fixture.clearVideo])
            #expect(try Self.send(app, "PATCH", "\(Self.playlists)/\(id)", ["video_ids": [Fixture.clearVideo]]).status == 200)
            #expect(try app.playback("/accounts/\(Fixture.northwind)/playlists/\(id)").decoded(Playlist.self).videos.map(\.id)
                    == [Fixture.clearVideo])
            try expectError(try Self.send(app, "PATCH", "\(Self.playlists)/\(id)", ["video_ids": ["5434391461102"]]), 400, "BAD_REQUEST", "INVALID_PLAYLIST")
            #expect(try Self.send(app, "DELETE", "\(Self.playlists)/\(id)").status == 204)
            try expectError(try app.playback("/accounts/\(Fixture.northwind)/playlists/\(id)"), 404, "NOT_FOUND", "PLAYLIST_NOT_FOUND")

            // A new policy key works at once; a removed one is refused.
            let account = "/_admin/v1/accounts/\(Fixture.northwind)"
            let keys: [[String: Any]] = [["key": Fixture.northwindSearchKey, "search_enabled": true], ["key": "BCpkNEWkey", "search_enabled": false]]
            let patched = try Self.send(app, "PATCH", account, ["policy_keys": keys, "manifest_token_ttl_seconds": 120])
            #expect(patched.status == 200, "\(patched.debugText)")
            #expect(try app.playback("/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)", key: "BCpkNEWkey").status == 200)
            #expect(try app.playback("/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)", key: Fixture.northwindPlayKey).status == 401)
            // Manifest URLs now live two minutes (rounded up to the cache bucket).
            let url = try app.masterURL(Fixture.clearVideo)
            let expiry = try #require(URLToken.expiry(ofURL: url))
            #expect(expiry.timeIntervalSince(app.clock.now()) <= 240)
            try expectError(try Self.send(app, "PATCH", account, ["fairplay": false]), 400, "BAD_REQUEST", "INVALID_ACCOUNT")
            try expectError(try Self.send(app, "PATCH", account, ["policy_keys": [["key": Fixture.contosoSearchKey, "search_enabled": true]]]),
                        400, "BAD_REQUEST", "INVALID_ACCOUNT")
            // A key must fit in the BCOV-Policy header (schemathesis found "" accepted).
            for bad in ["", "two words", "BCpk\u{7F}", String(repeating: "k", count: 257)] {
                try expectError(try Self.send(app, "PATCH", account, ["policy_keys": [["key": bad, "search_enabled": true]]]),
                                400, "BAD_REQUEST", "INVALID_ACCOUNT")
            }
            try expectError(try Self.send(app, "GET", "/_admin/v1/accounts/123"), 404, "NOT_FOUND", "ACCOUNT_NOT_FOUND")
        }
    }

    @Test("edits survive a restart; --reset (resetAtStart) and POST /reset bring back the file's catalog and forget licenses and devices")
    func persistenceAndReset() async throws {
        try await withTemporaryDirectory { directory in
            let first = try makeApp(dataDirectory: directory)
            #expect(try Self.send(first, "PATCH", "\(Self.videos)/\(Fixture.clearVideo)", ["name": "Edited"]).status == 200)
            #expect(try Self.send(first, "POST", Self.videos, ["id": "added", "name": "Added"]).status == 201)
            try first.registerPlaybackKey()
            let client = try LicenseTestClient(first)
            _ = try client.license()

            let second = try makeApp(dataDirectory: directory)
            #expect(try second.video(Fixture.clearVideo).name == "Edited")
            #expect(try second.video("added").name == "Added")
            #expect(try Self.object(try Self.send(second, "GET", "/_admin/v1/licenses"))["licenses"].map { ($0 as? [Any])?.count } == 1)

            #expect(try Self.send(second, "POST", "/_admin/v1/reset").status == 204)
            #expect(try second.video(Fixture.clearVideo).name == "Color Bars (clear)")
            try expectError(try second.playback("/accounts/\(Fixture.northwind)/videos/added"), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
            #expect((try Self.object(try Self.send(second, "GET", "/_admin/v1/licenses"))["licenses"] as? [Any])?.isEmpty == true)
            #expect(try Self.send(second, "GET", "/_admin/v1/accounts/\(Fixture.northwind)/playback-keys").status == 200)

            // Edit again, then start with resetAtStart.
            #expect(try Self.send(second, "POST", Self.videos, ["id": "again", "name": "Again"]).status == 201)
            let third = try makeApp(dataDirectory: directory) { $0.resetAtStart = true }
            try expectError(try third.playback("/accounts/\(Fixture.northwind)/videos/again"), 404, "NOT_FOUND", "VIDEO_NOT_FOUND")
        }
    }

    @Test("licenses: listed by account, video, user, device and state, shown with their history, revoked (renewal and first play refused); devices listed and removed")
    func licensesAndDevices() async throws {
        try await withApp { app, _ in
            try app.registerPlaybackKey()
            let now = TestKeys.now
            let token = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","uid":"ana","dlimit":1,"exp":\#(now + 3600)}"#)
            let client = try LicenseTestClient(app)
            let license = try client.license(device: "phone", token: token)
            _ = try client.license(device: "phone", headers: LicenseTestClient.offline(LicenseProfile(.purchase)), token: token)
            let id = license.terms.licenseID

            struct Listing: Decodable {
                struct Entry: Decodable { var id: String; var state: String; var user_id: String?; var device_id: String }
                var licenses: [Entry]
            }
            // A closure: as a local function, the compiler warned that its `try` covers no throwing call.
            let list = { (query: String) throws -> [Listing.Entry] in
                try Self.send(app, "GET", "/_admin/v1/licenses\(query)").decoded(Listing.self).licenses
            }
            #expect(try list("").count == 2)
            #expect(try list("?user=ana&device=phone&state=active").count == 2)
            #expect(try list("?user=bob").isEmpty)
            #expect(try list("?video=\(Fixture.fairPlayVideo)&account=\(Fixture.northwind)").count == 2)
            try expectError(try Self.send(app, "GET", "/_admin/v1/licenses?state=gone"), 400, "BAD_REQUEST", "INVALID_STATE")

            let shown = try Self.object(try Self.send(app, "GET", "/_admin/v1/licenses/\(id)"))
            #expect((shown["history"] as? [[String: Any]])?.map { $0["event"] as? String } == ["acquire"])
            #expect(shown["kind"] as? String == "purchase" && shown["state"] as? String == "active")

            let revoked = try Self.object(try Self.send(app, "POST", "/_admin/v1/licenses/\(id)/revoke"))
            #expect(revoked["state"] as? String == "revoked" && revoked["revoked_at"] != nil)
            #expect((revoked["history"] as? [[String: Any]])?.map { $0["event"] as? String } == ["acquire", "revoke"])
            #expect(try list("?state=revoked").map(\.id) == [id])
            let renewal = try client.send(.renew, licenseID: id, device: "phone", token: token).response
            try expectError(renewal, 403, "ACCESS_DENIED", "LICENSE_REVOKED")
            let firstPlay = try client.send(.firstPlay, licenseID: id, device: "phone", headers: [], token: token).response
            try expectError(firstPlay, 403, "ACCESS_DENIED", "LICENSE_REVOKED")
            try expectError(try Self.send(app, "POST", "/_admin/v1/licenses/nope/revoke"), 404, "NOT_FOUND", "LICENSE_NOT_FOUND")

            // One device slot (dlimit 1): a second device is refused until the first is removed.
            struct Devices: Decodable { struct Device: Decodable { var user_id: String; var device_id: String }; var devices: [Device] }
            let devices = try Self.send(app, "GET", "/_admin/v1/accounts/\(Fixture.northwind)/devices?user=ana").decoded(Devices.self)
            #expect(devices.devices.map(\.device_id) == ["phone"])
            try expectError(try client.send(device: "tablet", token: token).response, 403, "ACCESS_DENIED", "DENIED_BY_DEVICE_LIMITING")
            #expect(try Self.send(app, "DELETE", "/_admin/v1/accounts/\(Fixture.northwind)/devices/phone?user=ana").status == 204)
            try expectError(try Self.send(app, "DELETE", "/_admin/v1/accounts/\(Fixture.northwind)/devices/phone"), 404, "NOT_FOUND", "DEVICE_NOT_FOUND")
            _ = try client.license(device: "tablet", token: token)
        }
    }

    @Test("the assets list names what videos can use")
    func assets() async throws {
        try await withApp { app, _ in
            let assets = try Self.object(try Self.send(app, "GET", "/_admin/v1/assets"))["assets"] as? [[String: Any]]
            let bars = try #require(assets?.first { $0["name"] as? String == "bars" })
            #expect(bars["renditions"] as? [String] == ["416x234", "640x360", "960x540"])
            #expect(bars["audio_languages"] as? [String] == ["en", "fr", "es"])
            #expect(bars["subtitle_languages"] as? [String] == ["en", "fr", "de"])
        }
    }
}
