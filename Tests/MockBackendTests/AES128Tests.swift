import Foundation
import TestKit
import MicroHTTP
import MockBackend
import Testing
import WireModels

@Suite("AES-128 keys and segments")
struct AES128Tests {
    static func hex(_ bytes: [UInt8]) -> String { Hex.lowercase(bytes) }

    /// Decrypts AES-128-CBC (PKCS7) with the openssl binary.
    static func decrypt(_ data: [UInt8], key: [UInt8], iv: [UInt8]) async throws -> [UInt8] {
        try await withTemporaryDirectory { directory in
            let input = directory.appendingPathComponent("in.bin")
            let output = directory.appendingPathComponent("out.bin")
            try Data(data).write(to: input)
            let result = try await Run.process("/usr/bin/openssl", [
                "aes-128-cbc", "-d", "-K", hex(key), "-iv", hex(iv), "-in", input.path, "-out", output.path,
            ])
            try #require(result.exitCode == 0, "openssl: \(result.stderrText)")
            return Array(try Data(contentsOf: output))
        }
    }

    @Test("the key is 16 bytes, and segments decrypt with it and the playlist's IV to the fixture files")
    func decryptsToFixture() async throws {
        try await withApp { app, directory in
            let master = try app.master(Fixture.aesVideo)
            let video = try app.mediaPlaylist(url: master.variants[2].uri)
            let key = try #require(video.segments.first?.key)
            let iv = try #require(key.ivBytes)
            let keyResponse = try app.get(url: try #require(key.uri))
            #expect(keyResponse.status == 200)
            #expect(keyResponse.headers["Content-Type"] == "application/octet-stream")
            #expect(keyResponse.headers["Cache-Control"] == "no-store")
            let keyBytes = try keyResponse.bytes()
            #expect(keyBytes.count == 16)

            let audioURL = try #require(master.renditions.first { $0.type == .audio && $0.language == "es" }?.uri)
            let audio = try app.mediaPlaylist(url: audioURL)
            #expect(audio.segments.first?.key == key, "audio and video share the key")
            let cases: [(String, String)] = [
                (video.segments[0].uri, "video/960x540/seg_000.ts"),
                (video.segments[4].uri, "video/960x540/seg_004.ts"),
                (audio.segments[3].uri, "audio/es/seg_003.ts"),
            ]
            for (url, fixture) in cases {
                let response = try app.get(url: url)
                #expect(response.status == 200)
                #expect(response.headers["Content-Type"] == "video/mp2t")
                let encrypted = try response.bytes()
                let clear = try Fixture.media(fixture)
                #expect(encrypted.count == (clear.count / 16 + 1) * 16, "PKCS7 padding of \(fixture)")
                #expect(encrypted != clear)
                #expect(try await Self.decrypt(encrypted, key: keyBytes, iv: iv) == clear, "\(fixture)")
            }
            // Everything was encrypted into the data directory's cache.
            let cached = try FileManager.default.subpathsOfDirectory(atPath: directory.appendingPathComponent("cache/aes128").path)
            #expect(cached.filter { $0.hasSuffix(".ts") }.count == 3)
        }
    }

    @Test("a second fetch is served from the cache file: same path, same bytes, untouched")
    func cached() async throws {
        try await withApp { app, directory in
            let video = try app.mediaPlaylist(url: try app.master(Fixture.aesVideo).variants[0].uri)
            let first = try app.get(url: video.segments[1].uri)
            guard case .file(let path, _, let length) = first.body else {
                Issue.record("expected a file body, got \(first.body)")
                return
            }
            #expect(path.hasPrefix(directory.appendingPathComponent("cache/aes128").path + "/"))
            #expect(FileManager.default.fileExists(atPath: path))
            let modified = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
            let etag = first.headers["ETag"]
            try await Task.sleep(for: .milliseconds(20))
            let second = try app.get(url: video.segments[1].uri)
            #expect(second.body == .file(path: path, offset: 0, length: length))
            #expect(try second.bytes() == (try first.bytes()))
            #expect(second.headers["ETag"] == etag)
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date == modified)
            let leftovers = try FileManager.default.subpathsOfDirectory(atPath: directory.appendingPathComponent("cache").path)
                .filter { $0.hasSuffix(".tmp") }
            #expect(leftovers.isEmpty)
        }
    }

