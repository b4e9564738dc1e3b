import CurlTransfer
import Foundation
import Logging
import MicroHTTP
import MockBackend
@testable import OfflineSDK
import Locking
import TestKit
import Testing

/// A proxy in front of the mock backend that fails two of every three segment requests it
/// forwards (503; never more than two in a row; MPEG-TS and CMAF alike), counting what it did.
final class FlakyProxy: Sendable {
    let server: HTTPServer
    private let counters = Counters()

    final class Counters: Sendable {
        let state = Locked<(backend: String, segments: Int, failed: Int)>(("", 0, 0))
    }

    init() throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let counters = self.counters
        let client = HTTPClient()
        server = HTTPServer(configuration: configuration, logger: quietLogger) { request in
            let (backend, fail) = counters.state.withLock { state -> (String, Bool) in
                guard [".ts", ".m4s", ".mp4"].contains(where: request.path.hasSuffix) else { return (state.backend, false) }
                state.segments += 1
                let fail = state.segments % 3 != 0
                if fail { state.failed += 1 }
                return (state.backend, fail)
            }
            if fail { return .text("try again\n", status: 503) }
            let forwarded = request.headers.filter { !["host", "content-length", "connection"].contains($0.name.lowercased()) }
                .map { ($0.name, $0.value) }
            guard let answer = try? await client.send(HTTPClientRequest(url: backend + request.target, headers: forwarded)) else {
                return .text("backend gone\n", status: 502)
            }
            var headers = HTTPHeaders()
            for field in answer.headers where ["content-type", "content-range"].contains(field.name.lowercased()) {
                headers.add(field.name, field.value)
            }
            return HTTPResponse(status: answer.status, headers: headers, body: .bytes(answer.body))
        }
        try server.start()
    }

    var baseURL: String { "http://127.0.0.1:\(server.port)" }
    func forward(to backend: String) { counters.state.withLock { $0.backend = backend } }
    var failed: Int { counters.state.withLock { $0.failed } }
}

@Suite("Downloads on a slow disk, live")
struct SlowDiskTests {
    @Test("failures between bodies that arrived whole do not fail a download whose commits lag behind; commits hold the network back",
          arguments: PackageFormat.allCases)
    func slowCommitsAndFailures(_ format: PackageFormat) async throws {
        let proxy = try FlakyProxy()
        let disk = Gate()  // every commit waits here: a disk that does not keep up
        try await withBackend({ $0.publicBaseURL = proxy.baseURL }) { server in
            proxy.forward(to: "http://127.0.0.1:\(server.port)")
            try await format.prepare(server)
            // The proxy answers from the test pool, which can be half a minute late at the start
            // of a full run: request timeouts well past that (ceilings, never waits).
            try await withHarness(server, { configuration in
                format.configure(&configuration)
                configuration.beforeCommit = { await disk.wait() }
                configuration.segmentsInParallel = 2
                configuration.requestTimeout = .seconds(120)
            }) { h in
                var patient = TransferEngine.Configuration()
                patient.requestTimeout = .seconds(120)
                let service = PlaybackService(baseURL: proxy.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey,
                                              client: HTTPClient(engine: TransferEngine(configuration: patient)))
                let token = try await h.manager.requestVideoDownload(try await service.findVideo(id: Catalog.clearVideo),
                                                                     mediaSelections: nil, parameters: nil)
                // More than 5 failures happen while not one commit has finished, and bodies keep
                // arriving between them: the download goes on. With 4 requests outstanding, the
                // runner stops asking once 4 bodies wait for the disk (those already under way
                // still land: at most 7).
                #expect(try await eventually { proxy.failed >= 6 && disk.waiting >= 4 })
                #expect(disk.waiting <= 7, "back-pressure: \(disk.waiting) bodies wait for their commit")
                #expect(try await h.manager.status(token).downloadState == .downloading)
                disk.open()
                #expect(try await h.events.finished(token) == nil)
                try await expectPlays(h.manager, token)
            }
        }
        await proxy.server.shutdown(gracePeriod: .seconds(1))
    }
}
