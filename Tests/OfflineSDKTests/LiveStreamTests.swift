import CurlTransfer
import Foundation
import MicroHTTP
import MockBackend
@testable import OfflineSDK
import Locking
import TestKit
import Testing

/// A proxy in front of the mock backend that shows its videos as a live or an event stream: every
/// media playlist it forwards loses its `EXT-X-ENDLIST` (live) or gains `EXT-X-PLAYLIST-TYPE:EVENT`
/// (an event, finished or not), as a packager's output looks while the stream runs. It counts the
/// segment requests it forwards.
final class LiveStreamProxy: Sendable {
    enum Form: Sendable { case live, event }
    let server: HTTPServer
    private let state = Locked<(backend: String, segments: Int)>(("", 0))

    init(_ form: Form) throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let state = self.state
        let client = HTTPClient()
        server = HTTPServer(configuration: configuration, logger: quietLogger) { request in
            let backend = state.withLock { state in
                if request.path.hasSuffix(".ts") || request.path.hasSuffix(".m4s") { state.segments += 1 }
                return state.backend
            }
            let forwarded = request.headers.filter { !["host", "content-length", "connection"].contains($0.name.lowercased()) }
                .map { ($0.name, $0.value) }
            guard let answer = try? await client.send(HTTPClientRequest(url: backend + request.target, headers: forwarded)) else {
                return .text("backend gone\n", status: 502)
            }
            var body = answer.body
            if request.path.hasSuffix("/rendition.m3u8") {
                var text = String(decoding: body, as: UTF8.self)
                switch form {
                case .live:
                    text = text.replacingOccurrences(of: "#EXT-X-ENDLIST\n", with: "")
                        .replacingOccurrences(of: "#EXT-X-PLAYLIST-TYPE:VOD\n", with: "")
                case .event:
                    text = text.replacingOccurrences(of: "#EXT-X-PLAYLIST-TYPE:VOD", with: "#EXT-X-PLAYLIST-TYPE:EVENT")
                }
                body = Array(text.utf8)
            }
            var headers = HTTPHeaders()
            for field in answer.headers where field.name.lowercased() == "content-type" { headers.add(field.name, field.value) }
            return HTTPResponse(status: answer.status, headers: headers, body: .bytes(body))
        }
        try server.start()
    }

    var baseURL: String { "http://127.0.0.1:\(server.port)" }
    func forward(to backend: String) { state.withLock { $0.backend = backend } }
    var segments: Int { state.withLock { $0.segments } }
}

@Suite("Live and event streams are refused, live")
struct LiveStreamTests {
    @Test("a live or event playlist is refused with 69301 before anything is stored or fetched, for a download and an estimate", arguments: [
        LiveStreamProxy.Form.live, .event,
    ])
    func refused(form: LiveStreamProxy.Form) async throws {
        let proxy = try LiveStreamProxy(form)
        try await withBackend({ $0.publicBaseURL = proxy.baseURL }) { server in
            proxy.forward(to: "http://127.0.0.1:\(server.port)")
            try await withHarness(server) { h in
                let service = PlaybackService(baseURL: proxy.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
                let video = try await service.findVideo(id: Catalog.clearVideo)
                let refused = await #expect(throws: OfflineVideoError.self) {
                    try await h.manager.requestVideoDownload(video, mediaSelections: nil, parameters: nil)
                }
                #expect(refused?.code == .unsupported && refused?.reason == .liveNotSupported, "\(String(describing: refused))")
                let kind = form == .live ? "a live playlist (no EXT-X-ENDLIST)" : "an event playlist (EXT-X-PLAYLIST-TYPE:EVENT)"
                #expect(refused?.message.contains(kind) == true && refused?.message.contains("only finished video on demand") == true,
                        "\(refused?.message ?? "")")
                let estimate = await #expect(throws: OfflineVideoError.self) {
                    _ = try await h.manager.estimateDownloadSize(video)
                }
                #expect(estimate?.reason == .liveNotSupported)
                #expect(try await h.manager.offlineVideoStatus().isEmpty, "nothing stored")
                let packages = h.storage.url.appendingPathComponent("packages").path
                #expect((try? FileManager.default.contentsOfDirectory(atPath: packages))?.isEmpty ?? true, "no package folder")
                #expect(proxy.segments == 0, "no segment fetched")
            }
        }
        await proxy.server.shutdown(gracePeriod: .seconds(1))
    }
}