    @Test("parallel first fetches of one segment all get the same correct bytes")
    func concurrentFirstFetch() async throws {
        try await withApp { app, _ in
            let video = try app.mediaPlaylist(url: try app.master(Fixture.aesVideo).variants[1].uri)
            let url = video.segments[2].uri
            let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0..<8 { group.addTask { try app.get(url: url).bytes() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results).count == 1)
            #expect(results.first?.isEmpty == false)
        }
    }

    @Test("the key endpoint refuses other key ids, clear videos and missing tokens")
    func keyRefusals() async throws {
        try await withApp { app, directory in
            let secret = try urlSigningSecret(dataDirectory: directory)
            let video = try app.mediaPlaylist(url: try app.master(Fixture.aesVideo).variants[0].uri)
            let keyURL = try #require(video.segments.first?.key?.uri)
            let keyPath = URLToken.path(ofURL: keyURL)
            let wrongKey = keyPath.split(separator: "/").dropLast().joined(separator: "/") + "/00000000-0000-4000-8000-000000000000"
            try expectError(try app.request("GET", signedTarget("/" + wrongKey, secret: secret, now: app.clock.now())), 404, "NOT_FOUND", nil)
            // The clear video's uuid with the AES video's key id.
            let clearUUID = pathSegments(ofURL: try app.masterURL(Fixture.clearVideo))[6]
            var parts = keyPath.split(separator: "/").map(String.init)
            parts[4] = clearUUID
            try expectError(try app.request("GET", signedTarget("/" + parts.joined(separator: "/"), secret: secret, now: app.clock.now())),
                            404, "NOT_FOUND", nil)
            try expectError(try app.request("GET", keyPath), 403, "ACCESS_DENIED", "TOKEN_REQUIRED")
            // Contoso's AES video has its own key.
            let contoso = try app.mediaPlaylist(url: try #require(try app.master(
                Fixture.contosoAESVideo, account: Fixture.contoso, key: Fixture.contosoPlayKey).variants.first?.uri))
            let contosoKey = try #require(contoso.segments.first?.key?.uri)
            #expect(URLToken.path(ofURL: contosoKey) != keyPath)
            #expect(try app.get(url: contosoKey).bytes() != (try app.get(url: keyURL).bytes()))
        }
    }
}

@Suite("Persistence across restarts")
struct PersistenceTests {
    struct Snapshot {
        var keyURL: String
        var key: [UInt8]
        var iv: [UInt8]
        var masterURL: String
        var segmentURL: String
    }

    static func snapshot(_ app: MockBackendApp) throws -> Snapshot {
        let master = try app.master(Fixture.aesVideo)
        let playlist = try app.mediaPlaylist(url: master.variants[0].uri)
        let key = try #require(playlist.segments.first?.key)
        let keyURL = try #require(key.uri)
        return Snapshot(keyURL: keyURL, key: try app.get(url: keyURL).bytes(), iv: try #require(key.ivBytes),
                        masterURL: try app.masterURL(Fixture.aesVideo), segmentURL: playlist.segments[0].uri)
    }

    @Test("two apps on one data directory share key ids, keys, IVs and signing secret, so URLs survive a restart")
    func sameDirectory() async throws {
        try await withTemporaryDirectory { directory in
            let before: Snapshot
            let beforeSegment: [UInt8]
            do {
                let app = try makeApp(dataDirectory: directory)
                before = try Self.snapshot(app)
                beforeSegment = try app.get(url: before.segmentURL).bytes()
            }
            let app = try makeApp(dataDirectory: directory)
            let after = try Self.snapshot(app)
            #expect(URLToken.path(ofURL: after.keyURL) == URLToken.path(ofURL: before.keyURL))
            #expect(after.key == before.key)
            #expect(after.iv == before.iv)
            #expect(URLToken.path(ofURL: after.masterURL) == URLToken.path(ofURL: before.masterURL))
            // URLs handed out before the restart still work, and serve the same bytes.
            for url in [before.masterURL, before.keyURL, before.segmentURL] {
                #expect(try app.get(url: url).status == 200, "\(url)")
            }
            #expect(try app.get(url: before.keyURL).bytes() == before.key)
            #expect(try app.get(url: before.segmentURL).bytes() == beforeSegment)
        }
    }

