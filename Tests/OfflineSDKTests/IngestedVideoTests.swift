import CurlTransfer
import Foundation
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// A developer's own video, end to end: made with ffmpeg, put in the mock through OAuth, the
/// CMS API and Dynamic Ingest (as a back-office tool would), then downloaded by the SDK and
/// played offline, on a clear and on a FairPlay account.
@Suite("An ingested video: downloaded by the SDK and played offline, live")
struct IngestedVideoTests {
    /// A back-office call over HTTP; the JSON answer.
    static func call(_ server: MockBackendServer, _ method: String, _ path: String, headers: [(String, String)],
                     json: String? = nil) async throws -> (status: Int, body: Any?) {
        let request = HTTPClientRequest(url: server.baseURL + path, method: .init(method),
                                        headers: headers + (json == nil ? [] : [("Content-Type", "application/json")]),
                                        body: json.map { Array($0.utf8) })
        let response = try await HTTPClient().send(request)
        return (response.status, try? JSONSerialization.jsonObject(with: Data(response.body)))
    }

    /// Ingests `source` as a new offline-enabled video of `account`, the way the README tells a
    /// developer to: a client credential (admin API), a token, a CMS video, an ingest request;
    /// returns the video id once the job has finished.
    static func ingest(_ server: MockBackendServer, account: String, source: URL) async throws -> String {
        let admin = [("Authorization", "Bearer \(server.app.adminToken)")]
        let client = try await call(server, "POST", "/_admin/v1/accounts/\(account)/client_credentials", headers: admin, json: #"{"name":"sdk tests"}"#)
        let credential = try #require(client.body as? [String: Any], "\(client)")
        let basic = Data("\(credential["client_id"] as? String ?? ""):\(credential["client_secret"] as? String ?? "")".utf8).base64EncodedString()
        let tokenRequest = HTTPClientRequest(url: server.baseURL + "/v4/access_token", method: .init("POST"),
                                             headers: [("Authorization", "Basic \(basic)"), ("Content-Type", "application/x-www-form-urlencoded")],
                                             body: Array("grant_type=client_credentials".utf8))
        let tokenBody = try JSONSerialization.jsonObject(with: Data(try await HTTPClient().send(tokenRequest).body)) as? [String: Any]
        let bearer = [("Authorization", "Bearer \(try #require(tokenBody?["access_token"] as? String))")]

        let created = try await call(server, "POST", "/v1/accounts/\(account)/videos", headers: bearer,
                                     json: #"{"name":"My trailer","offline_enabled":true}"#)
        #expect(created.status == 201, "\(created)")
        let videoID = try #require((created.body as? [String: Any])?["id"] as? String)
        let accepted = try await call(server, "POST", "/v1/accounts/\(account)/videos/\(videoID)/ingest-requests", headers: bearer,
                                      json: #"{"master":{"url":"file://\#(source.path)"},"profile":"mock-fast-static"}"#)
        #expect(accepted.status == 200, "\(accepted)")
        let jobID = try #require((accepted.body as? [String: Any])?["id"] as? String)
        var state = ""
        let ended = try await eventually {
            let job = try await call(server, "GET", "/v1/accounts/\(account)/videos/\(videoID)/ingest_jobs/\(jobID)", headers: bearer)
            state = (job.body as? [String: Any])?["state"] as? String ?? ""
            return state == "finished" || state == "failed"
        }
        try #require(ended && state == "finished", "the job ended \(state)")
        return videoID
    }

    @Test("made with ffmpeg, ingested through the back-office APIs, the video downloads (its top rendition, both audio languages) and plays offline from the loopback server: the source's picture within 30 dB PSNR and its length, on a clear and a FairPlay account",
          arguments: [(Catalog.contoso, Catalog.contosoKey), (Catalog.account, Catalog.playKey)])
    func ingestedVideoPlaysOffline(account: String, policyKey: String) async throws {
        let sources = try TemporaryDirectory()
        defer { sources.remove() }
        let source = sources.url.appendingPathComponent("trailer.mp4")
        try await IngestSource.make(source, seconds: 4)
        try await withBackend({ $0.ingestAllowedDirectories = [sources.url] }) { server in
            let videoID = try await Self.ingest(server, account: account, source: source)
            try await withHarness(server) { h in
                let service = PlaybackService(baseURL: server.baseURL, accountID: account, policyKey: policyKey)
                let video = try await service.findVideo(id: videoID)
                let token = try await h.manager.requestVideoDownload(video, mediaSelections: MediaSelections(audioLanguages: ["eng", "fra"]),
                                                                     parameters: DownloadParameters(requestedBitrate: 50_000_000,
                                                                                                    license: video.usesFairPlay ? .purchase : nil))
                #expect(try await h.events.finished(token) == nil)
                #expect(try await h.manager.status(token).downloadState == .completed)

                // Offline from here: the picture comes from the package, decrypted on the device.
                let playback = try await h.manager.openPlayback(token)
                let master = try playback.serve()
                let playlist = try MasterPlaylist(parsing: try await Curl.fetch(master.absoluteString).text)
                #expect(playlist.variants.compactMap(\.resolution?.width) == [640], "the top rendition: \(playlist.variants)")
                #expect(playlist.renditions.filter { $0.type == .audio }.compactMap(\.language).sorted() == ["eng", "fra"])
                let top = try #require(playlist.variants.first?.uri)
                let variant = URL(string: top, relativeTo: master)!.absoluteString
                let psnr = try await IngestSource.psnr(variant, against: source)
                #expect((psnr ?? 0) >= 30, "PSNR \(psnr ?? -1) dB")
                let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", variant])
                let duration = Double(probe.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                #expect(abs(duration - 4) < 0.3, "\(duration) s: \(probe.stderrText)")
                await playback.close()
                if account == Catalog.account {
                    #expect(try await h.manager.licenseInfo(token) != nil, "a FairPlay download holds its license")
                }
            }
        }
    }
}
