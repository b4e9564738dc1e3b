import Foundation
import LicenseProtocol
import Testing
import TestKit
import WireModels
import _CryptoExtras

/// Two `mock-backend` processes (the built executable) on one PostgreSQL database, behind
/// Debian's nginx as a round-robin load balancer: what a team's shared mock looks like.
final class BalancedCluster: Sendable {
    /// The balancer's base URL: the one every URL the instances hand out names.
    let balancer: String
    /// Each instance's own base URL (its bound port), and its process.
    let instances: [(base: String, process: RunningProcess)]
    let nginx: RunningProcess
    let folder: TemporaryDirectory
    static let adminToken = "balanced-cluster-admin-token"

    /// The executable `swift build --build-tests` makes beside the tests.
    static var executable: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/mock-backend").path
    }

    private init(balancer: String, instances: [(base: String, process: RunningProcess)], nginx: RunningProcess, folder: TemporaryDirectory) {
        self.balancer = balancer
        self.instances = instances
        self.nginx = nginx
        self.folder = folder
    }

    static func start(count: Int = 2) async throws -> BalancedCluster {
        let database = try await TestPostgres.shared().makeDatabase()
        let folder = try TemporaryDirectory()
        let port = try freePort()
        let balancer = "http://127.0.0.1:\(port)"
        var instances: [(base: String, process: RunningProcess)] = []
        for n in 0..<count {
            let directory = folder.url.appendingPathComponent("instance-\(n)")
            let ready = directory.appendingPathComponent("ready.json")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let process = try RunningProcess(executable, [
                "--port", "0", "--data-dir", directory.path, "--database", database, "--public-base-url", balancer,
                "--admin-token", adminToken, "--ready-file", ready.path, "--log-level", "warning", "--threads", "4",
            ])
            guard try await eventually(timeout: .seconds(120), { FileManager.default.fileExists(atPath: ready.path) }) else {
                throw TestPostgresError("instance \(n) did not start: \(process.waitBlocking().stderrText)")
            }
            let info = try JSONSerialization.jsonObject(with: Data(contentsOf: ready)) as? [String: Any]
            let boundPort = try #require(info?["port"] as? Int)
            instances.append(("http://127.0.0.1:\(boundPort)", process))
        }
        // Round robin (nginx's default); a refused connection goes on to the next instance and the
        // dead one is left out for a while; answers stream through unbuffered (no temp files).
        let servers = instances.map { "server \($0.base.dropFirst("http://".count)) max_fails=1 fail_timeout=60s;" }.joined(separator: "\n        ")
        let configuration = """
            worker_processes 1;
            pid \(folder.url.path)/nginx.pid;
            error_log \(folder.url.path)/nginx-error.log warn;
            events { worker_connections 256; }
            http {
                access_log off;
                client_body_temp_path \(folder.url.path)/client-body;
                proxy_temp_path \(folder.url.path)/proxy;
                fastcgi_temp_path \(folder.url.path)/fastcgi;
                uwsgi_temp_path \(folder.url.path)/uwsgi;
                scgi_temp_path \(folder.url.path)/scgi;
                upstream mock_backends {
                    \(servers)
                    keepalive 8;
                }
                server {
                    listen 127.0.0.1:\(port);
                    location / {
                        proxy_pass http://mock_backends;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_buffering off;
                        proxy_next_upstream error timeout http_502;
                    }
                }
            }
            """
        let file = folder.url.appendingPathComponent("nginx.conf")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        let nginx = try RunningProcess("/usr/sbin/nginx", ["-p", folder.url.path, "-c", file.path, "-g", "daemon off;"])
        let cluster = BalancedCluster(balancer: balancer, instances: instances, nginx: nginx, folder: folder)
        guard try await eventually(timeout: .seconds(120), { try await Curl.fetch("\(balancer)/readyz").status == 200 }) else {
            cluster.stop()
            throw TestPostgresError("nginx did not start: \((try? String(contentsOf: folder.url.appendingPathComponent("nginx-error.log"), encoding: .utf8)) ?? "")")
        }
        return cluster
    }

    func stop() {
        nginx.kill(SIGQUIT)
        for instance in instances { instance.process.kill(SIGTERM) }
        _ = nginx.waitBlocking()
        for instance in instances { _ = instance.process.waitBlocking() }
        folder.remove()
    }

    /// Requests an instance has answered (its own request log, through the admin API).
    func answered(by instance: Int) async throws -> Int {
        let response = try await Curl.fetch("\(instances[instance].base)/_admin/v1/requests?limit=1000",
                                            ["-H", "Authorization: Bearer \(Self.adminToken)"])
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (object?["requests"] as? [Any])?.count ?? 0
    }
}

