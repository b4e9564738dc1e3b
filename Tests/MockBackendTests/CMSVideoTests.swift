import Foundation
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// The CMS API's videos against one catalog: made, read, changed, searched and deleted through
/// `/v1/accounts/{account}/videos…` with an OAuth token, seen by the admin API and served (or
/// not) by the Playback API on the mock's clock; on both stores.
@Suite("CMS API: videos")
struct CMSVideoTests {
    static let account = Fixture.northwind

    /// A CMS call with `token`; `body` is sent as JSON.
    static func cms(_ app: MockBackendApp, _ method: String, _ path: String, token: String?, _ body: Any? = nil) throws -> HTTPResponse {
        var headers: [(String, String)] = token.map { [("Authorization", "Bearer \($0)")] } ?? []
        var bytes: [UInt8] = []
        if let body {
            headers.append(("Content-Type", "application/json"))
            bytes = Array(try JSONSerialization.data(withJSONObject: body, options: .fragmentsAllowed))
        }
        return try app.request(method, "/v1/accounts/\(account)\(path)", headers: headers, body: bytes)
    }

    static func object(_ response: HTTPResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [String: Any], "\(response.debugText)")
    }

    static func array(_ response: HTTPResponse) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.bytes())) as? [[String: Any]], "\(response.debugText)")
    }

    /// Checks a CMS error body: one element, this code, a message, and no subcode.
    static func expectCMSError(_ response: HTTPResponse, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, "\(response.debugText)", sourceLocation: sourceLocation)
        let errors = try response.apiErrors()
        #expect(errors.count == 1 && errors[0].errorCode == code && errors[0].errorSubcode == nil && errors[0].message?.isEmpty == false,
                "\(response.debugText)", sourceLocation: sourceLocation)
    }

    @Test("a video made through the CMS API is one catalog entry: 201 without media, seen by the admin API, not playable until it has media, then played; another instance sees it", arguments: StoreKind.allCases)
    func createdVideoIsTheCatalogs(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let token = try OAuthTests.token(app)
            let created = try Self.cms(app, "POST", "/videos", token: token, [
                "name": "Moose Herd", "description": "Herd of moose grazing", "reference_id": "moose_2015_09_17",
                "tags": ["nature", "animals", "nature"], "custom_fields": ["genre": "wildlife", "undefined_field": "dropped"],
                "offline_enabled": true,
            ])
            #expect(created.status == 201, "\(created.debugText)")
            let video = try Self.object(created)
            let id = try #require(video["id"] as? String)
            #expect(id.count == 13 && id.allSatisfy(\.isNumber))
            #expect(video["account_id"] as? String == Self.account)
            #expect(video["complete"] as? Bool == false)
            #expect(video["duration"] is NSNull)
            #expect((video["images"] as? [String: Any])?.isEmpty == true)
            #expect((video["text_tracks"] as? [Any])?.isEmpty == true)
            #expect(video["state"] as? String == "ACTIVE")
            #expect(video["tags"] as? [String] == ["animals", "nature"])
            #expect(video["custom_fields"] as? [String: String] == ["genre": "wildlife"])
            #expect(video["delivery_type"] as? String == "unknown")
            #expect(video["drm_disabled"] as? Bool == false, "a FairPlay account's video is DRM-packaged unless drm_disabled")
            for key in ["schedule", "geo", "link", "long_description", "folder_id", "digital_master_id", "sharing", "ad_keys"] {
                #expect(video[key] is NSNull, "\(key) should be null")
            }

            // One catalog: the admin API has it, the Playback API knows it but cannot play it yet.
            let admin = try app.request("GET", "/_admin/v1/accounts/\(Self.account)/videos/\(id)")
            #expect(admin.status == 200, "\(admin.debugText)")
            #expect(try admin.text().contains("Moose Herd"))
            try expectError(try app.playback("/accounts/\(Self.account)/videos/\(id)"), 403, PlaybackAPIErrorCode.accessDenied,
                            PlaybackAPIErrorCode.videoNotPlayable)
            try expectError(try app.playback("/accounts/\(Self.account)/videos/ref:moose_2015_09_17"), 403, PlaybackAPIErrorCode.accessDenied,
                            PlaybackAPIErrorCode.videoNotPlayable)

            // Media given through the admin API (as an ingest will): complete, with images and sources, and playable.
            let media = try AdminCatalogTests.send(app, "PATCH", "\(AdminCatalogTests.videos)/\(id)", ["asset": "bars", "protection": "clear"])
            #expect(media.status == 200, "\(media.debugText)")
            let complete = try Self.object(Self.cms(app, "GET", "/videos/\(id)", token: token))
            #expect(complete["complete"] as? Bool == true)
            #expect(complete["duration"] as? Int == (try app.video(Fixture.clearVideo)).duration)
            #expect(complete["delivery_type"] as? String == "dynamic_origin")
            #expect(complete["drm_disabled"] as? Bool == true)
            #expect(((complete["images"] as? [String: Any])?["poster"] as? [String: Any])?["src"] as? String != nil)
            #expect(try app.video(id).name == "Moose Herd")
            let sources = try Self.array(Self.cms(app, "GET", "/videos/\(id)/sources", token: token))
            #expect(sources.first?["type"] as? String == "application/x-mpegURL")
            let images = try Self.object(Self.cms(app, "GET", "/videos/\(id)/images", token: token))
            #expect(Set(images.keys) == ["poster", "thumbnail"])

            let other = try makeApp()
            #expect(try await eventually { try Self.cms(other, "GET", "/videos/ref:moose_2015_09_17", token: token).status == 200 })
            #expect(try await eventually { try other.video(id).name == "Moose Herd" })
        }
    }

    @Test("PATCH changes only what it sends, null clears, state and schedule decide playback on the mock's clock; refusals are 409 and 422 with the CMS body", arguments: StoreKind.allCases)
    func patchSemantics(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let token = try OAuthTests.token(app)
            let id = Fixture.clearVideo
            let before = try Self.object(Self.cms(app, "GET", "/videos/\(id)", token: token))
            let patched = try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["name": "Renamed", "description": NSNull(),
                                                                                     "custom_fields": ["rating": NSNull()]])
            #expect(patched.status == 200, "\(patched.debugText)")
            let after = try Self.object(patched)
            #expect(after["name"] as? String == "Renamed")
            #expect(after["description"] is NSNull)
            #expect(after["reference_id"] as? String == before["reference_id"] as? String)
            #expect(after["tags"] as? [String] == before["tags"] as? [String])
            #expect(after["custom_fields"] as? [String: String] == ["genre": "documentary"])
            #expect(try app.video(id).name == "Renamed")

            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["reference_id": "nw-aes-bars"]), 409, "REFERENCE_ID_IN_USE")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["foo": 1]), 422, "VALIDATION_ERROR")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["id": id]), 422, "VALIDATION_ERROR")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["name": ""]), 422, "VALIDATION_ERROR")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["state": "GONE"]), 422, "VALIDATION_ERROR")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["offline_enabled": "yes"]), 422, "VALIDATION_ERROR")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["account_id": Fixture.contoso]), 422, "VALIDATION_ERROR")
            try Self.expectCMSError(try app.request("PATCH", "/v1/accounts/\(Self.account)/videos/\(id)",
                                                    headers: [("Authorization", "Bearer \(token)")], body: Array("{nope".utf8)), 400, "BAD_VALUE")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/9999999999999", token: token, ["name": "x"]), 404, "RESOURCE_NOT_FOUND")

            // INACTIVE never plays; ACTIVE again does.
            #expect(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["state": "INACTIVE"]).status == 200)
            try expectError(try app.playback("/accounts/\(Self.account)/videos/\(id)"), 403, PlaybackAPIErrorCode.accessDenied,
                            PlaybackAPIErrorCode.videoNotPlayable)
            #expect(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["state": "ACTIVE"]).status == 200)
            #expect(try app.playback("/accounts/\(Self.account)/videos/\(id)").status == 200)

            // A schedule that starts in an hour (written with an offset, stored in UTC): not playable,
            // not in the Playback API's search, until the clock moves; after ends_at, not again.
            let now = app.clock.now()
            let starts = now.addingTimeInterval(3600), ends = now.addingTimeInterval(7200)
            let scheduled = try Self.object(Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["schedule": [
                "starts_at": Self.withOffset(starts), "ends_at": WireDate.string(from: ends)]]))
            #expect((scheduled["schedule"] as? [String: String])?["starts_at"] == WireDate.string(from: starts))
            try expectError(try app.playback("/accounts/\(Self.account)/videos/\(id)"), 403, PlaybackAPIErrorCode.accessDenied,
                            PlaybackAPIErrorCode.videoNotPlayable)
            #expect(try !app.playback("/accounts/\(Self.account)/videos?q=id:\(id)").text().contains(id))
            let found = try Self.array(Self.cms(app, "GET", "/videos?q=%2Bplayable:false%20%2Bid:\(id)", token: token))
            #expect(found.map { $0["id"] as? String } == [id], "the CMS API searches every video, playable or not")
            app.clock.advance(by: 3600)
            #expect(try app.playback("/accounts/\(Self.account)/videos/\(id)").status == 200)
            #expect(try app.playback("/accounts/\(Self.account)/videos?q=id:\(id)").text().contains(id))
            app.clock.advance(by: 3600)
            try expectError(try app.playback("/accounts/\(Self.account)/videos/\(id)"), 403, PlaybackAPIErrorCode.accessDenied,
                            PlaybackAPIErrorCode.videoNotPlayable)
            // The token lived 300 s of that clock: a new one.
            try Self.expectCMSError(try Self.cms(app, "GET", "/videos/\(id)", token: token), 401, "UNAUTHORIZED")
            let fresh = try OAuthTests.token(app)
            let cleared = try Self.object(Self.cms(app, "PATCH", "/videos/\(id)", token: fresh, ["schedule": NSNull()]))
            #expect(cleared["schedule"] is NSNull)
            #expect(try app.playback("/accounts/\(Self.account)/videos/\(id)").status == 200)
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: fresh,
                                                 ["schedule": ["starts_at": "2030-01-02T00:00:00Z", "ends_at": "2030-01-01T00:00:00Z"]]),
                                    422, "VALIDATION_ERROR")
        }
    }

    /// `date` written with a +08:00 offset.
    static func withOffset(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(secondsFromGMT: 8 * 3600)
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    @Test("list, search, sort, paging and counts see the fixture videos; several ids answer an array; the limits are the CMS API's")
    func listAndSearch() async throws {
        try await withApp { app, _ in
            let token = try OAuthTests.token(app)
            let count = try Self.object(Self.cms(app, "GET", "/counts/videos", token: token))
            #expect(count["count"] as? Int == Fixture.northwindVideos.count)
            #expect(try Self.array(Self.cms(app, "GET", "/videos", token: token)).count == Fixture.northwindVideos.count)
            let fairplay = try Self.array(Self.cms(app, "GET", "/videos?q=tags:fairplay&sort=name", token: token))
            let names = fairplay.compactMap { $0["name"] as? String }
            #expect(names.count == 3 && names == names.sorted { $0.lowercased() < $1.lowercased() })
            #expect(try Self.object(Self.cms(app, "GET", "/counts/videos?q=tags:fairplay", token: token))["count"] as? Int == 3)
            let page = try Self.array(Self.cms(app, "GET", "/videos?sort=-created_at&limit=2&offset=1", token: token))
            let all = try Self.array(Self.cms(app, "GET", "/videos?sort=-created_at", token: token))
            #expect(page.map { $0["id"] as? String } == all.dropFirst().prefix(2).map { $0["id"] as? String })
            try Self.expectCMSError(try Self.cms(app, "GET", "/videos?sort=foo", token: token), 400, "INVALID_SORT")
            try Self.expectCMSError(try Self.cms(app, "GET", "/videos?q=%22open", token: token), 400, "ILLEGAL_QUERY")
            try Self.expectCMSError(try Self.cms(app, "GET", "/videos?limit=101", token: token), 400, "BAD_VALUE")

            let several = try Self.array(Self.cms(app, "GET", "/videos/\(Fixture.aesVideo),9999999999999,\(Fixture.clearVideo)", token: token))
            #expect(several.map { $0["id"] as? String } == [Fixture.aesVideo, Fixture.clearVideo])
            #expect(try Self.object(Self.cms(app, "GET", "/videos/ref:nw-clear-bars", token: token))["id"] as? String == Fixture.clearVideo)
            let eleven = (0..<11).map { "10000000000\($0)" }.joined(separator: ",")
            try Self.expectCMSError(try Self.cms(app, "GET", "/videos/\(eleven)", token: token), 400, "BAD_REQUEST")
            try Self.expectCMSError(try Self.cms(app, "GET", "/videos/\(Fixture.contosoClearVideo)", token: token), 404, "RESOURCE_NOT_FOUND")
        }
    }

    @Test("DELETE is 204 and the video is gone from every API; a video in a manual playlist is 409 REFERENCES_EXIST")
    func delete() async throws {
        try await withApp { app, _ in
            let token = try OAuthTests.token(app)
            try Self.expectCMSError(try Self.cms(app, "DELETE", "/videos/\(Fixture.clearVideo)", token: token), 409, "REFERENCES_EXIST")
            let a = try #require(try Self.object(Self.cms(app, "POST", "/videos", token: token, ["name": "A"]))["id"] as? String)
            let b = try #require(try Self.object(Self.cms(app, "POST", "/videos", token: token, ["name": "B"]))["id"] as? String)
            let deleted = try Self.cms(app, "DELETE", "/videos/\(a),\(b),\(Fixture.streamOnlyVideo)", token: token)
            #expect(deleted.status == 204)
            #expect(try deleted.bytes().isEmpty)
            for id in [a, b, Fixture.streamOnlyVideo] {
                try Self.expectCMSError(try Self.cms(app, "GET", "/videos/\(id)", token: token), 404, "RESOURCE_NOT_FOUND")
                #expect(try app.request("GET", "/_admin/v1/accounts/\(Self.account)/videos/\(id)").status == 404)
            }
            try expectError(try app.playback("/accounts/\(Self.account)/videos/\(Fixture.streamOnlyVideo)"), 404, PlaybackAPIErrorCode.notFound,
                            PlaybackAPIErrorCode.videoNotFound)
            try Self.expectCMSError(try Self.cms(app, "DELETE", "/videos/\(a)", token: token), 404, "RESOURCE_NOT_FOUND")
        }
    }

    @Test("without a token, with an expired one or another account's, every CMS call is 401 UNAUTHORIZED \"Permission denied.\"")
    func unauthorized() async throws {
        try await withApp { app, _ in
            let token = try OAuthTests.token(app)
            let contoso = try OAuthTests.token(app, account: Fixture.contoso)
            for response in [try Self.cms(app, "GET", "/videos", token: nil), try Self.cms(app, "GET", "/videos", token: contoso),
                             try Self.cms(app, "POST", "/videos", token: "Anot-a-token", ["name": "x"])] {
                #expect(response.status == 401)
                #expect(try response.text() == #"[{"error_code":"UNAUTHORIZED","message":"Permission denied."}]"#)
            }
            #expect(try Self.cms(app, "GET", "/videos", token: token).status == 200)
            app.clock.advance(by: 300)
            #expect(try Self.cms(app, "GET", "/videos", token: token).status == 401)
        }
    }

    @Test("PATCH text_tracks replaces the list (202): an id keeps a track, src and srclang add one by URL, [] removes all; the Playback API lists the same", arguments: StoreKind.allCases)
    func textTracks(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let token = try OAuthTests.token(app)
            let id = Fixture.clearVideo
            let before = try #require(try Self.object(Self.cms(app, "GET", "/videos/\(id)", token: token))["text_tracks"] as? [[String: Any]])
            let english = try #require(before.first { $0["srclang"] as? String == "en" }?["id"] as? String)
            #expect(before.count == 3)
            let patched = try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["text_tracks": [
                ["id": english],
                ["src": "https://example.com/tracks/es.vtt", "srclang": "es", "kind": "subtitles", "label": "Español", "default": true],
            ]])
            #expect(patched.status == 202, "\(patched.debugText)")
            let tracks = try #require(try Self.object(patched)["text_tracks"] as? [[String: Any]])
            #expect(tracks.compactMap { $0["srclang"] as? String } == ["en", "es"])
            #expect(tracks.last?["src"] as? String == "https://example.com/tracks/es.vtt")
            #expect(tracks.last?["kind"] as? String == "subtitles" && tracks.last?["default"] as? Bool == true)
            let played = try app.video(id).textTracks.filter { !$0.isThumbnailTrack }
            #expect(played.map(\.srclang) == ["en", "es"] && played.last?.label == "Español")
            let added = try #require(tracks.last?["id"] as? String)
            // Kept by id again, the asset's track dropped.
            let kept = try Self.object(Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["text_tracks": [["id": added]]]))
            #expect((kept["text_tracks"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [added])
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["text_tracks": [["id": "nope"]]]), 422, "VALIDATION_ERROR")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["text_tracks": [["src": "file:///etc/passwd", "srclang": "en"]]]),
                                    422, "VALIDATION_ERROR")
            try Self.expectCMSError(try Self.cms(app, "PATCH", "/videos/\(id)", token: token,
                                                 ["text_tracks": [["src": "https://example.com/a.vtt", "srclang": "en", "kind": "karaoke"]]]),
                                    422, "VALIDATION_ERROR")
            let none = try Self.object(Self.cms(app, "PATCH", "/videos/\(id)", token: token, ["text_tracks": [Any]()]))
            #expect((none["text_tracks"] as? [Any])?.isEmpty == true)
            #expect(try app.video(id).textTracks.allSatisfy(\.isThumbnailTrack), "only the thumbnail track, which delivery makes")
            #expect(try app.master(id).renditions.contains { $0.type == .subtitles }, "the manifest's subtitles stay")
        }
    }

    @Test("the dashboard lists a CMS video without media (no thumbnail, no length) and renames it; the CMS API sees the new name")
    func dashboardEditsTheCMSVideo() async throws {
        try await withApp { app, _ in
            let token = try OAuthTests.token(app)
            let id = try #require(try Self.object(Self.cms(app, "POST", "/videos", token: token, ["name": "From the CMS"]))["id"] as? String)
            let session = try DashboardTests.session(app)
            let html = try DashboardTests.page(app, cookie: session.cookie).text()
            let row = try #require(html.components(separatedBy: "<tr data-video-id=\"\(id)\">").dropFirst().first?.components(separatedBy: "</tr>").first)
            #expect(row.contains("no media") && row.contains("From the CMS") && !row.contains("<img"))
            let saved = try session.post(app, "/_dashboard/accounts/\(Self.account)/videos/\(id)", [("name", "Renamed on the dashboard")])
            #expect(saved.status == 303, "\(saved.debugText)")
            #expect(try Self.object(Self.cms(app, "GET", "/videos/\(id)", token: token))["name"] as? String == "Renamed on the dashboard")
        }
    }

    @Test("live: curl gets a token, makes a video, finds it, changes and deletes it on a server on port 0")
    func live() async throws {
        try await withLiveServer { server in
            let (id, secret) = try OAuthTests.makeClient(server.app)
            let tokenResponse = try await Curl.fetch("\(server.baseURL)/v4/access_token", ["-u", "\(id):\(secret)", "-d", "grant_type=client_credentials"])
            let token = try #require((try JSONSerialization.jsonObject(with: Data(tokenResponse.body)) as? [String: Any])?["access_token"] as? String)
            let base = "\(server.baseURL)/v1/accounts/\(Self.account)/videos"
            let auth = ["-H", "Authorization: Bearer \(token)", "-H", "Content-Type: application/json"]
            let created = try await Curl.fetch(base, auth + ["-d", #"{"name":"Live one","tags":["live"]}"#])
            #expect(created.status == 201, "\(created.text)")
            let video = try #require((try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any])?["id"] as? String)
            let found = try await Curl.fetch(base + "?q=tags:live", auth)
            #expect(found.status == 200 && found.text.contains(video))
            let patched = try await Curl.fetch("\(base)/\(video)", auth + ["-X", "PATCH", "-d", #"{"state":"INACTIVE"}"#])
            #expect(patched.status == 200 && patched.text.contains(#""state":"INACTIVE""#))
            #expect(try await Curl.fetch("\(base)/\(video)", auth + ["-X", "DELETE"]).status == 204)
            #expect(try await Curl.fetch("\(base)/\(video)", auth).status == 404)
        }
    }
}