    @Test("a fresh data directory makes new keys and a new signing secret")
    func freshDirectory() async throws {
        try await withApp { first, _ in
            try await withApp { second, _ in
                let a = try Self.snapshot(first)
                let b = try Self.snapshot(second)
                #expect(URLToken.path(ofURL: a.keyURL) != URLToken.path(ofURL: b.keyURL))
                #expect(a.key != b.key)
                #expect(a.iv != b.iv)
                // Video and rendition uuids are stable (derived from the catalog), tokens are not portable.
                #expect(URLToken.path(ofURL: a.masterURL) == URLToken.path(ofURL: b.masterURL))
                try expectError(try second.get(url: a.masterURL), 403, "ACCESS_DENIED", "TOKEN_VALIDATION")
            }
        }
    }
}

@Suite("Admin API: clock and health")
struct AdminTests {
    struct ClockState: Decodable {
        var now: Date
        var offsetSeconds: Double
        enum CodingKeys: String, CodingKey { case now; case offsetSeconds = "offset_seconds" }
    }

    @Test("GET /_admin/v1/clock reports now and the offset; POST moves it")
    func clock() async throws {
        try await withApp { app, _ in
            let initial = try app.request("GET", "/_admin/v1/clock")
            #expect(initial.status == 200)
            let state = try initial.decoded(ClockState.self)
            #expect(state.offsetSeconds == 0)
            #expect(abs(state.now.timeIntervalSinceNow) < 5)
            #expect(try initial.text().contains(#""offset_seconds":0"#))

            let moved = try app.request("POST", "/_admin/v1/clock", headers: [("Content-Type", "application/json")],
                                        body: Array(#"{"offset_seconds": 3600}"#.utf8))
            #expect(moved.status == 200)
            let movedState = try moved.decoded(ClockState.self)
            #expect(movedState.offsetSeconds == 3600)
            #expect(abs(movedState.now.timeIntervalSinceNow - 3600) < 5)
            #expect(app.clock.offset == 3600)
            #expect(try app.request("GET", "/_admin/v1/clock").decoded(ClockState.self).offsetSeconds == 3600)

            let back = try app.request("POST", "/_admin/v1/clock", body: Array(#"{"offset_seconds": -90.5}"#.utf8))
            #expect(try back.decoded(ClockState.self).offsetSeconds == -90.5)
            #expect(app.clock.offset == -90.5)
        }
    }

    @Test("a bad clock body is 400 with an error array and leaves the clock alone", arguments: [
        "", "{}", "not json", #"{"offset_seconds":"3600"}"#, #"{"offset_seconds":1e20}"#, #"{"offset":5}"#, "[3600]", "null",
    ])
    func badClockBody(body: String) async throws {
        try await withApp { app, _ in
            app.clock.offset = 60
            let response = try app.request("POST", "/_admin/v1/clock", body: Array(body.utf8))
            try expectError(response, 400, "BAD_REQUEST", "INVALID_BODY")
            #expect(app.clock.offset == 60)
        }
    }

    @Test("health answers 200 with the catalog's size; other methods are 405")
    func health() async throws {
        try await withApp { app, _ in
            let response = try app.request("GET", "/_admin/v1/health")
            #expect(response.status == 200)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(try response.bytes())) as? [String: String])
            #expect(body["status"] == "ok")
            #expect(body["videos"] == "11")
            #expect(body["accounts"] == "2")
            try expectError(try app.request("DELETE", "/_admin/v1/clock"), 405, "METHOD_NOT_ALLOWED", nil)
            try expectError(try app.request("POST", "/_admin/v1/health"), 405, "METHOD_NOT_ALLOWED", nil)
        }
    }
}
