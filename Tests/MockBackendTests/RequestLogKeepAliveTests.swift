import Foundation
import MicroHTTP
import MockBackend
import Testing
import TestKit
import WireModels

/// The request log records an answer before its last byte leaves (issue 26).
@Suite("Request log: every answer a client holds is in it, live")
struct RequestLogKeepAliveTests {
    // MARK: 9. The request log holds every answer a client holds

    @Test("the log read right after each of 300 answers on a keep-alive connection finds every one; completed follows")
    func requestLogKeepsUp() async throws {
        try await withLiveServer { server in
            let token = server.app.adminToken
            let port = server.port
            let missing = try await offPool { () throws -> [Int] in
                let answers = try KeepAliveConnection(port: port)
                let log = try KeepAliveConnection(port: port)
                var missing: [Int] = []
                for index in 0..<300 {
                    let answer = try answers.get("/healthz?probe=\(index)")
                    guard answer.status == 200 else { throw KeepAliveConnection.Failure("probe \(index): \(answer.status)") }
                    let listing = try log.get("/_admin/v1/requests?limit=1&path_prefix=/healthz", headers: ["Authorization: Bearer \(token)"])
                    let entries = try JSONDecoder().decode(Listing.self, from: Data(listing.body)).requests
                    if entries.last?.path != "/healthz?probe=\(index)" { missing.append(index) }
                }
                // On the answers' own connection the last one has ended before the next is read.
                let final = try answers.get("/_admin/v1/requests?path_prefix=/healthz", headers: ["Authorization: Bearer \(token)"])
                let entries = try JSONDecoder().decode(Listing.self, from: Data(final.body)).requests
                guard entries.count == 300, entries.allSatisfy({ $0.completed && $0.status == 200 && $0.bytes > 0 }) else {
                    throw KeepAliveConnection.Failure("entries after the run: \(entries.count), not all completed: \(entries.filter { !$0.completed }.map(\.path))")
                }
                return missing
            }
            #expect(missing.isEmpty, "log reads that missed their answer: \(missing.count) of 300")
        }
    }

    struct Listing: Decodable {
        struct Entry: Decodable { var path: String; var status: Int; var bytes: Int; var completed: Bool }
        var requests: [Entry]
    }
}
