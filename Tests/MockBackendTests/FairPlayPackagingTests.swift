import Foundation
import MicroHTTP
import MockBackend
import SampleAES
import Testing
import TestKit
import WireModels

@Suite("FairPlay (SAMPLE-AES) packaging")
struct FairPlayPackagingTests {
    /// The FairPlay videos of the catalog (purchase, rental, one more).
    static let fairPlayVideos = [Fixture.fairPlayVideo, "6415818918104", "6415818918108"]

    /// The key id of a video's FairPlay key_request_url (its last path segment).
    static func keyID(_ app: MockBackendApp, _ id: String) throws -> String {
        let url = try #require(try app.video(id).sources.first?.fairPlay?.keyRequestURL)
        return try #require(pathSegments(ofURL: url).last)
    }

    /// The content key and IV the backend stored for a FairPlay video, read through the
    /// test-only key endpoint of a second app on the same data directory.
    static func contentKey(dataDirectory: URL, video id: String) throws -> (key: [UInt8], iv: [UInt8]) {
        let app = try makeApp(dataDirectory: dataDirectory) { $0.plainSampleAESKeysForTesting = true }
        let variant = try #require(try app.master(id).variants.first?.uri)
        let key = try #require(try app.mediaPlaylist(url: variant).segments.first?.key)
        let response = try app.get(url: try #require(key.uri))
        try #require(response.status == 200, "test key: \(response.status) \(response.debugText)")
        return (try response.bytes(), try #require(key.ivBytes))
    }

    @Test("the master carries the skd:// session key matching key_systems; audio and video playlists the matching key with IV; subtitles stay clear")
    func playlistShapes() async throws {
        try await withApp { app, _ in
            for id in Self.fairPlayVideos {
                let keyID = try Self.keyID(app, id)
                let master = try app.master(id)
                #expect(master.sessionKeys.count == 1)
                let session = try #require(master.sessionKeys.first)
                #expect(session.method == .sampleAES)
                #expect(session.uri == "skd://\(keyID)")
                #expect(session.keyFormat == "com.apple.streamingkeydelivery")
                #expect(session.keyFormatVersions == "1")
                #expect(master.variants.count == 3)
                let response = try app.get(url: try app.masterURL(id))
                #expect(try response.text().contains(
                    #"#EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="skd://\#(keyID)",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1""#))

                var ivs: Set<[UInt8]> = []
                let media = master.variants.map(\.uri) + master.renditions.filter { $0.type == .audio }.compactMap(\.uri)
                #expect(media.count == 6)
                for url in media {
                    let playlist = try app.mediaPlaylist(url: url)
                    let key = try #require(playlist.segments.first?.key, "\(url)")
                    #expect(key.method == .sampleAES)
                    #expect(key.uri == "skd://\(keyID)")
                    #expect(key.keyFormat == "com.apple.streamingkeydelivery")
                    #expect(key.keyFormatVersions == "1")
                    ivs.insert(try #require(key.ivBytes))
                    #expect(playlist.segments.dropFirst().allSatisfy { $0.keys.isEmpty }, "one key for the whole playlist")
                }
                #expect(ivs.count == 1 && ivs.first?.count == 16)
                for url in master.renditions.filter({ $0.type == .subtitles }).compactMap(\.uri) {
                    let playlist = try app.mediaPlaylist(url: url)
                    #expect(playlist.segments.allSatisfy { $0.keys.isEmpty }, "subtitles are clear")
                    let vtt = try app.get(url: try #require(playlist.segments.first?.uri))
                    #expect(vtt.status == 200)
                    #expect(try vtt.text().hasPrefix("WEBVTT"))
                }
            }
        }
    }

    @Test("every FairPlay segment served decrypts with our decryptor to the byte-identical fixture segment, and is never the clear bytes")
    func decryptsToFixtures() async throws {
        try await withApp { app, directory in
            let (key, iv) = try Self.contentKey(dataDirectory: directory, video: Fixture.fairPlayVideo)
            let master = try app.master(Fixture.fairPlayVideo)
            var checked = 0
            let video = master.variants.map { ("video/\($0.resolution.map { "\($0.width)x\($0.height)" } ?? "?")", $0.uri) }
            let audio = master.renditions.filter { $0.type == .audio }.map { ("audio/\($0.language ?? "?")", $0.uri ?? "") }
            for (folder, url) in video + audio {
                let playlist = try app.mediaPlaylist(url: url)
                #expect(playlist.segments.count == 6)
                for (index, segment) in playlist.segments.enumerated() {
                    let response = try app.get(url: segment.uri)
                    #expect(response.status == 200)
                    #expect(response.headers["Content-Type"] == "video/mp2t")
                    let encrypted = try response.bytes()
                    let clear = try Fixture.media("\(folder)/seg_00\(index).ts")
                    #expect(encrypted != clear, "\(folder) \(index) is never served clear")
                    #expect(try SampleAES.decrypt(segment: encrypted, key: key, iv: iv) == clear, "\(folder) \(index)")
                    checked += 1
                }
            }
            #expect(checked == 36)
            let cached = try FileManager.default.subpathsOfDirectory(atPath: directory.appendingPathComponent("cache/sample-aes").path)
            #expect(cached.filter { $0.hasSuffix(".ts") }.count == 36)
        }
    }

    @Test("segments are encrypted once into cache/sample-aes/{key id}/ and then served from that file with its ETag")
    func cached() async throws {
        try await withApp { app, directory in
            let keyID = try Self.keyID(app, Fixture.fairPlayVideo)
            let playlist = try app.mediaPlaylist(url: try #require(try app.master(Fixture.fairPlayVideo).variants.first?.uri))
            let first = try app.get(url: playlist.segments[2].uri)
            guard case .file(let path, _, let length) = first.body else {
                Issue.record("expected a file body, got \(first.body)")
                return
            }
            #expect(path.hasPrefix(directory.appendingPathComponent("cache/sample-aes/\(keyID)").path + "/"))
            let etag = try #require(first.headers["ETag"])
            let modified = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
            try await Task.sleep(for: .milliseconds(20))
            let second = try app.get(url: playlist.segments[2].uri)
            #expect(second.body == .file(path: path, offset: 0, length: length))
            #expect(second.headers["ETag"] == etag)
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date == modified)
            let leftovers = try FileManager.default.subpathsOfDirectory(atPath: directory.appendingPathComponent("cache").path)
                .filter { $0.hasSuffix(".tmp") }
            #expect(leftovers.isEmpty)

            // A cache deleted while the server runs is made again, never a 404.
            try FileManager.default.removeItem(at: directory.appendingPathComponent("cache"))
            let third = try app.get(url: playlist.segments[2].uri)
            #expect(third.status == 200)
            #expect(third.body == .file(path: path, offset: 0, length: length))
            #expect(FileManager.default.fileExists(atPath: path))
        }
    }

    @Test("parallel first fetches of one FairPlay segment all get the same bytes")
    func concurrentFirstFetch() async throws {
        try await withApp { app, _ in
            let playlist = try app.mediaPlaylist(url: try #require(try app.master(Fixture.fairPlayVideo).variants.last?.uri))
            let url = playlist.segments[3].uri
            let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0 ..< 6 { group.addTask { try app.get(url: url).bytes() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results).count == 1)
            #expect(results.first?.isEmpty == false)
        }
    }

    @Test("the test-only switch: plain key URL with IV and no KEYFORMAT, a key endpoint with the 16 raw bytes; off means skd:// and 404")
    func plainKeySwitch() async throws {
        try await withTemporaryDirectory { directory in
            let plain = try makeApp(dataDirectory: directory) { $0.plainSampleAESKeysForTesting = true }
            let keyID = try Self.keyID(plain, Fixture.fairPlayVideo)
            let master = try plain.master(Fixture.fairPlayVideo)
            #expect(master.sessionKeys.first?.uri == "skd://\(keyID)", "the master keeps the FairPlay session key")
            let key = try #require(try plain.mediaPlaylist(url: master.variants[0].uri).segments.first?.key)
            #expect(key.method == .sampleAES)
            #expect(key.keyFormat == nil && key.keyFormatVersions == nil)
            #expect(key.ivBytes?.count == 16)
            let keyURL = try #require(key.uri)
            #expect(keyURL.hasPrefix("\(plain.baseURL)/license/v1/sample-aes-test-key/\(Fixture.northwind)/"))
            #expect(keyURL.contains("/\(keyID)?fastly_token="))
            let answer = try plain.get(url: keyURL)
            #expect(answer.status == 200)
            #expect(answer.headers["Cache-Control"] == "no-store")
            #expect(try answer.bytes().count == 16)
            try expectError(try plain.request("GET", URLToken.path(ofURL: keyURL)), 403, "ACCESS_DENIED", "TOKEN_REQUIRED")

            let normal = try makeApp(dataDirectory: directory)
            try expectError(try normal.get(url: keyURL), 404, "NOT_FOUND", nil)
            let normalKey = try normal.mediaPlaylist(url: try normal.master(Fixture.fairPlayVideo).variants[0].uri).segments.first?.key
            #expect(normalKey?.uri == "skd://\(keyID)")
            // Same key, same cached media either way.
            #expect(try normal.get(url: try normal.mediaPlaylist(url: try normal.master(Fixture.fairPlayVideo).variants[0].uri).segments[0].uri).bytes()
                == (try plain.get(url: try plain.mediaPlaylist(url: master.variants[0].uri).segments[0].uri).bytes()))
        }
    }
}
