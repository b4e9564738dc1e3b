import CurlTransfer
import Foundation
import LicenseProtocol
@testable import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// The clear fixture media the server packages (fixtures/media/bars).
enum ClearFixture {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fixtures/media/bars")

    static func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(relative)))
    }

    /// The six clear segments of a fixture track folder (`video/416x234`, `audio/en`).
    static func segments(_ folder: String) throws -> [[UInt8]] {
        try (0..<6).map { try bytes("\(folder)/seg_00\($0).ts") }
    }

    /// A segment of a clear download's first video track, `distance` past those on disk (a track
    /// is fetched in order), with the bytes it holds: its name in the package and the fixture's.
    static func videoSegment(_ manager: OfflineVideoManager, _ token: String, past distance: Int) async throws -> (name: String, body: [UInt8]) {
        let done = try await manager.store.offPool { try $0.segments(token) }.filter { $0.file.hasPrefix("0-video/") && $0.done }.count
        let index = done + distance
        return (String(format: "0-video/%05d.ts", index), try bytes("video/416x234/seg_00\(index % 6).ts"))
    }

    /// ffmpeg's framemd5 lines ("stream, dts, pts, duration, size, md5") of one stream of `input`.
    static func frameHashes(_ input: String, map: String) async throws -> [String] {
        let output = try await Run.process("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", input, "-map", map, "-f", "framemd5", "-"])
        try #require(output.exitCode == 0, "ffmpeg \(input): \(output.stderrText)")
        return output.stdoutText.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty }
    }
}

@Suite("Offline playback: clear media out, licenses enforced on the device, live")
struct PlaybackTests {
    static let rentalVideo = "6415818918104"

    /// A harness whose SDK clock is the backend's (moving the server clock moves both).
    func withServerClock(_ server: MockBackendServer, _ configure: @escaping (inout OfflineVideoManagerConfiguration) -> Void = { _ in },
                         _ body: (Harness) async throws -> Void) async throws {
        try await withHarness(server, { configuration in
            configuration.clock = { server.app.clock.now() }
            configure(&configuration)
        }, body)
    }

