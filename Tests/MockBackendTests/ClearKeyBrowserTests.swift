import Foundation
import MicroHTTP
import MockBackend
import TestKit
import Testing
import WireModels

/// A DRM video's DASH stream played in headless Chromium through the browser's own Media
/// Source Extensions and Encrypted Media Extensions (`org.w3.clearkey`, its AES decryptor):
/// the page appends the MPD's init and media segments, answers the CDM's license request by
/// POSTing it to the MPD's ClearKey license URL, and plays to the end; with the license refused
/// the CDM waits for a key (`waitingforkey`) and nothing plays. Every wait is on a line the page
/// logs (Chromium's console on stderr), with a deadline only against a hang.
@Suite("ClearKey DASH in Chromium, live")
struct ClearKeyBrowserTests {
    /// The page: plays `config` (init and segment URLs per track, the license URL) and logs one `CLEARKEY-RESULT` line.
    static func page(_ config: String) -> String {
        """
        <!doctype html><meta charset="utf-8"><video></video><script>
        const cfg = \(config);
        const log = (...parts) => console.log("CLEARKEY-RESULT " + parts.join(" "));
        (async () => {
          try {
            const video = document.querySelector("video");
            const access = await navigator.requestMediaKeySystemAccess("org.w3.clearkey", [{
              initDataTypes: ["cenc"], videoCapabilities: [{contentType: cfg.video.type}], audioCapabilities: [{contentType: cfg.audio.type}]}]);
            const keys = await access.createMediaKeys();
            await video.setMediaKeys(keys);
            let licensed = 0, requested = 0;
            video.addEventListener("encrypted", async (event) => {
              const session = keys.createSession("temporary");
              session.addEventListener("message", async (message) => {
                requested++;
                const answer = await fetch(cfg.license, {method: "POST", body: message.message});
                if (!answer.ok) { console.log("license refused " + answer.status); return; }
                await session.update(await answer.arrayBuffer());
                licensed++;
              });
              await session.generateRequest(event.initDataType, event.initData);
            });
            video.addEventListener("waitingforkey", () => { if (!cfg.expectKey) log("waitingforkey", requested, licensed); });
            video.addEventListener("ended", () => {
              const quality = video.getVideoPlaybackQuality();
              log("ended", video.currentTime.toFixed(2), quality.totalVideoFrames, quality.droppedVideoFrames, licensed);
            });
            video.addEventListener("error", () => log("error", video.error && video.error.message));
            const source = new MediaSource();
            video.src = URL.createObjectURL(source);
            await new Promise((resolve) => source.addEventListener("sourceopen", resolve, {once: true}));
            const append = async (buffer, url) => {
              let response;
              try { response = await fetch(url); } catch (error) { throw new Error("cannot fetch " + url + ": " + error.message); }
              if (!response.ok) throw new Error(url + " answered " + response.status);
              const bytes = await response.arrayBuffer();
              await new Promise((resolve, reject) => {
                buffer.addEventListener("updateend", resolve, {once: true});
                buffer.addEventListener("error", reject, {once: true});
                buffer.appendBuffer(bytes);
              });
            };
            const feed = async (track) => {
              const buffer = source.addSourceBuffer(track.type);
              for (const url of [track.init, ...track.segments]) await append(buffer, url);
            };
            await Promise.all([feed(cfg.video), feed(cfg.audio)]);
            source.endOfStream();
            video.muted = true;
            video.playbackRate = 4;
            await video.play();
          } catch (error) {
            log("exception", error.name, error.message);
          }
        })();
        </script>
        """
    }

