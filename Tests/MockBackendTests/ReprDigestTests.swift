import Foundation
import MicroHTTP
@testable import MockBackend
import TestKit
import Testing
import WireModels

/// Every media body the mock sends carries RFC 9530's `Repr-Digest` of the whole
/// representation and a strong ETag made from it, on every kind of answer (200, HEAD, 206, 304),
/// across restarts, and untouched by faults that damage the body.
@Suite("Repr-Digest and strong ETags on every media body, live")
struct ReprDigestLiveTests {
    /// A media body's URL and what it is.
    struct Media: Sendable, CustomStringConvertible {
        var kind: String
        var url: String
        var description: String { kind }
    }

    /// Runs `body` with a server on `directory`, its clock standing still (the playlists' signed
    /// URLs, and so their bytes, stay the same for the whole test), then shuts it down.
    static func withServer(directory: URL, _ body: (MockBackendServer) async throws -> Void) async throws {
        try await withLiveServer(directory: directory, clock: BackendClock(fixedAt: Date()), { _ in }, body)
    }

    /// One URL of every kind of media body, from the server's Playback API and playlists.
    static func media(_ server: MockBackendServer) async throws -> [Media] {
        func variant(_ master: MasterPlaylist) async throws -> MediaPlaylist {
            try MediaPlaylist(parsing: try await Curl.fetch(try #require(master.variants.first?.uri)).text)
        }
        func master(_ video: Video) async throws -> (url: String, playlist: MasterPlaylist) {
            let url = try #require(video.sources.first?.src)
            return (url, try MasterPlaylist(parsing: try await Curl.fetch(url).text))
        }
        let clear = try await server.fetchVideo(Fixture.clearVideo)
        let clearMaster = try await master(clear)
        let clearVariantURL = try #require(clearMaster.playlist.variants.first?.uri)
        let clearVariant = try await variant(clearMaster.playlist)
        let subtitlesURL = try #require(clearMaster.playlist.renditions.first { $0.type == .subtitles }?.uri)
        let subtitles = try MediaPlaylist(parsing: try await Curl.fetch(subtitlesURL).text)
        let aes = try await variant(try await master(try await server.fetchVideo(Fixture.aesVideo)).playlist)
        let fairPlay = try await variant(try await master(try await server.fetchVideo(Fixture.fairPlayVideo)).playlist)
        return [
            Media(kind: "master playlist", url: clearMaster.url),
            Media(kind: "media playlist", url: clearVariantURL),
            Media(kind: "clear segment", url: clearVariant.segments[1].uri),
            Media(kind: "subtitle segment", url: subtitles.segments[1].uri),
            Media(kind: "AES-128 segment", url: aes.segments[1].uri),
            Media(kind: "AES-128 key", url: try #require(aes.segments.first?.key?.uri)),
            Media(kind: "SAMPLE-AES segment", url: fairPlay.segments[1].uri),
            Media(kind: "poster", url: try #require(clear.poster)),
            Media(kind: "thumbnail", url: try #require(clear.thumbnail)),
            Media(kind: "text track", url: try #require(clear.textTracks.first?.src)),
        ]
    }

    /// The `Repr-Digest` an answer carries, parsed.
    static func digest(_ response: CurlResponse, _ media: Media, sourceLocation: SourceLocation = #_sourceLocation) throws -> ReprDigest {
        let value = try #require(response.header("Repr-Digest"), "\(media): no Repr-Digest", sourceLocation: sourceLocation)
        #expect(value.hasPrefix("sha-256=:") && value.hasSuffix(":"), "\(media): \(value)", sourceLocation: sourceLocation)
        return try #require(ReprDigest(headerValue: value), "\(media): \(value)", sourceLocation: sourceLocation)
    }

    @Test("each kind of media body: Repr-Digest is the body's SHA-256, the ETag is strong and made from it; HEAD, 206 (If-Range too) and 304 carry the same")
    func everyKind() async throws {
        try await withTemporaryDirectory { directory in
            try await Self.withServer(directory: directory) { server in
                let all = try await Self.media(server)
                #expect(all.count == 10)
                for media in all {
                    let whole = try await Curl.fetch(media.url)
                    try #require(whole.status == 200, "\(media): \(whole.status) \(whole.text)")
                    let digest = try Self.digest(whole, media)
                    #expect(digest == ReprDigest(of: whole.body), "\(media): the header is the digest of the body sent")
                    let etag = try #require(whole.header("ETag"), "\(media): no ETag")
                    #expect(!etag.hasPrefix("W/") && etag.hasPrefix("\"") && etag == digest.etag, "\(media): \(etag)")
                    #expect(whole.header("Access-Control-Expose-Headers")?.contains("Repr-Digest") == true)

                    // (curl -I writes the headers where the body would go: its body is not looked at.)
                    let head = try await Curl.fetch(media.url, ["-I"])
                    #expect(head.status == 200 && head.header("Content-Length") == "\(whole.body.count)", "\(media)")
                    // 4-11: inside every body, the 16-byte key's too.
                    let range = try await Curl.fetch(media.url, ["-r", "4-11"])
                    #expect(range.status == 206 && range.body == Array(whole.body[4...11]), "\(media): \(range.status)")
                    #expect(range.header("Content-Range") == "bytes 4-11/\(whole.body.count)")
                    let ifRange = try await Curl.fetch(media.url, ["-r", "4-11", "-H", "If-Range: \(etag)"])
                    #expect(ifRange.status == 206 && ifRange.body == Array(whole.body[4...11]), "\(media): If-Range with the strong ETag")
                    let weakIfRange = try await Curl.fetch(media.url, ["-r", "4-11", "-H", "If-Range: W/\(etag)"])
                    #expect(weakIfRange.status == 200 && weakIfRange.body == whole.body, "\(media): a weak If-Range never matches")
                    let notModified = try await Curl.fetch(media.url, ["-H", "If-None-Match: \(etag)"])
                    #expect(notModified.status == 304 && notModified.body.isEmpty, "\(media): \(notModified.status)")
                    let changed = try await Curl.fetch(media.url, ["-H", "If-None-Match: \"sha256-0\""])
                    #expect(changed.status == 200 && changed.body == whole.body, "\(media)")
                    for answer in [head, range, ifRange, weakIfRange, notModified, changed] {
                        // The whole representation's digest, whatever part of it (or none) was sent.
                        #expect(try Self.digest(answer, media) == digest, "\(media): \(answer.status)")
                        #expect(answer.header("ETag") == etag, "\(media): \(answer.status)")
                    }
                }
            }
        }
    }

    @Test("a body corrupted, cut short or paced by a fault keeps the Repr-Digest and ETag it should have had, so a client can tell")
    func faultsKeepTheHeaders() async throws {
        try await withTemporaryDirectory { directory in
            try await Self.withServer(directory: directory) { server in
                for media in try await Self.media(server) {
                    let clean = try await Curl.fetch(media.url)
                    let digest = try Self.digest(clean, media)
                    let path = URLToken.path(ofURL: media.url)
                    let rule = #"{"path":"\#(path)","corrupt_bytes":1,"times":1}"#
                    let added = try await FaultLiveTests.admin(server, "POST", "/_admin/v1/faults", rule)
                    try #require(added.status == 201, "\(media): \(added.text)")
                    let corrupted = try await Curl.fetch(media.url)
                    #expect(corrupted.status == 200 && corrupted.body.count == clean.body.count, "\(media)")
                    #expect(corrupted.body != clean.body, "\(media): the fault changed the body")
                    #expect(try Self.digest(corrupted, media) == digest, "\(media): the header says what the body should be")
                    #expect(ReprDigest(of: corrupted.body) != digest, "\(media): the body's digest tells the fault")
                    #expect(corrupted.header("ETag") == clean.header("ETag"), "\(media)")
                }

                // Cut short and paced: the same headers, announced before the body goes wrong.
                let segment = try #require(try await Self.media(server).first { $0.kind == "AES-128 segment" })
                let clean = try await Curl.fetch(segment.url)
                let rules = #"""
                    [{"id":"cut","route":"segment","cut_after_bytes":1000,"times":1},
                     {"id":"thin","route":"segment","bytes_per_second":5000000,"times":1}]
                    """#
                #expect(try await FaultLiveTests.admin(server, "POST", "/_admin/v1/faults", rules).status == 201)
                let cut = try await Curl.fetch(segment.url)
                #expect(cut.exitCode == 18 && cut.body == Array(clean.body.prefix(1000)), "cut after 1000 B: \(cut.exitCode)")
                let thin = try await Curl.fetch(segment.url)
                #expect(thin.exitCode == 0 && thin.body == clean.body)
                for answer in [cut, thin] {
                    #expect(answer.header("Repr-Digest") == clean.header("Repr-Digest"))
                    #expect(answer.header("ETag") == clean.header("ETag"))
                }
                #expect(ReprDigest(of: cut.body) != (try Self.digest(cut, segment)))
            }
        }
    }

    @Test("after a restart on the same data directory every media body has the same Repr-Digest and ETag; the encrypted cache is reused, not made again")
    func sameAfterRestart() async throws {
        try await withTemporaryDirectory { directory in
            // Playlists are left out: they name the server's port, which a restart changes.
            func headers(_ server: MockBackendServer) async throws -> [String: String] {
                var seen: [String: String] = [:]
                for media in try await Self.media(server) where !media.kind.hasSuffix("playlist") {
                    let answer = try await Curl.fetch(media.url)
                    #expect(try Self.digest(answer, media) == ReprDigest(of: answer.body), "\(media)")
                    seen[media.kind] = "\(answer.header("Repr-Digest") ?? "none") \(answer.header("ETag") ?? "none")"
                }
                return seen
            }
            // Every cached file with its inode: a file made again is a new inode (written, then renamed).
            func cacheFiles() throws -> [String: Int] {
                let cache = directory.appendingPathComponent("cache")
                var files: [String: Int] = [:]
                for path in try FileManager.default.subpathsOfDirectory(atPath: cache.path) where path.hasSuffix(".ts") {
                    let attributes = try FileManager.default.attributesOfItem(atPath: cache.appendingPathComponent(path).path)
                    files[path] = (attributes[.systemFileNumber] as? NSNumber)?.intValue
                }
                return files
            }

            var before: [String: String] = [:]
            try await Self.withServer(directory: directory) { server in before = try await headers(server) }
            let cachedBefore = try cacheFiles()
            #expect(cachedBefore.count == 2, "the AES-128 and SAMPLE-AES segments: \(cachedBefore.keys.sorted())")
            var after: [String: String] = [:]
            try await Self.withServer(directory: directory) { server in after = try await headers(server) }
            #expect(before.count == 8)
            #expect(after == before)
            #expect(try cacheFiles() == cachedBefore, "served from the files the first run wrote")
        }
    }
}

@Suite("File digests: each fixture file hashed once")
struct FileDigestTests {
    @Test("a file's digest is its SHA-256, computed on first use and kept; a file that cannot be read throws, and is tried again")
    func memoized() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("segment.ts")
            let digests = FileDigests()
            #expect(throws: (any Error).self) { try digests.digest(ofFile: file.path) }
            let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try Data(bytes).write(to: file)
            let first = try digests.digest(ofFile: file.path)
            #expect(first == ReprDigest(of: bytes))
            #expect(try FileDigests.compute(path: file.path) == first)
            // Kept: the file is not read again (fixture files never change while the server runs).
            try Data([1, 2, 3]).write(to: file)
            #expect(try digests.digest(ofFile: file.path) == first)
            #expect(try FileDigests.compute(path: file.path) == ReprDigest(of: [1, 2, 3] as [UInt8]))
        }
    }

    @Test("parallel first uses of one file agree")
    func parallel() async throws {
        try await withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("poster.jpg")
            let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try Data(bytes).write(to: file)
            let digests = FileDigests()
            let results = try await withThrowingTaskGroup(of: ReprDigest.self) { group in
                for _ in 0..<8 { group.addTask { try digests.digest(ofFile: file.path) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results) == [ReprDigest(of: bytes)])
        }
    }
}