    /// Downloads the clear video (French audio, German sideband subtitles, at most 300 kbit/s, the
    /// H.264 ladder, whose frames the fixture has) into `storage` in `format` from a backend that is
    /// gone once this returns; returns its token.
    static func downloadClearVideo(_ storage: TemporaryDirectory, _ format: PackageFormat) async throws -> OfflineVideoToken {
        var token = ""
        try await withBackend { server in
            try await format.prepare(server)
            var configuration = testConfiguration(storage)
            format.configure(&configuration)
            configuration.unplayableCodecs = [.hevc]
            let manager = try await OfflineVideoManager(configuration: configuration)
            let events = EventRecorder(manager)
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            token = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo),
                                                           mediaSelections: MediaSelections(audioLanguages: ["fr"], subtitleLanguages: ["de"]),
                                                           parameters: DownloadParameters(requestedBitrate: 300_000))
            #expect(try await events.finished(token) == nil)
            let downloaded = token
            #expect(try await manager.store.offPool { try $0.hasInitSegments(downloaded) } == format.isCMAF, "a \(format) package")
            await manager.close()
        }
        return token
    }

    @Test("a clear download plays with the server gone: ffprobe and ffmpeg read the loopback URL, segments and export are the fixture's bytes")
    func clearOffline() async throws {
        let storage = try TemporaryDirectory()
        defer { storage.remove() }
        let token = try await Self.downloadClearVideo(storage, .transportStream)
        // The backend is gone and the device has no network.
        var configuration = testConfiguration(storage)
        configuration.network = ManualNetworkMonitor(path: .none)
        let manager = try await OfflineVideoManager(configuration: configuration)
        defer { Task { await manager.close() } }
        let video = try #require(await manager.videoObject(fromOfflineVideoToken: token))
        let playback = try await manager.openPlayback(video)
        #expect(playback.license == nil, "clear content needs no license")
        #expect(playback.tracks.map(\.kind) == [.video, .audio], "German subtitles are sideband only: no manifest track")
        let url = try playback.serve()
        #expect(url.host == "127.0.0.1" && url.path.hasSuffix("/master.m3u8"))

        let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration:stream=codec_type,codec_name,width",
                                                               "-of", "json", url.absoluteString])
        #expect(probe.exitCode == 0, "\(probe.stderrText)")
        #expect(probe.stdoutText.contains("\"width\": 416") && probe.stdoutText.contains("\"codec_name\": \"aac\""), "\(probe.stdoutText)")
        let decode = try await Run.process("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", url.absoluteString, "-map", "0:v", "-map", "0:a",
                                                               "-f", "null", "-"])
        #expect(decode.exitCode == 0 && decode.stderrText.isEmpty, "\(decode.stderrText)")

        // Sideband subtitles are listed in the master and served; nothing outside the secret path is.
        let master = try await Curl.fetch(url.absoluteString)
        #expect(master.text.contains("TYPE=SUBTITLES") && !master.text.contains("SESSION-KEY"))
        let base = url.deletingLastPathComponent().absoluteString
        let sideband = try await Curl.fetch(base + "sideband/de.vtt")
        try #expect(sideband.status == 200 && sideband.body == ClearFixture.bytes("subtitles/de.vtt"))
        let elsewhere = try await Curl.fetch("http://127.0.0.1:\(url.port ?? 0)/wrong-secret/master.m3u8")
        #expect(elsewhere.status == 404)
        let traversal = try await Curl.fetch(base + "..%2F..%2Foffline.sqlite", ["--path-as-is"])
        #expect(traversal.status == 400 || traversal.status == 404)

        // The async sequence gives the fixture's segments, in order.
        var received: [[UInt8]] = []
        for try await segment in playback.segments(of: playback.tracks[1]) { received.append(segment.bytes) }
        try #expect(received == ClearFixture.segments("audio/fr"))
        // The export of the video alone is the concatenated clear segments.
        let export = storage.url.appendingPathComponent("video.ts")
        try await playback.export(to: export)
        try #expect(Array(Data(contentsOf: export)) == ClearFixture.segments("video/416x234").flatMap { $0 })
        // With the French audio multiplexed in: one file ffprobe reads as H.264 + AAC, 12 s long.
        let muxed = storage.url.appendingPathComponent("muxed.ts")
        try await playback.export(to: muxed, audioLanguage: "fr")
        let muxedProbe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name:format=duration",
                                                                    "-of", "csv=p=0", muxed.path])
        #expect(muxedProbe.stdoutText.contains("h264") && muxedProbe.stdoutText.contains("aac"), "\(muxedProbe.stdoutText) \(muxedProbe.stderrText)")
        let audioFrames = try await ClearFixture.frameHashes(muxed.path, map: "0:a:0")
        let fixtureAudio = try await ClearFixture.frameHashes(ClearFixture.root.appendingPathComponent("audio/fr/index.m3u8").path, map: "0:a:0")
        #expect(audioFrames.map { $0.split(separator: ",").last } == fixtureAudio.map { $0.split(separator: ",").last },
                "every audio frame of the export decodes as the fixture's")
        await playback.close()
        #expect(throws: OfflineVideoError.self) { try playback.serve() }
    }

    @Test("a clear CMAF download plays with the server gone: ffmpeg and GStreamer read the loopback URL, its frames and audio are the fixture's, so are the MP4 export's",
          arguments: [PackageFormat.cmafSegments, .cmafByteRanges])
    func clearCMAFOffline(_ format: PackageFormat) async throws {
        let storage = try TemporaryDirectory()
        defer { storage.remove() }
        let token = try await Self.downloadClearVideo(storage, format)
        // The backend is gone and the device has no network.
        var configuration = testConfiguration(storage)
        configuration.network = ManualNetworkMonitor(path: .none)
        let manager = try await OfflineVideoManager(configuration: configuration)
        let playback = try await manager.openPlayback(token)
        let url = try playback.serve().absoluteString
        let md5 = { (lines: [String]) in lines.map { $0.split(separator: ",").last.map(String.init) ?? "" } }
        let fixture = try await ClearFixture.frameHashes(ClearFixture.root.appendingPathComponent("video/416x234/index.m3u8").path, map: "0:v:0")
        let fixtureSound = try await ClearFixture.frameHashes(ClearFixture.root.appendingPathComponent("audio/fr/index.m3u8").path, map: "0:a:0")
        let frames = try await ClearFixture.frameHashes(url, map: "0:v:0")
        #expect(frames.count == 300 && md5(frames) == md5(fixture), "all 300 frames equal the clear fixture's")
        #expect(md5(try await ClearFixture.frameHashes(url, map: "0:a:0")) == md5(fixtureSound), "every audio frame equals the fixture's")
        let sideband = try await Curl.fetch(URL(string: url)!.deletingLastPathComponent().absoluteString + "sideband/de.vtt")
        try #expect(sideband.status == 200 && sideband.body == ClearFixture.bytes("subtitles/de.vtt"))
        try #require(FileManager.default.isExecutableFile(atPath: GStreamer.launch), "make test-deps installs gstreamer1.0-tools")
        let played = try await GStreamer.play(url)
        #expect(played.eos && played.lastVideoPTS > 11.5, "\(played.lastVideoPTS) s\n\(played.log.suffix(2000))")
        let export = storage.url.appendingPathComponent("export.mp4")
        try await playback.export(to: export, audioLanguage: "fr")
        #expect(md5(try await ClearFixture.frameHashes(export.path, map: "0:v:0")) == md5(fixture), "the MP4's frames are the fixture's")
        #expect(md5(try await ClearFixture.frameHashes(export.path, map: "0:a:0")) == md5(fixtureSound), "the MP4's audio is the fixture's")
        await playback.close()
        await manager.close()
    }

    @Test("FairPlay: the loopback URL decodes with ffmpeg to the clear fixture's frames and audio, the segments and the export are clear",
          arguments: PackageFormat.allCases)
    func fairPlayDecrypts(_ format: PackageFormat) async throws {
        // The H.264 renditions: the frames are compared with the H.264 fixture's.
        try await format.withHarness({ _, configuration in configuration.unplayableCodecs = [.hevc] }) { server, h in
            let token = try await h.manager.requestVideoDownload(try await h.service.findVideo(id: Catalog.fairPlayVideo),
                                                                 mediaSelections: MediaSelections(audioLanguages: ["es"]),
                                                                 parameters: DownloadParameters(license: .purchase))
            #expect(try await h.events.finished(token) == nil)
            let segments = try await h.manager.store.offPool { try $0.segments(token) }
            #expect(segments.contains { $0.sequence < 0 } == format.isCMAF, "init segments exactly for CMAF")
            #expect(segments.contains { $0.range != nil } == (format == .cmafByteRanges), "byte ranges exactly for that form")
            #expect(segments.allSatisfy { $0.sequence < 0 || $0.range != nil } || format != .cmafByteRanges, "every piece a byte range")
            let playback = try await h.manager.openPlayback(token)
            #expect(playback.license?.kind == .purchase && playback.license?.expiration == nil)
            var clear: [ClearSegment] = []
            for try await segment in playback.segments(of: playback.tracks[0]) { clear.append(segment) }
            var audio: [ClearSegment] = []
            for try await segment in playback.segments(of: playback.tracks[1]) { audio.append(segment) }
            if format.isCMAF {
                // The init segment first, then six fragments; nothing of the protection is left.
                #expect(clear.map(\.sequence) == Array(-1 ..< 6) && audio.map(\.sequence) == Array(-1 ..< 6))
                for segment in clear + audio {
                    for box in ["encv", "enca", "sinf", "senc", "saio", "saiz", "pssh"] {
                        #expect(!segment.bytes.contains(subsequence: Array(box.utf8)), "\(box) in segment \(segment.sequence)")
                    }
                }
            } else {
                try #expect(clear.map(\.bytes) == ClearFixture.segments("video/416x234"))
                try #expect(audio.map(\.bytes) == ClearFixture.segments("audio/es"))
            }

            let url = try playback.serve().absoluteString
            // Decoded frames and audio equal the clear fixture's (their hashes; the timeline differs between formats).
            let md5 = { (lines: [String]) in lines.map { $0.split(separator: ",").last.map(String.init) ?? "" } }
            let frames = try await ClearFixture.frameHashes(url, map: "0:v:0")
            let fixture = try await ClearFixture.frameHashes(ClearFixture.root.appendingPathComponent("video/416x234/index.m3u8").path, map: "0:v:0")
            #expect(frames.count == 300 && md5(frames) == md5(fixture), "all 300 frames equal the clear fixture's")
            let sound = try await ClearFixture.frameHashes(url, map: "0:a:0")
            let fixtureSound = try await ClearFixture.frameHashes(ClearFixture.root.appendingPathComponent("audio/es/index.m3u8").path, map: "0:a:0")
            #expect(!sound.isEmpty && md5(sound) == md5(fixtureSound), "every audio frame equals the fixture's")
            // A second player, with the backend answering nothing but 503: GStreamer plays the loopback URL to its end.
            try #require(FileManager.default.isExecutableFile(atPath: GStreamer.launch), "make test-deps installs gstreamer1.0-tools")
            try server.app.faults.add(FaultRule(id: "backend-down", status: 503))
            let played = try await GStreamer.play(url)
            #expect(played.eos && played.lastVideoPTS > 11.5, "\(played.lastVideoPTS) s\n\(played.log.suffix(2000))")
            server.app.faults.removeAll()
            let export = h.storage.url.appendingPathComponent(format.isCMAF ? "export.mp4" : "export.ts")
            try await playback.export(to: export, audioLanguage: format.isCMAF ? "es" : nil)
            if format.isCMAF {
                let exported = try await ClearFixture.frameHashes(export.path, map: "0:v:0")
                #expect(md5(exported) == md5(fixture), "the MP4's frames are the fixture's")
                let exportedSound = try await ClearFixture.frameHashes(export.path, map: "0:a:0")
                #expect(md5(exportedSound) == md5(fixtureSound), "the MP4's audio is the fixture's")
                let probe = try await Run.process("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", export.path])
                #expect(abs((Double(probe.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - 12) < 0.1, "\(probe.stdoutText)")
            } else {
                #expect(Array(try Data(contentsOf: export)) == clear.flatMap(\.bytes))
            }
            await playback.close()
        }
    }

    @Test("HEVC: on a device that cannot play H.264 the FairPlay video's CMAF HEVC variant is chosen; the loopback URL, a second player and the export decode to the HEVC fixture's frames",
          arguments: [PackageFormat.cmafSegments, .cmafByteRanges])
    func hevcDecrypts(_ format: PackageFormat) async throws {
        try await format.withHarness({ _, configuration in configuration.unplayableCodecs = [.h264] }) { server, h in
            let token = try await h.manager.requestVideoDownload(try await h.service.findVideo(id: Catalog.fairPlayVideo),
                                                                 mediaSelections: MediaSelections(audioLanguages: ["en"]),
                                                                 parameters: DownloadParameters(license: .purchase))
            #expect(try await h.events.finished(token) == nil)
            let master = try String(contentsOf: await h.manager.packageFolder(token).appendingPathComponent("master.m3u8"), encoding: .utf8)
            let variants = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
            #expect(variants.count == 1 && variants[0].contains("hvc1") && !variants[0].contains("avc1"), "the HEVC variant: \(master)")
            let playback = try await h.manager.openPlayback(token)
            let url = try playback.serve().absoluteString
            let md5 = { (lines: [String]) in lines.map { $0.split(separator: ",").last.map(String.init) ?? "" } }
            let fixture = try await ClearFixture.frameHashes(ClearFixture.root.appendingPathComponent("video-hevc/416x234/index.m3u8").path, map: "0:v:0")
            let frames = try await ClearFixture.frameHashes(url, map: "0:v:0")
            #expect(frames.count == 300 && md5(frames) == md5(fixture), "all 300 HEVC frames equal the clear fixture's")
            try #require(FileManager.default.isExecutableFile(atPath: GStreamer.launch), "make test-deps installs gstreamer1.0-tools")
            try server.app.faults.add(FaultRule(id: "backend-down", status: 503))
            let played = try await GStreamer.play(url)
            #expect(played.eos && played.lastVideoPTS > 11.5, "\(played.lastVideoPTS) s\n\(played.log.suffix(2000))")
            let export = h.storage.url.appendingPathComponent("export.mp4")
            try await playback.export(to: export, audioLanguage: "en")
            #expect(md5(try await ClearFixture.frameHashes(export.path, map: "0:v:0")) == md5(fixture), "the MP4's frames are the fixture's")
            await playback.close()
        }
    }

    @Test("dual expiry after an online first play: recorded before any byte, reported, the server's license stored; expired 69303 once past the window")
    func dualExpiryOnline() async throws {
        try await withBackend { server in try await withServerClock(server) { h in
            let video = try await h.service.findVideo(id: Self.rentalVideo)
            let requested = server.app.clock.now()
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil,
                                                                 parameters: DownloadParameters(license: .rental(duration: 2 * 86400, playDuration: 6 * 3600)))
            #expect(try await h.events.finished(token) == nil)
            let before = try #require(try await h.manager.licenseInfo(token))
            // The license was issued between the request and now (whole seconds on the server's clock).
            let elapsed = server.app.clock.now().timeIntervalSince(requested)
            #expect(before.kind == .rental && before.firstPlay == nil && before.playRemaining == 6 * 3600)
            let remaining = try #require(before.rentalRemaining)
            #expect(remaining <= 2 * 86400 + 1 && remaining >= 2 * 86400 - elapsed - 1, "\(remaining) s left, \(elapsed) s after the request")

            let opened = server.app.clock.now()
            let playback = try await h.manager.openPlayback(token)
            let open = between(opened, server.app.clock.now())  // when the first play was recorded
            let info = try #require(playback.license)
            #expect(open.contains(try #require(info.firstPlay)))
            #expect(between(open.lowerBound, open.upperBound, plus: 6 * 3600).contains(try #require(info.expiration)), "min(rental end, first play + 6 h)")
            let stored = try #require(try await h.manager.store.offPool { try $0.download(token) }?.initialPlaybackAt)
            #expect(open.contains(Date(timeIntervalSince1970: stored)))
            try await h.events.wait { if case .licenseExpirationChanged(token, let date) = $0 { date == info.expiration } else { false } }
            // The report reaches the server, whose updated license replaces the stored one.
            #expect(try await eventually { try await h.manager.store.offPool { try $0.pendingReports() }.isEmpty })
            let record = try #require(try await h.manager.store.offPool { try $0.download(token) })
            #expect(StoredLicense.terms(of: record)?.firstPlay != nil, "the server's first play is in the stored license")
            #expect(try await h.manager.fairPlayLicenseExpiration(token).map { abs($0.timeIntervalSince(info.expiration!)) < 1 } == true)
            await playback.close()

            // Past the play window (well before the rental end): refused, on both clocks.
            server.app.clock.offset += 7 * 3600
            let expired = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(token) }
            #expect(expired?.code == .expiredLicense && expired?.reason == .licenseExpired)
        } }
    }

    @Test("dual expiry after an offline first play: the local first play stands, the report is queued and sent when the network returns")
    func dualExpiryOffline() async throws {
        let network = ManualNetworkMonitor(path: .wifi)
        try await withBackend { server in try await withServerClock(server, { $0.network = network }) { h in
            let token = try await h.manager.requestVideoDownload(try await h.service.findVideo(id: Self.rentalVideo), mediaSelections: nil,
                                                                 parameters: DownloadParameters(license: .rental(duration: 86400, playDuration: 3600)))
            #expect(try await h.events.finished(token) == nil)
            network.currentPath = .none
            let playedAt = server.app.clock.now()
            let playback = try await h.manager.openPlayback(token)
            let played = between(playedAt, server.app.clock.now())  // when the local first play was recorded
            #expect(playback.license.flatMap(\.expiration).map { between(played.lowerBound, played.upperBound, plus: 3600).contains($0) } == true)
            _ = try await collect(playback.segments(of: playback.tracks[0]))
            await playback.close()
            let queued = try await h.manager.store.offPool { try $0.pendingReports() }
            #expect(queued.count == 1 && queued.first?.kind == .firstPlay)

            // Half an hour later the network is back: the report goes out; the server records
            // its own (later) first play, and the earlier local one keeps deciding the expiry.
            server.app.clock.offset += 1800
            network.currentPath = .wifi
            #expect(try await eventually { try await h.manager.store.offPool { try $0.pendingReports() }.isEmpty })
            let store = await h.manager.store
            #expect(try await eventually { try await store.offPool { try $0.download(token) }.flatMap(StoredLicense.terms)?.firstPlay != nil })
            let serverFirstPlay = try #require(try await store.offPool { try $0.download(token) }.flatMap(StoredLicense.terms)?.firstPlay)
            #expect(serverFirstPlay > playedAt.addingTimeInterval(1700))
            let expiry = try #require(try await h.manager.fairPlayLicenseExpiration(token))
            #expect(between(played.lowerBound, played.upperBound, plus: 3600).contains(expiry))
            server.app.clock.offset += 1900  // 3,700 s after the local first play, 1,900 s after the server's
            let expired = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(token) }
            #expect(expired?.code == .expiredLicense)

            // Deleted while offline: the release waits in the store and reaches the server later.
            let licenseID = try #require(try await store.offPool { try $0.download(token) }.flatMap(StoredLicense.terms)?.licenseID)
            network.currentPath = .none
            try await h.manager.deleteOfflineVideo(token)
            #expect(try await h.manager.store.offPool { try $0.pendingReports() }.map(\.kind) == [.release])
            #expect(try server.app.licenses.license(id: licenseID)?.releasedAt == nil)
            network.currentPath = .wifi
            #expect(try await eventually { try await h.manager.store.offPool { try $0.pendingReports() }.isEmpty })
            #expect(try server.app.licenses.license(id: licenseID)?.releasedAt != nil, "released on the server")
        } }
    }

    @Test("an expired rental renewed as a purchase plays again; invalidate gives 69304 until renewed; a session open at expiry keeps playing")
    func renewAndInvalidate() async throws {
        try await withBackend { server in try await withServerClock(server) { h in
            let video = try await h.service.findVideo(id: Self.rentalVideo)
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: nil,
                                                                 parameters: DownloadParameters(license: .rental(duration: 3600)))
            #expect(try await h.events.finished(token) == nil)
            let open = try await h.manager.openPlayback(token)
            server.app.clock.offset += 7200
            // Already open: keeps playing past the expiry.
            #expect(try await collect(open.segments(of: open.tracks[0])).count == 6)
            await open.close()
            #expect(await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(token) }?.code == .expiredLicense)

            let fresh = try await h.service.findVideo(id: Self.rentalVideo)
            _ = try await h.manager.renewFairPlayLicense(token, video: fresh, parameters: DownloadParameters(license: .purchase))
            try await h.events.wait { if case .licenseExpirationChanged(token, .distantFuture) = $0 { true } else { false } }
            let renewed = try await h.manager.openPlayback(token)
            #expect(renewed.license?.kind == .purchase)
            await renewed.close()

            try await h.manager.invalidateFairPlayLicense(token)
            try await h.events.wait { if case .licenseExpirationChanged(token, nil) = $0 { true } else { false } }
            let invalid = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(token) }
            #expect(invalid?.code == .invalidLicense)
            #expect(try await eventually { try await h.manager.store.offPool { try $0.pendingReports() }.isEmpty }, "the release reached the server")

            // Given back, then taken again: no new download.
            _ = try await h.manager.renewFairPlayLicense(token, video: try await h.service.findVideo(id: Self.rentalVideo),
                                                         parameters: DownloadParameters(license: .rental(duration: 86400)))
            let again = try await h.manager.openPlayback(token)
            #expect(again.license?.kind == .rental)
            let againSegments = try await collect(again.segments(of: again.tracks[0])).map(\.bytes)
            try #expect(againSegments == ClearFixture.segments("video/416x234"))
            await again.close()
        } }
    }

    @Test("a stored license edited by one byte, or another video's license, is 69304; a clock set back is refused")
    func tamperingAndClock() async throws {
        try await withBackend { server in try await withServerClock(server) { h in
            let bought = try await h.manager.requestVideoDownload(try await h.service.findVideo(id: Catalog.fairPlayVideo), mediaSelections: nil,
                                                                  parameters: DownloadParameters(license: .purchase))
            let rented = try await h.manager.requestVideoDownload(try await h.service.findVideo(id: Self.rentalVideo), mediaSelections: nil,
                                                                  parameters: DownloadParameters(license: .rental(duration: 86400)))
            #expect(try await h.events.finished(bought) == nil)
            #expect(try await h.events.finished(rented) == nil)
            let store = await h.manager.store
            let original = try #require(try await store.offPool { try $0.download(bought) }?.license)

            for index in [10, original.count / 2, original.count - 1] {
                var bytes = original
                bytes[index] ^= 0x01
                let edited = bytes
                try await store.offPool { store in try store.update(bought) { $0.license = edited } }
                let refused = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(bought) }
                #expect(refused?.code == .invalidLicense, "byte \(index)")
            }
            try await store.offPool { store in try store.update(bought) { $0.license = original } }
            await (try await h.manager.openPlayback(bought)).close()

            // One video's license put on another's download: refused, its segments never decrypted with it.
            let rentedLicense = try #require(try await store.offPool { try $0.download(rented) }).license
            try await store.offPool { store in try store.update(bought) { $0.license = rentedLicense } }
            let foreign = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(bought) }
            #expect(foreign?.code == .invalidLicense)
            try await store.offPool { store in try store.update(bought) { $0.license = original } }

            // The wall clock turned back an hour (behind the license's issue and the last open).
            server.app.clock.offset -= 3600
            let rollback = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(rented) }
            #expect(rollback?.code == .invalidLicense && rollback?.reason == .clockRollback)
            server.app.clock.offset += 3600
            await (try await h.manager.openPlayback(rented)).close()
        } }
    }

    @Test("playback during a download: segments on disk are served, the others wait for the download when the network may not be used for playback")
    func duringDownload() async throws {
        let network = ManualNetworkMonitor(path: .cellular)
        try await withBackend { server in
            try await withHarness(server, { configuration in
                configuration.network = network
                configuration.options.allowsCellularDownload = true  // downloads run on cellular; playback may not
                configuration.segmentsInParallel = 2
            }) { h in
                // Every segment answered after 50 ms: the download fetches at most 40 a second,
                // however fast this machine is, so the segments named below stay ahead of it.
                try server.app.faults.add(FaultRule(id: "slow", route: .segment, video: Catalog.marathonVideo, latencyMs: 50))
                let token = try await h.request(Catalog.marathonVideo)
                #expect(try await eventually { try await h.manager.status(token).downloadPercent > 1 })
                // Held: no new request starts while there is no network.
                network.currentPath = .none
                let playback = try await h.manager.openPlayback(token)
                let base = try playback.serve().deletingLastPathComponent().absoluteString
                let first = try await Curl.fetch(base + "0-video/00000.ts")
                try #expect(first.status == 200 && first.body == ClearFixture.bytes("video/416x234/seg_000.ts"))
                // Further on: not on disk yet, and cellular may not be used for playback: the
                // request waits until the download brings it.
                let later = try await ClearFixture.videoSegment(h.manager, token, past: 10)
                #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(token).appendingPathComponent(later.name).path))
                let waiting = try Curl.start(base + later.name, ["--max-time", "120"])
                #expect(try await eventually { await h.manager.downloads.arrivals.waiting > 0 }, "the request waits for the download")
                network.currentPath = .cellular
                let late = waiting.finish(await waiting.process.wait())
                #expect(late.status == 200 && late.body == later.body, "\(late.status) \(late.text.prefix(200))")
                #expect(try await h.manager.status(token).downloadState == .downloading, "the download went on while playing")
                // On wifi, playback may use the network: a segment far ahead (a minute of the
                // download away at least) is fetched at once.
                network.currentPath = .wifi
                let far = try await ClearFixture.videoSegment(h.manager, token, past: 2_400)
                let ahead = try await Curl.fetch(base + far.name)
                #expect(ahead.status == 200 && ahead.body == far.body)
                #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(token).appendingPathComponent(far.name).path),
                        "fetched for playback, not stored ahead of the download")
                await playback.close()
                try await h.manager.pauseVideoDownload(token)
            }
        }
    }

    @Test("a reader beside the owner plays a video the owner is downloading: segments on disk at once, a later one as the owner writes it (the folder watched), none once the download is paused")
    func readerDuringDownload() async throws {
        let ownerNetwork = ManualNetworkMonitor(path: .wifi)
        try await withBackend { server in
            try await withHarness(server, { configuration in
                configuration.network = ownerNetwork
                configuration.segmentsInParallel = 2
            }) { h in
                // Every segment answered after 50 ms: the download fetches at most 40 a second,
                // however fast this machine is, so the segments named below stay ahead of it.
                try server.app.faults.add(FaultRule(id: "slow", route: .segment, video: Catalog.marathonVideo, latencyMs: 50))
                let token = try await h.request(Catalog.marathonVideo)
                #expect(try await eventually { try await h.manager.status(token).downloadPercent > 1 })
                // Held: no new request starts while the owner has no network.
                ownerNetwork.currentPath = .none
                // The reader may not use the network at all: what it serves comes from the folder.
                var configuration = testConfiguration(h.storage)
                configuration.role = .reader
                configuration.network = ManualNetworkMonitor(path: .none)
                let reader = try await OfflineVideoManager(configuration: configuration)
                let playback = try await reader.openPlayback(token)
                let base = try playback.serve().deletingLastPathComponent().absoluteString
                let first = try await Curl.fetch(base + "0-video/00000.ts")
                try #expect(first.status == 200 && first.body == ClearFixture.bytes("video/416x234/seg_000.ts"))
                let later = try await ClearFixture.videoSegment(h.manager, token, past: 10)
                #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(token).appendingPathComponent(later.name).path))
                let waiting = try Curl.start(base + later.name, ["--max-time", "300"])
                #expect(try await eventually { FolderWatch.waiting > 0 }, "the request waits, watching the folder")
                ownerNetwork.currentPath = .wifi  // the owner goes on and brings it
                let late = waiting.finish(await waiting.process.wait())
                #expect(late.status == 200 && late.body == later.body, "\(late.status) \(late.text.prefix(200))")
                #expect(try await h.manager.status(token).downloadState == .downloading, "the download went on while the reader played")

                // Paused by its owner, the download brings nothing more: a segment not on disk is
                // refused at once instead of waited for.
                try await h.manager.pauseVideoDownload(token)
                let absent = try await ClearFixture.videoSegment(h.manager, token, past: 100)
                #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(token).appendingPathComponent(absent.name).path))
                let refused = try await Curl.fetch(base + absent.name)
                #expect(refused.status != 200 && refused.exitCode == 0, "\(refused.status) \(refused.exitCode)")
                await playback.close()
                await reader.close()
            }
        }
    }

    @Test("opening checks in order: unknown token, nothing downloaded, missing files (the download becomes stale)")
    func openRefusals() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let unknown = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback("no-such-token") }
            #expect(unknown?.reason == .unknownToken)
            let preloaded = try await h.manager.preloadFairPlayLicense(try await h.service.findVideo(id: Self.rentalVideo),
                                                                       parameters: DownloadParameters(license: .purchase))
            #expect(await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(preloaded) }?.reason == .notDownloaded)

            let token = try await h.request(Catalog.clearVideo)
            #expect(try await h.events.finished(token) == nil)
            let folder = await h.manager.packageFolder(token)
            try FileManager.default.removeItem(at: folder.appendingPathComponent("0-video/00003.ts"))
            let missing = await #expect(throws: OfflineVideoError.self) { try await h.manager.openPlayback(token) }
            #expect(missing?.reason == .filesMissing)
            #expect(try await h.manager.status(token).downloadState == .stale)
            try await h.events.wait { $0 == .storageChanged }
        } }
    }

    @Test("auto-purge deletes downloads whose license expired, not while a session plays them, with an event")
    func autoPurge() async throws {
        try await withBackend { server in try await withServerClock(server, { $0.autoPurgesExpiredDownloads = true }) { h in
            let token = try await h.manager.requestVideoDownload(try await h.service.findVideo(id: Self.rentalVideo), mediaSelections: nil,
                                                                 parameters: DownloadParameters(license: .rental(duration: 3600)))
            #expect(try await h.events.finished(token) == nil)
            let playing = try await h.manager.openPlayback(token)
            server.app.clock.offset += 7200
            await h.manager.licenses.purgeExpired()
            #expect(try await h.manager.offlineVideoStatus(forToken: token) != nil, "kept while it plays")
            await playing.close()
            try await h.events.wait { $0 == .downloadPurged(token) }
            #expect(try await h.manager.offlineVideoStatus(forToken: token) == nil)
            #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(token).path))
        } }
    }
}

/// Every element of an async sequence.
func collect<S: AsyncSequence>(_ sequence: S) async throws -> [S.Element] {
    var all: [S.Element] = []
    for try await element in sequence { all.append(element) }
    return all
}