func withCluster(_ body: (BalancedCluster) async throws -> Void) async throws {
    let cluster = try await BalancedCluster.start()
    defer { cluster.stop() }
    try await body(cluster)
}

@Suite("Two instances on one PostgreSQL behind nginx", .serialized)
struct BalancerLiveTests {
    static func video(_ base: String, _ id: String) async throws -> Video {
        let response = try await Curl.fetch("\(base)/playback/v1/accounts/\(Fixture.northwind)/videos/\(id)",
                                            ["-H", "BCOV-Policy: \(Fixture.northwindSearchKey)"])
        try #require(response.status == 200, "\(response.status) \(response.text)")
        return try WireJSON.decoder().decode(Video.self, from: Data(response.body))
    }

    static func resolve(_ uri: String, against url: String) -> String {
        uri.contains("://") ? uri : String(url[..<(url.lastIndex(of: "/") ?? url.endIndex)]) + "/" + uri
    }

    /// The segment URLs of a video's first variant, fetched through `base`.
    static func segmentURLs(_ base: String, _ id: String) async throws -> [String] {
        let master = try #require(try await video(base, id).sources.first?.src)
        let masterText = try await Curl.fetch(master)
        try #require(masterText.status == 200, "master: \(masterText.status)")
        let variant = resolve(try #require(try MasterPlaylist(parsing: masterText.text).variants.first?.uri), against: master)
        let media = try await Curl.fetch(variant)
        try #require(media.status == 200, "media playlist: \(media.status)")
        return try MediaPlaylist(parsing: media.text).segments.map { resolve($0.uri, against: variant) }
    }

    static func post(_ url: String, _ body: [UInt8], headers: [String] = [], in folder: URL) async throws -> CurlResponse {
        let file = folder.appendingPathComponent("body-\(UUID().uuidString)")
        try Data(body).write(to: file)
        return try await Curl.fetch(url, ["-X", "POST", "-H", "Content-Type: application/json", "-H", "X-BOLT-OFFLINE-LICENSE: true",
                                          "-H", "X-BC-CRT-CONFIG: \(LicenseProfile(.purchase).headerValue)", "--data-binary", "@\(file.path)"]
                                         + headers.flatMap { ["-H", $0] })
    }

    /// `url` (an instance-independent URL naming the balancer) sent to instance `base` instead.
    static func direct(_ url: String, to base: String, balancer: String) -> String {
        base + url.dropFirst(balancer.count)
    }

    @Test("through the balancer: an HLS download and a FairPlay license; the SPC replayed to the other instance and a raced last device slot are refused")
    func downloadAndLicenseThroughTheBalancer() async throws {
        try await withCluster { cluster in
            // The AES-128 video, every segment of its first variant through the balancer, each byte-equal to what
            // instance 1 serves for the same URL: any instance serves any URL another handed out.
            let segments = try await Self.segmentURLs(cluster.balancer, Fixture.aesVideo)
            try #require(!segments.isEmpty)
            for url in segments {
                let through = try await Curl.fetch(url)
                #expect(through.status == 200, "\(url): \(through.status)")
                let direct = try await Curl.fetch(Self.direct(url, to: cluster.instances[1].base, balancer: cluster.balancer))
                #expect(direct.status == 200)
                #expect(through.body == direct.body, "\(url) differs between instances")
            }
            #expect(try await cluster.answered(by: 0) > 0)
            #expect(try await cluster.answered(by: 1) > 0)

            // A FairPlay license through the balancer.
            let fairPlay = try #require(try await Self.video(cluster.balancer, Fixture.fairPlayVideo).sources.first?.fairPlay)
            let certificate = try ApplicationCertificate(derEncoded: try await Curl.fetch(try #require(fairPlay.certificateURL)).body)
            let keyRequestURL = try #require(fairPlay.keyRequestURL)
            let keyID = try #require(pathSegments(ofURL: keyRequestURL).last)
            let request = try LicenseClient.makeRequest(.acquire, certificate: certificate, accountID: Fixture.northwind,
                                                        contentKeyID: keyID, deviceID: "balanced-device")
            let answer = try await Self.post(keyRequestURL, request.body(), in: cluster.folder.url)
            try #require(answer.status == 200, "\(answer.text)")
            #expect(try request.open(answer.body).terms.deviceID == "balanced-device")
            // The same SPC replayed to each instance directly: refused by both, whichever took the first.
            for instance in cluster.instances {
                let replay = try await Self.post(Self.direct(keyRequestURL, to: instance.base, balancer: cluster.balancer), request.body(),
                                                 in: cluster.folder.url)
                #expect(replay.status == 403)
                #expect(try replay.apiErrors().first?.errorSubcode == "SPC_REPLAYED")
            }

            // Two instances racing for a user's last device slot: one license, one refusal.
            let register = try await Curl.fetch("\(cluster.balancer)/_admin/v1/accounts/\(Fixture.northwind)/playback-keys", [
                "-X", "POST", "-H", "Authorization: Bearer \(BalancedCluster.adminToken)", "-H", "Content-Type: application/json",
                "--data-binary", String(decoding: try JSONSerialization.data(withJSONObject: ["id": TestKeys.kid, "public_key": TestKeys.rsa.publicKey.pemRepresentation]), as: UTF8.self),
            ])
            #expect(register.status == 201, "\(register.text)")
            let token = TestKeys.jwt(#"{"accid":"\#(Fixture.northwind)","uid":"racer","dlimit":1,"exp":\#(Int(Date().timeIntervalSince1970) + 3600)}"#)
            let racers = try (0..<2).map { n in
                try LicenseClient.makeRequest(.acquire, certificate: certificate, accountID: Fixture.northwind, contentKeyID: keyID, deviceID: "racer-\(n)")
            }
            let folder = cluster.folder.url
            let results = try await withThrowingTaskGroup(of: CurlResponse.self) { group in
                for (n, racer) in racers.enumerated() {
                    let url = Self.direct(keyRequestURL, to: cluster.instances[n].base, balancer: cluster.balancer)
                    group.addTask { try await Self.post(url, racer.body(), headers: ["BCOV-Auth: \(token)"], in: folder) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.map(\.status).sorted() == [200, 403], "\(results.map(\.text))")
            #expect(try results.first { $0.status == 403 }?.apiErrors().first?.errorSubcode == "DENIED_BY_DEVICE_LIMITING")
        }
    }

    @Test("killing one instance in the middle of a download loses nothing: the balancer sends the rest to the other, and its licenses stay")
    func killingAnInstanceLosesNothing() async throws {
        try await withCluster { cluster in
            let fairPlay = try #require(try await Self.video(cluster.balancer, Fixture.fairPlayVideo).sources.first?.fairPlay)
            let certificate = try ApplicationCertificate(derEncoded: try await Curl.fetch(try #require(fairPlay.certificateURL)).body)
            let keyRequestURL = try #require(fairPlay.keyRequestURL)
            // A license issued by instance 0 before it dies.
            let request = try LicenseClient.makeRequest(.acquire, certificate: certificate, accountID: Fixture.northwind,
                                                        contentKeyID: try #require(pathSegments(ofURL: keyRequestURL).last), deviceID: "survivor")
            let issued = try await Self.post(Self.direct(keyRequestURL, to: cluster.instances[0].base, balancer: cluster.balancer),
                                             request.body(), in: cluster.folder.url)
            try #require(issued.status == 200, "\(issued.text)")
            let licenseID = try request.open(issued.body).terms.licenseID

            let segments = Array(try await Self.segmentURLs(cluster.balancer, Fixture.marathonVideo).prefix(40))
            try #require(segments.count == 40)
            // Four transfers at a time, as a download engine runs them; instance 0 is killed once half
            // are done, with others in flight. A transfer cut by the dying instance is asked again.
            var bodies = [[UInt8]](repeating: [], count: segments.count)
            var done = 0
            try await withThrowingTaskGroup(of: (Int, CurlResponse).self) { group in
                var next = 0
                func startNext() {
                    guard next < segments.count else { return }
                    let (index, url) = (next, segments[next])
                    next += 1
                    group.addTask { (index, try await Curl.fetch(url, ["--retry", "5", "--retry-all-errors", "--retry-delay", "0"])) }
                }
                for _ in 0..<4 { startNext() }
                while let (index, response) = try await group.next() {
                    #expect(response.status == 200, "segment \(index): \(response.status) \(response.stderr)")
                    bodies[index] = response.body
                    done += 1
                    if done == segments.count / 2 { cluster.instances[0].process.kill(SIGKILL) }
                    startNext()
                }
            }
            #expect(done == segments.count)
            #expect(await cluster.instances[0].process.wait().exitCode == 128 + SIGKILL)
            for (url, body) in zip(segments, bodies) {
                let direct = try await Curl.fetch(Self.direct(url, to: cluster.instances[1].base, balancer: cluster.balancer))
                #expect(direct.body == body, "\(url)")
            }
            // What instance 0 stored is there through the survivor.
            let license = try await Curl.fetch("\(cluster.balancer)/_admin/v1/licenses/\(licenseID)",
                                               ["-H", "Authorization: Bearer \(BalancedCluster.adminToken)"])
            #expect(license.status == 200, "\(license.text)")
            #expect(try await Curl.fetch("\(cluster.balancer)/readyz").status == 200)
        }
    }
}
