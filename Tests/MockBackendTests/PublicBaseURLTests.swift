import Foundation
import MicroHTTP
@testable import MockBackend
import TestKit
import Testing
import WireModels

/// `--public-base-url` over HTTPS and default ports (issue 26): every answer's URLs start with
/// the configured base, whichever listener it came in on.
@Suite("Public base URL: one base for every listener, no default ports")
struct PublicBaseURLTests {
    @Test("bases are normalised: no :80 on http, no :443 on https, no trailing slash, lower-case scheme and host", arguments: [
        ("https://Videos.Example.COM:443/", "https://videos.example.com"),
        ("http://videos.example.com:80", "http://videos.example.com"),
        ("HTTP://videos.example.com:443", "http://videos.example.com:443"),
        ("https://videos.example.com:80", "https://videos.example.com:80"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
        ("https://[::1]:443", "https://[::1]"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("https://videos.example.com:443/mock//", "https://videos.example.com/mock"),
        ("https://videos.example.com/Mock", "https://videos.example.com/Mock"),
    ])
    func normalised(given: String, expected: String) {
        #expect(PublicBaseURL.normalized(given) == expected)
    }

    @Test("a listener's own base names its port unless it is the scheme's default; a wildcard bind answers with loopback")
    func listenerBase() {
        #expect(PublicBaseURL.base(configured: nil, secure: true, host: "127.0.0.1", port: 443) == "https://127.0.0.1")
        #expect(PublicBaseURL.base(configured: nil, secure: false, host: "127.0.0.1", port: 80) == "http://127.0.0.1")
        #expect(PublicBaseURL.base(configured: nil, secure: true, host: "0.0.0.0", port: 8443) == "https://127.0.0.1:8443")
        #expect(PublicBaseURL.base(configured: nil, secure: false, host: "::1", port: 8080) == "http://[::1]:8080")
        #expect(PublicBaseURL.base(configured: "https://cdn.example:443", secure: false, host: "127.0.0.1", port: 8080) == "https://cdn.example")
    }

    static let videoPath = "/playback/v1/accounts/\(Fixture.northwind)/videos/\(Fixture.fairPlayVideo)"
    static let key = ["-H", "BCOV-Policy: \(Fixture.northwindSearchKey)"]

    /// Every URL in a video and in its master playlist, fetched from `origin` (the listener)
    /// with `options`, starts with `base`.
    static func expectURLs(from origin: String, base: String, _ options: [String]) async throws {
        let answer = try await Curl.fetch(origin + videoPath, key + options)
        try #require(answer.status == 200, "\(answer.stderr) \(answer.text)")
        let video = try WireJSON.decoder().decode(Video.self, from: Data(answer.body))
        let fairPlay = try #require(video.sources.first?.keySystems?[KeySystem.fairPlay])
        let urls = [video.poster, video.thumbnail, video.sources.first?.src, fairPlay.keyRequestURL, fairPlay.certificateURL]
            + video.textTracks.map(\.src)
        for url in urls { #expect(url?.hasPrefix(base + "/") == true, "\(url ?? "nil")") }
        #expect(!answer.text.contains("127.0.0.1") && !answer.text.contains(":443"))
        // The master playlist, asked of the listener itself, names media playlists on the base too.
        let src = try #require(video.sources.first?.src)
        let master = try await Curl.fetch(origin + src.dropFirst(base.count), options)
        #expect(master.status == 200, "\(master.text)")
        let uris = master.text.split(separator: "\n").filter { $0.hasPrefix("http") || $0.contains("URI=\"http") }
        #expect(!uris.isEmpty)
        for line in uris { #expect(line.contains(base + "/manifest/") && !line.contains("127.0.0.1"), "\(line)") }
    }

    @Test("--tls with --public-base-url: answers carry the configured base (its :443 left out), not https://127.0.0.1:PORT")
    func tlsOnePort() async throws {
        try await withLiveServer({ configuration in
            configuration.tls = TLSSettings()
            configuration.publicBaseURL = "https://Videos.Example.com:443/"
        }) { server in
            let caFile = try #require(server.caFile)
            #expect(server.baseURL == "https://videos.example.com")
            #expect(server.baseURLs == ["https://videos.example.com"] && server.secureBaseURL == "https://videos.example.com")
            try await Self.expectURLs(from: "https://127.0.0.1:\(server.port)", base: "https://videos.example.com", ["--cacert", caFile.path])
        }
    }

    @Test("--tls-port with --public-base-url: the HTTPS listener's answers and the plain one's carry the configured base")
    func tlsSecondPort() async throws {
        try await withLiveServer({ configuration in
            configuration.tls = TLSSettings(port: 0)
            configuration.publicBaseURL = "https://videos.example.com"
        }) { server in
            let caFile = try #require(server.caFile)
            let securePort = try #require(server.securePort)
            #expect(server.baseURLs == ["https://videos.example.com"] && server.secureBaseURL == "https://videos.example.com")
            try await Self.expectURLs(from: "https://127.0.0.1:\(securePort)", base: "https://videos.example.com", ["--cacert", caFile.path])
            try await Self.expectURLs(from: "http://127.0.0.1:\(server.port)", base: "https://videos.example.com", [])
        }
    }

    @Test("plain HTTP with --public-base-url http://…:80: the base without :80")
    func plainDefaultPort() async throws {
        try await withLiveServer({ $0.publicBaseURL = "http://videos.example.com:80" }) { server in
            #expect(server.baseURL == "http://videos.example.com" && server.secureBaseURL == nil)
            try await Self.expectURLs(from: "http://127.0.0.1:\(server.port)", base: "http://videos.example.com", [])
        }
    }

    @Test("the mock-backend command: --public-base-url with --tls, and with --tls-port, is what the ready file names and the answers carry",
          arguments: [["--tls"], ["--tls-port", "0"]])
    func command(tlsArguments: [String]) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let ready = directory.url.appendingPathComponent("ready.json")
        let process = try RunningProcess(BalancedCluster.executable, ["--port", "0", "--data-dir", directory.url.path,
                                                                      "--public-base-url", "https://Videos.Example.com:443/",
                                                                      "--ready-file", ready.path, "--log-level", "warning"] + tlsArguments)
        defer { process.kill() }
        // The ready file is written once it listens (after its lines on stdout); it exits on a refusal.
        let started = try await process.waitForOutput { _ in FileManager.default.fileExists(atPath: ready.path) }
        try #require(started, "\(process.stdoutSoFar)")
        let info = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: ready)) as? [String: Any])
        #expect(info["base_url"] as? String == "https://videos.example.com")
        #expect(info["https_base_url"] as? String == "https://videos.example.com")
        let caFile = try #require(info["ca_file"] as? String)
        let httpsPort = try #require(info["https_port"] as? Int)
        try await Self.expectURLs(from: "https://127.0.0.1:\(httpsPort)", base: "https://videos.example.com", ["--cacert", caFile])
    }
}
