import Foundation
import CurlTransfer
@testable import MockBackend
@testable import OfflineSDK
import Testing
import TestKit
import WireModels

/// The thumbnail track (Dynamic Delivery's scrubbing previews) downloaded with a video when
/// asked for (`MediaSelections.thumbnails`), kept whole or not at all, and served offline.
@Suite("Thumbnail track: downloaded when asked for, through faults; its previews offline, from files and the loopback server")
struct ThumbnailTrackTests {
    // MARK: The WebVTT rules

    @Test("cues are read with or without hours, settings, a BOM and CRLF; NOTE and STYLE blocks are skipped; tiles from #xywh")
    func readsCues() throws {
        let body = "\u{FEFF}WEBVTT\r\n\r\nNOTE made by hand\r\n\r\nSTYLE\r\n::cue {}\r\n\r\n1\r\n00:00.000 --> 00:02.500 align:start\r\n"
            + "sprite.jpg#xywh=0,0,160,90\r\n\r\n01:00:02.500 --> 01:00:05.000\r\nhttps://cdn.example/b.png\r\n"
        let cues = try ThumbnailTrackFile.cues(body)
        #expect(cues == [
            .init(start: 0, end: 2.5, image: "sprite.jpg", tile: .init(x: 0, y: 0, width: 160, height: 90)),
            .init(start: 3602.5, end: 3605, image: "https://cdn.example/b.png", tile: nil),
        ])
    }

    @Test("a body that is not a thumbnail WebVTT is refused with a reason", arguments: [
        ("<html>", "WEBVTT"), ("WEBVTT\n", "no cue"), ("WEBVTT\n\n00:01.000 --> 00:00.500\na.jpg\n", "times"),
        ("WEBVTT\n\n00:00.000 --> 00:61.000\na.jpg\n", "times"), ("WEBVTT\n\n00:00.000 --> 00:01.000\n", "no image"),
        ("WEBVTT\n\n00:00.000 --> 00:01.000\na.jpg#xywh=0,0,0,90\n", "tile"), ("WEBVTT\n\n00:00.000 --> 00:01.000\na.jpg#t=3\n", "tile"),
    ])
    func refusesMalformed(body: String, reason: String) {
        #expect { try ThumbnailTrackFile.cues(body) } throws: { "\($0)".contains(reason) }
    }

    @Test("made local: each image once, as thumbnails/sprite-N with its extension, relative URLs resolved against the track's; other schemes refused")
    func localizes() throws {
        let body = "WEBVTT\n\n00:00.000 --> 00:02.000\ns/a.jpg#xywh=0,0,160,90\n\n00:02.000 --> 00:04.000\ns/a.jpg#xywh=160,0,160,90\n\n"
            + "00:04.000 --> 00:06.000\nhttps://cdn.example/x/b.PNG?sig=1\n"
        let (sprites, local) = try ThumbnailTrackFile.localize(body, trackURL: "https://host.example/t/track.vtt?token=2")
        #expect(sprites.map(\.url) == ["https://host.example/t/s/a.jpg", "https://cdn.example/x/b.PNG?sig=1"])
        #expect(sprites.map(\.file) == ["thumbnails/sprite-1.jpg", "thumbnails/sprite-2.png"])
        #expect(try ThumbnailTrackFile.cues(local).map(\.image) == ["sprite-1.jpg", "sprite-1.jpg", "sprite-2.png"])
        #expect(local.contains("00:00:02.000 --> 00:00:04.000\nsprite-1.jpg#xywh=160,0,160,90\n"))
        #expect(ThumbnailTrackFile.spriteFiles(local: local) == ["thumbnails/sprite-1.jpg", "thumbnails/sprite-2.png"])
        #expect { try ThumbnailTrackFile.localize("WEBVTT\n\n00:00.000 --> 00:01.000\nfile:///etc/passwd\n", trackURL: "https://h/t.vtt") }
            throws: { "\($0)".contains("not an http(s) URL") }
    }

    // MARK: Downloads

    static let selections = MediaSelections(thumbnails: true)

    /// Requests for the thumbnail track's WebVTT and sprites the backend has logged.
    static func thumbnailRequests(_ server: MockBackendServer) -> Int {
        server.app.requestLog.entries(RequestLog.Filter()).filter { $0.path.hasPrefix("/image/v1/sprite/") || $0.path.hasPrefix("/thumbnail/") }.count
    }

    @Test("asked for, the track comes with the video: its sprites as served, a cue per 2 s tile; the previews open from files and from the loopback server with nothing fetched",
          arguments: [PackageFormat.transportStream, .cmafSegments])
    func downloadedAndServedOffline(_ format: PackageFormat) async throws {
        try await format.withHarness { server, h in
            let video = try await h.service.findVideo(id: Catalog.clearVideo)
            let remote = try #require(video.textTracks.first { $0.isThumbnailTrack })
            let estimateWith = try await h.manager.estimateDownloadSize(video, mediaSelections: Self.selections, parameters: DownloadParameters())
            let estimateWithout = try await h.manager.estimateDownloadSize(video, mediaSelections: MediaSelections(), parameters: DownloadParameters())
            #expect(estimateWith > estimateWithout, "the track's bandwidth counts in the estimate")

            // Not asked for: no track, no previews.
            let plain = try await h.manager.requestVideoDownload(video, mediaSelections: MediaSelections(), parameters: DownloadParameters())
            #expect(try await h.events.finished(plain) == nil)
            let plainPlayback = try await h.manager.openPlayback(plain)
            let plainTrackURL = try plainPlayback.thumbnailTrackURL()
            #expect(plainPlayback.thumbnails.isEmpty && plainTrackURL == nil)
            #expect(!FileManager.default.fileExists(atPath: await h.manager.packageFolder(plain).appendingPathComponent("thumbnails").path))
            await plainPlayback.close()
            try await h.manager.deleteOfflineVideo(plain)

            // Asked for.
            let token = try await h.manager.requestVideoDownload(video, mediaSelections: Self.selections, parameters: DownloadParameters())
            #expect(try await h.events.finished(token) == nil)
            let folder = await h.manager.packageFolder(token)
            let remoteCues = try ThumbnailTrackFile.cues(String(decoding: try await HTTPClient().send(HTTPClientRequest(url: remote.src)).body, as: UTF8.self))
            let served = try await HTTPClient().send(HTTPClientRequest(url: remoteCues[0].image)).body
            #expect(try Data(contentsOf: folder.appendingPathComponent("thumbnails/sprite-1.jpg")) == Data(served))
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("thumbnails/remote.vtt").path), "the remote WebVTT is not kept")

            // The download's WebVTT and sprite, and this test's: all logged before anything plays.
            #expect(try await eventually { Self.thumbnailRequests(server) == 4 })
            let playback = try await h.manager.openPlayback(token)
            #expect(playback.thumbnails.count == remoteCues.count && playback.thumbnails.count == 6)
            #expect(playback.thumbnails.map(\.start) == remoteCues.map(\.start) && playback.thumbnails.map(\.tile) == remoteCues.map(\.tile))
            #expect(playback.thumbnails[4].tile == OfflineThumbnail.Tile(x: 160, y: 90, width: 160, height: 90))
            #expect(playback.thumbnails.allSatisfy { FileManager.default.fileExists(atPath: $0.imageFile.path) })
            let trackURL = try #require(try playback.thumbnailTrackURL())
            let vtt = try await HTTPClient().send(HTTPClientRequest(url: trackURL.absoluteString))
            #expect(vtt.status == 200 && vtt.headers["Content-Type"] == "text/vtt")
            let localCues = try ThumbnailTrackFile.cues(String(decoding: vtt.body, as: UTF8.self))
            let sprite = try await HTTPClient().send(HTTPClientRequest(url: DownloadPlanner.resolve(localCues[0].image, against: trackURL.absoluteString)))
            #expect(sprite.status == 200 && sprite.headers["Content-Type"] == "image/jpeg" && sprite.body == served)
            #expect(Self.thumbnailRequests(server) == 4, "offline previews fetch nothing")
            await playback.close()

            // A sprite gone from the package: the download is stale, as for any of its files.
            try FileManager.default.removeItem(at: folder.appendingPathComponent("thumbnails/sprite-1.jpg"))
            await #expect(throws: OfflineVideoError.self) { _ = try await h.manager.openPlayback(token) }
            #expect(try await h.manager.status(token).downloadState == .stale)
        }
    }

    @Test("the track's WebVTT answered 403 once (its signed URL expired) is fetched again at a fresh URL; 503s and a cut sprite are tried again; the download completes whole")
    func faultsSurvived() async throws {
        try await PackageFormat.transportStream.withHarness { server, h in
            try server.app.faults.add(FaultRule(id: "expired", route: .image, path: "thumbnail.webvtt", times: 1, status: 403))
            try server.app.faults.add(FaultRule(id: "busy", route: .image, path: "/sprite/", times: 2, status: 503))
            try server.app.faults.add(FaultRule(id: "cut", route: .image, path: "/sprite/", times: 1, cutAfterBytes: 100))
            let findsBefore = server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/playback/")).count
            let token = try await h.request(Catalog.clearVideo, Self.selections)
            #expect(try await h.events.finished(token) == nil)
            let applied = Dictionary(uniqueKeysWithValues: server.app.faults.rules.map { ($0.rule.id ?? "", $0.applied) })
            #expect(applied == ["expired": 1, "busy": 2, "cut": 1], "\(applied)")
            #expect(server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/playback/")).count > findsBefore + 1, "the video was found again for a fresh URL")
            let playback = try await h.manager.openPlayback(token)
            #expect(playback.thumbnails.count == 6)
            await playback.close()
        }
    }

    @Test("a sprite that cannot be fetched (404) fails the download with a stable code and a sentence naming it, never completed")
    func spriteMissingFails() async throws {
        try await PackageFormat.transportStream.withHarness { server, h in
            try server.app.faults.add(FaultRule(id: "gone", route: .image, path: "/sprite/", status: 404))
            let token = try await h.request(Catalog.clearVideo, Self.selections)
            let failure = try #require(try await h.events.finished(token))
            #expect(failure.code == .downloadFailure && failure.reason == .http && failure.message.contains("Thumbnail sprite 1 of 1"), "\(failure)")
            #expect(try await h.manager.status(token).downloadState == .error)
        }
    }
}
