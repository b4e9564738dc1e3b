import Foundation
import MicroHTTP
import MockBackend
import TestKit
import Testing
import WireModels

/// HTTPS through libmicrohttpd's GnuTLS, with the local CA the data directory keeps, checked
/// with the real curl, openssl and ffprobe.
@Suite("HTTPS: the local CA, two listeners, real clients")
struct TLSTests {
    static func start(_ directory: URL, _ configure: (inout BackendConfiguration) -> Void) throws -> MockBackendServer {
        var configuration = BackendConfiguration(dataDirectory: directory)
        configuration.port = 0
        configure(&configuration)
        return try MockBackendServer.start(configuration: configuration, logger: quietLogger)
    }

    static func text(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }

    @Test("HTTP and HTTPS on two ports: each answer carries its own scheme's URLs; curl trusts HTTPS only with the CA file")
    func twoListeners() async throws {
        try await withTemporaryDirectory { directory in
            let server = try Self.start(directory) { $0.tls = TLSSettings(port: 0) }
            defer { server.shutdown(gracePeriod: .zero) }
            let caFile = try #require(server.caFile)
            let securePort = try #require(server.securePort)
            #expect(server.baseURLs == ["http://127.0.0.1:\(server.port)", "https://127.0.0.1:\(securePort)"])
            let path = "/playback/v1/accounts/\(Fixture.northwind)/videos/\(Fixture.fairPlayVideo)"
            let key = ["-H", "BCOV-Policy: \(Fixture.northwindSearchKey)"]

            let secure = try await Curl.fetch("https://127.0.0.1:\(securePort)\(path)", key + ["--cacert", caFile.path])
            #expect(secure.exitCode == 0 && secure.status == 200, "\(secure.stderr)")
            let video = try WireJSON.decoder().decode(Video.self, from: Data(secure.body))
            let fairPlay = try #require(video.sources.first?.keySystems?[KeySystem.fairPlay])
            for url in [video.poster, video.sources.first?.src, fairPlay.keyRequestURL, fairPlay.certificateURL] {
                #expect(url?.hasPrefix("https://127.0.0.1:\(securePort)/") == true, "\(url ?? "nil")")
            }
            // The master playlist fetched over HTTPS names HTTPS media playlists.
            let master = try await Curl.fetch(try #require(video.sources.first?.src), ["--cacert", caFile.path])
            #expect(master.status == 200 && master.text.contains("https://127.0.0.1:\(securePort)/manifest/"), "\(master.text)")
            #expect(!master.text.contains("http://"))

            let plain = try await Curl.fetch("\(server.baseURL)\(path)", key)
            #expect(plain.status == 200 && plain.text.contains("\"http://127.0.0.1:\(server.port)/") && !plain.text.contains("https://"))

            // Without the CA, curl refuses the certificate (exit 60), and the request never reaches a handler.
            let untrusted = try await Curl.fetch("https://127.0.0.1:\(securePort)\(path)", key)
            #expect(untrusted.exitCode == 60, "\(untrusted.stderr)")
            // Plain HTTP to the HTTPS port is no answer at all.
            let mixed = try await Curl.fetch("http://127.0.0.1:\(securePort)\(path)", key)
            #expect(mixed.status != 200)
        }
    }

    @Test("the CA and the server certificate: openssl verifies them; kept and reused; a new name reissues from the same CA")
    func localCA() async throws {
        try await withTemporaryDirectory { directory in
            let tls = directory.appendingPathComponent("tls")
            let first = try Self.start(directory) { $0.tls = TLSSettings() }
            #expect(first.baseURL == "https://127.0.0.1:\(first.port)" && first.securePort == first.port)
            await first.shutdown(gracePeriod: .zero)
            let ca = try Self.text(tls.appendingPathComponent("ca.pem"))
            let leaf = try Self.text(tls.appendingPathComponent("server.pem"))
            let verify = try await Run.process("/usr/bin/openssl", ["verify", "-CAfile", tls.appendingPathComponent("ca.pem").path,
                                                                     tls.appendingPathComponent("server.pem").path])
            #expect(verify.exitCode == 0, "\(verify.stdoutText) \(verify.stderrText)")
            let shown = try await Run.process("/usr/bin/openssl", ["x509", "-noout", "-text", "-in", tls.appendingPathComponent("server.pem").path])
            for expected in ["DNS:localhost", "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1", "TLS Web Server Authentication", "CA:FALSE"] {
                #expect(shown.stdoutText.contains(expected), "\(expected) missing")
            }
            let caShown = try await Run.process("/usr/bin/openssl", ["x509", "-noout", "-text", "-in", tls.appendingPathComponent("ca.pem").path])
            #expect(caShown.stdoutText.contains("CA:TRUE"))
            let keyMode = try FileManager.default.attributesOfItem(atPath: tls.appendingPathComponent("server-key.pem").path)[.posixPermissions] as? Int
            #expect(keyMode == 0o600)

            // A restart keeps both.
            let second = try Self.start(directory) { $0.tls = TLSSettings() }
            await second.shutdown(gracePeriod: .zero)
            #expect(try Self.text(tls.appendingPathComponent("ca.pem")) == ca)
            #expect(try Self.text(tls.appendingPathComponent("server.pem")) == leaf)

            // A name the certificate lacks: a new one from the same CA, and curl reaches the server by that name.
            let third = try Self.start(directory) { $0.tls = TLSSettings(); $0.tls?.extraNames = ["media.test"] }
            defer { third.shutdown(gracePeriod: .zero) }
            #expect(try Self.text(tls.appendingPathComponent("ca.pem")) == ca)
            #expect(try Self.text(tls.appendingPathComponent("server.pem")) != leaf)
            let byName = try await Curl.fetch("https://media.test:\(third.port)/_admin/v1/health", [
                "--cacert", tls.appendingPathComponent("ca.pem").path, "--resolve", "media.test:\(third.port):127.0.0.1",
                "-H", "Authorization: Bearer \(third.app.adminToken)",
            ])
            #expect(byName.exitCode == 0 && byName.status == 200, "\(byName.stderr)")
        }
    }

    @Test("a certificate and key given on the command line are served as they are; a mismatched pair is refused at start")
    func givenCertificate() async throws {
        try await withTemporaryDirectory { directory in
            let key = directory.appendingPathComponent("key.pem")
            let certificate = directory.appendingPathComponent("cert.pem")
            let made = try await Run.process("/usr/bin/openssl", [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout", key.path, "-out", certificate.path,
            ])
            try #require(made.exitCode == 0, "\(made.stderrText)")
            let server = try Self.start(directory.appendingPathComponent("data")) {
                $0.tls = TLSSettings()
                $0.tls?.certificateFile = certificate
                $0.tls?.privateKeyFile = key
            }
            #expect(server.caFile == nil)
            let answer = try await Curl.fetch("https://127.0.0.1:\(server.port)/_admin/v1/health",
                                              ["--cacert", certificate.path, "-H", "Authorization: Bearer \(server.app.adminToken)"])
            await server.shutdown(gracePeriod: .zero)
            #expect(answer.status == 200, "\(answer.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("data/tls").path))

            // Another key than the certificate's: GnuTLS refuses the pair, and start says so.
            let otherKey = directory.appendingPathComponent("other.pem")
            _ = try await Run.process("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", otherKey.path])
            #expect {
                try Self.start(directory.appendingPathComponent("data2")) {
                    $0.tls = TLSSettings()
                    $0.tls?.certificateFile = certificate
                    $0.tls?.privateKeyFile = otherKey
                }
            } throws: { "\($0)".contains("GnuTLS refused the key or certificate") }
        }
    }

    /// `openssl s_client` to `port` with `options`: whether the handshake succeeded, and what it printed.
    static func handshake(_ port: Int, caFile: URL, _ options: [String]) async throws -> (connected: Bool, output: String) {
        // At security level 0 OpenSSL's client still offers TLS 1.0 and 1.1 and SHA-1: a refusal is the server's.
        let result = try await Run.process("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", caFile.path,
                                                                "-verify_return_error"] + options)
        let output = result.stdoutText + result.stderrText
        return (result.exitCode == 0 && !output.contains("Cipher is (NONE)"), output)
    }

    @Test("TLS 1.2 and 1.3 only (openssl s_client -tls1 and -tls1_1 refused), AEAD suites only, in the server's order; no HSTS")
    func protocolVersions() async throws {
        try await withTemporaryDirectory { directory in
            let server = try Self.start(directory) { $0.tls = TLSSettings() }
            defer { server.shutdown(gracePeriod: .zero) }
            let caFile = try #require(server.caFile)
            for old in ["-tls1", "-tls1_1"] {
                let refused = try await Self.handshake(server.port, caFile: caFile, [old, "-cipher", "DEFAULT@SECLEVEL=0"])
                #expect(!refused.connected, "\(old) accepted: \(refused.output)")
            }
            let tls12 = try await Self.handshake(server.port, caFile: caFile, ["-tls1_2"])
            #expect(tls12.connected && tls12.output.contains("New, TLSv1.2, Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"), "\(tls12.output)")
            let tls13 = try await Self.handshake(server.port, caFile: caFile, ["-tls1_3"])
            #expect(tls13.connected && tls13.output.contains("New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256"), "\(tls13.output)")

            // CBC suites (with SHA-1 or SHA-256 MACs) are not offered at all.
            let cbc = try await Self.handshake(server.port, caFile: caFile, ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384@SECLEVEL=0"])
            #expect(!cbc.connected, "\(cbc.output)")
            // The server's order wins over the client's (ChaCha20 preferred by the client, AES-128-GCM chosen).
            let ordered12 = try await Self.handshake(server.port, caFile: caFile, [
                "-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256",
            ])
            #expect(ordered12.output.contains("Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"), "\(ordered12.output)")
            let ordered13 = try await Self.handshake(server.port, caFile: caFile, [
                "-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256",
            ])
            #expect(ordered13.output.contains("Cipher is TLS_AES_128_GCM_SHA256"), "\(ordered13.output)")

            // curl limited to TLS 1.1 is refused; curl at 1.2 is answered, without Strict-Transport-Security (docs/running-the-mock.md: HTTPS).
            let capped = try await Curl.fetch("\(server.baseURL)/healthz", ["--cacert", caFile.path, "--tlsv1.0", "--tls-max", "1.1", "--ciphers", "DEFAULT@SECLEVEL=0"])
            #expect(capped.exitCode != 0 && capped.status != 200, "\(capped.stderr)")
            let answered = try await Curl.fetch("\(server.baseURL)/healthz", ["--cacert", caFile.path, "--tlsv1.2", "--tls-max", "1.2"])
            #expect(answered.status == 200, "\(answered.stderr)")
            #expect(answered.header("Strict-Transport-Security") == nil)
        }
    }

    @Test("the TLS profile is Mozilla's intermediate in GnuTLS terms: gnutls-cli lists TLS 1.2 and 1.3 and nine AEAD suites, ECDHE only")
    func priorityString() async throws {
        let listed = try await Run.process("/usr/bin/gnutls-cli", ["--priority", TLSCredentials.intermediatePriorities, "-l"])
        try #require(listed.exitCode == 0, "gnutls-cli (Debian's gnutls-bin) refused it: \(listed.stderrText)")
        let suites = listed.stdoutText.split(separator: "\n").filter { $0.hasPrefix("TLS_") }.map { String($0.split(separator: " ")[0].split(separator: "\t")[0]) }
        #expect(suites == ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
                           "TLS_ECDHE_ECDSA_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_CHACHA20_POLY1305",
                           "TLS_ECDHE_RSA_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_CHACHA20_POLY1305"], "\(listed.stdoutText)")
        #expect(listed.stdoutText.contains("Protocols: VERS-TLS1.3, VERS-TLS1.2\n"))
        // Below its first line (which repeats the string, "-SIGN-RSA-SHA1" and all): nothing with SHA-1 or CBC.
        let allowed = listed.stdoutText.split(separator: "\n").dropFirst().joined(separator: "\n")
        #expect(!allowed.contains("SHA1") && !allowed.contains("CBC") && allowed.contains("Key Exchange Algorithms: ECDHE-ECDSA, ECDHE-RSA\n"))
    }

    @Test("ffprobe plays a clear video's HLS over HTTPS, trusting the local CA")
    func ffprobeOverHTTPS() async throws {
        try await withTemporaryDirectory { directory in
            let server = try Self.start(directory) { $0.tls = TLSSettings() }
            defer { server.shutdown(gracePeriod: .zero) }
            let caFile = try #require(server.caFile)
            let video = try await Curl.fetch("\(server.baseURL)/playback/v1/accounts/\(Fixture.northwind)/videos/\(Fixture.clearVideo)",
                                             ["--cacert", caFile.path, "-H", "BCOV-Policy: \(Fixture.northwindSearchKey)"])
            let master = try #require(try WireJSON.decoder().decode(Video.self, from: Data(video.body)).sources.first?.src)
            #expect(master.hasPrefix("https://"))
            let probe = try await Run.process("/usr/bin/ffprobe", [
                "-v", "error", "-tls_verify", "1", "-ca_file", caFile.path, "-show_entries", "stream=codec_type", "-of", "csv=p=0", master,
            ])
            #expect(probe.exitCode == 0, "\(probe.stderrText)")
            #expect(probe.stdoutText.contains("video") && probe.stdoutText.contains("audio"), "\(probe.stdoutText)")
        }
    }
}
