import Foundation
import Logging
import Synchronization
import TestKit
import Testing
import WireModels
@testable import MockBackend

/// Secrets in request targets are redacted by the name the server reads (percent-decoded),
/// wherever a target is shown: the request log, its live stream, the dashboard, the log lines.
@Suite("Redaction: secret query values, by their decoded name, everywhere a URL is shown")
struct RedactionTests {
    @Test("a secret parameter is redacted however its name is spelled; other parameters and the path stay as they came")
    func spellings() {
        for target in ["/m?fastly_token=SECRET", "/m?fastly%5Ftoken=SECRET", "/m?fastly%5ftoken=SECRET", "/m?%66astly_token=SECRET",
                       "/m?FASTLY%5FTOKEN=SECRET", "/m?a=1&policy%5Fkey=SECRET&b=2", "/m?j%77t=SECRET", "/m?bad%zzname=SECRET"] {
            let shown = SecretRedaction.redact(target)
            #expect(!shown.contains("SECRET"), "\(target) shown as \(shown)")
            #expect(shown.hasPrefix("/m?") && shown.contains("=…"), "\(shown)")
        }
        #expect(SecretRedaction.redact("/m?a=1&fastly%5Ftoken=SECRET&b=%41") == "/m?a=1&fastly%5Ftoken=…&b=%41")
        #expect(SecretRedaction.redact("/media/v1/x.ts") == "/media/v1/x.ts")
        #expect(SecretRedaction.redact("/m?TOKEN=S1&x=1&Key=S2&&jwt=") == "/m?TOKEN=…&x=1&Key=…&&jwt=…")
        #expect(SecretRedaction.redact("/m?x=1&y=%E2%80%A6&z") == "/m?x=1&y=%E2%80%A6&z")
        #expect(SecretRedaction.redact("/m?\u{212A}ey=SECRET") == "/m?\u{212A}ey=…", "the Kelvin sign lowercases to k")
        #expect(SecretRedaction.redact("/m?fastly_tokens=kept&tokenless&=x") == "/m?fastly_tokens=kept&tokenless&=x")
    }

    @Test("a valid token sent as ?fastly%5Ftoken= is accepted, and neither the request log, its stream, the dashboard nor the log line shows it")
    func everywhere() async throws {
        let lines = LoggedLines()
        let logger = Logger(label: "redaction") { _ in CapturingLogHandler(lines: lines) }
        try await withTemporaryDirectory { directory in
            var configuration = BackendConfiguration(dataDirectory: directory)
            configuration.port = 0
            let server = try MockBackendServer.start(configuration: configuration, logger: logger)
            defer { server.shutdown(gracePeriod: .zero) }
            let url = try await FaultLiveTests.segmentURL(server)
            let token = try #require(URLComponents(string: url)?.queryItems?.first { $0.name == "fastly_token" }?.value)
            let encoded = url.replacingOccurrences(of: "?fastly_token=", with: "?fastly%5Ftoken=")
            try #require(encoded != url)

            let follower = try RunningProcess("/usr/bin/curl", ["-sS", "-N", "-H", "Authorization: Bearer \(server.app.adminToken)",
                                                                server.baseURL + "/_admin/v1/requests/stream?path_prefix=/media"])
            #expect(try await eventually { server.activeRequests >= 1 })
            let segment = try await Curl.fetch(encoded)
            #expect(segment.status == 200, "the server reads the decoded name: the token is accepted")
            #expect(try await follower.waitForOutput { !completeServerSentEvents($0, type: "request").isEmpty })
            follower.kill(SIGTERM)
            let streamed = await follower.wait().stdoutText
            #expect(streamed.contains("fastly%5Ftoken=…") && !streamed.contains(token), "\(streamed)")

            let logged = try #require(server.app.requestLog.entries(RequestLog.Filter(pathPrefix: "/media")).last)
            #expect(logged.path.hasSuffix("fastly%5Ftoken=…") && !logged.path.contains(token), "\(logged.path)")
            let listing = try await FaultLiveTests.admin(server, "GET", "/_admin/v1/requests?path_prefix=/media")
            #expect(listing.status == 200 && !listing.text.contains(token))

            let cookie = try DashboardTests.signIn(server.app)
            let page = try DashboardTests.page(server.app, cookie: cookie).text()
            #expect(page.contains("fastly%5Ftoken=…") && !page.contains(token))

            // The log line is written when the answer has gone out, as the request log's entry is.
            #expect(try await eventually { lines.all.contains { $0.contains("fastly%5Ftoken=…") } })
            #expect(lines.all.allSatisfy { !$0.contains(token) }, "\(lines.all)")
        }
    }
}

/// The messages a `CapturingLogHandler` kept.
final class LoggedLines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    func append(_ line: String) { lines.withLock { $0.append(line) } }
}

/// Keeps every message logged, for tests that read what a server wrote to its log.
struct CapturingLogHandler: LogHandler {
    let lines: LoggedLines
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.append(event.message.description)
    }
}
