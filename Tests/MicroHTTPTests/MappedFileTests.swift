import Foundation
@testable import MicroHTTP
import TestKit
import Testing

@Suite("File bodies sent from memory-mapped files")
struct MappedFileTests {
    @Test("mapped and sendfile answers are byte-identical, whole and ranged; files past the budget fall back to sendfile",
          arguments: [0, 64 * 1024, 16 * 1024 * 1024])
    func mappedFiles(limit: Int) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let small = randomBytes(40_000), large = randomBytes(300_000)
        try Data(small).write(to: folder.url.appendingPathComponent("small.ts"))
        try Data(large).write(to: folder.url.appendingPathComponent("large.ts"))
        let root = folder.url.path
        try await withServer({ $0.mappedFileBytesLimit = limit }, handler: { request in
            HTTPResponse.file(at: root + request.path, contentType: "video/mp2t") ?? .text("gone", status: 404)
        }) { _, base in
            for _ in 0..<2 {  // the second round is served from the mappings made by the first
                for (name, bytes) in [("small.ts", small), ("large.ts", large)] {
                    let whole = try await Curl.fetch("\(base)/\(name)")
                    #expect(whole.status == 200)
                    #expect(whole.body == bytes, "\(name) with a \(limit)-byte budget")
                    let ranged = try await Curl.fetch("\(base)/\(name)", ["-r", "1000-29999"])
                    #expect(ranged.status == 206)
                    #expect(ranged.body == Array(bytes[1000...29999]))
                    let suffix = try await Curl.fetch("\(base)/\(name)", ["-r", "-500"])
                    #expect(suffix.body == Array(bytes.suffix(500)))
                }
            }
            let missing = try await Curl.fetch("\(base)/none.ts")
            #expect(missing.status == 404)
        }
    }

    @Test("the mapping budget: nothing with limit 0, files that fit are mapped, a file past it is refused (and stays so)")
    func budget() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let small = folder.url.appendingPathComponent("small.ts").path, large = folder.url.appendingPathComponent("large.ts").path
        try Data(randomBytes(40_000)).write(to: URL(fileURLWithPath: small))
        try Data(randomBytes(300_000)).write(to: URL(fileURLWithPath: large))
        #expect(MappedFiles(limit: 0).bytes(path: small, offset: 0, length: 40_000) == nil)
        let files = MappedFiles(limit: 64 * 1024)
        let mapped = try #require(files.bytes(path: small, offset: 0, length: 40_000))
        #expect(files.bytes(path: small, offset: 100, length: 10) == mapped + 100, "one mapping, kept")
        #expect(files.bytes(path: small, offset: 39_990, length: 11) == nil, "a range past the end")
        #expect(files.bytes(path: large, offset: 0, length: 10) == nil, "past the budget")
        try Data(randomBytes(10)).write(to: URL(fileURLWithPath: large))
        #expect(files.bytes(path: large, offset: 0, length: 10) == nil, "a refused file is not tried again")
    }
}