    /// The MPD's first video and audio representation as the page's config, with `licenseURL`.
    static func config(mpd: String, licenseURL: String, expectKey: Bool) throws -> String {
        let base = try #require(mpd.firstMatch(of: /<BaseURL>([^<]+)<\/BaseURL>/)?.1).replacingOccurrences(of: "&amp;", with: "&")
        let token = try #require(mpd.firstMatch(of: /media="\$RepresentationID\$\/\$Number\$\.m4s\?fastly_token=([^"]+)"/)?.1)
        let representations = mpd.matches(of: /<Representation id="([^"]+)" bandwidth="\d+" codecs="([^"]+)"/)
        let video = try #require(representations.first { $0.2.hasPrefix("avc1") })
        let audio = try #require(representations.first { $0.2.hasPrefix("mp4a") })
        func track(_ id: Substring, _ codecs: Substring, _ mime: String) -> [String: Any] {
            ["type": "\(mime); codecs=\"\(codecs)\"", "init": "\(base)\(id)/init.mp4?fastly_token=\(token)",
             "segments": (0 ..< 6).map { "\(base)\(id)/\($0).m4s?fastly_token=\(token)" }]
        }
        let object: [String: Any] = ["video": track(video.1, video.2, "video/mp4"), "audio": track(audio.1, audio.2, "audio/mp4"),
                                     "license": licenseURL, "expectKey": expectKey]
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    /// Opens `page` in headless Chromium and returns its `CLEARKEY-RESULT` line. The page comes
    /// from a server of its own on http://127.0.0.1 (a secure context with an origin of its own,
    /// which EME needs; a file:// page is refused), another origin than the mock's, as a web
    /// app's would be: everything it fetches from the mock goes through CORS.
    static func run(_ page: String) async throws -> String {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let body = Array(page.utf8)
        let pages = HTTPServer(configuration: configuration, logger: quietLogger) { request in
            request.path == "/player.html" ? HTTPResponse.bytes(body, contentType: "text/html; charset=utf-8") : HTTPResponse(status: 404)
        }
        try pages.start()
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let chromium = try RunningProcess("/bin/sh", ["-c", "exec chromium --headless=new --no-sandbox --disable-gpu --mute-audio "
            + "--autoplay-policy=no-user-gesture-required --enable-logging=stderr --v=0 --no-first-run "
            + "--user-data-dir='\(folder.url.appendingPathComponent("profile").path)' 'http://127.0.0.1:\(pages.port)/player.html' 2>&1"])
        let finished = try await chromium.waitForOutput(timeout: .seconds(180)) { $0.contains("CLEARKEY-RESULT") }
        let output = chromium.stdoutSoFar
        chromium.kill(SIGTERM)
        _ = await chromium.wait()
        await pages.shutdown(gracePeriod: .seconds(2))
        try #require(finished, "no result from the page: \(output.suffix(3000))")
        let line = try #require(output.split(separator: "\n").first { $0.contains("CLEARKEY-RESULT") })
        return String(try #require(line.firstMatch(of: /CLEARKEY-RESULT ([^"]*)/)?.1))
    }

    @Test("Chromium's ClearKey CDM plays the DRM video's DASH to the end with the license server's key, and waits for a key when the license is refused")
    func playsWithTheLicenseAndNotWithout() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "chromium is missing: make test-deps installs it")
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.fairPlayVideo)
            let dash = try #require(video.sources.first { $0.isDASH })
            let mpd = try await Curl.fetch(dash.src).text
            let license = try #require(dash.keySystems?["org.w3.clearkey"]?.licenseURL)
            let played = try await Self.run(Self.page(try Self.config(mpd: mpd, licenseURL: license, expectKey: true)))
            let parts = played.split(separator: " ")
            #expect(parts.first == "ended", "\(played)")
            // 12 s played (the last frame at 12.04 s), every frame decoded: 300 frames, at most a few dropped at 4x.
            if parts.count == 5 {
                #expect((Double(parts[1]) ?? 0) > 11.9, "\(played)")
                #expect((Int(parts[2]) ?? 0) >= 290, "\(played)")
                #expect((Int(parts[4]) ?? 0) >= 1, "\(played)")
            }
            // The license request's token edited: the server refuses it, the CDM never gets the key.
            let refused = license.replacingOccurrences(of: "fastly_token=N", with: "fastly_token=M")
            let blocked = try await Self.run(Self.page(try Self.config(mpd: mpd, licenseURL: refused, expectKey: false)))
            #expect(blocked.hasPrefix("waitingforkey"), "\(blocked)")
            #expect(blocked.hasSuffix(" 0"), "no key was ever added: \(blocked)")
        }
    }
}
