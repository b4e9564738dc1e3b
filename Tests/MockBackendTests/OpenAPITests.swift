import Foundation
import MockBackend
import Testing

/// docs/openapi.yaml against the router: every route the app answers is described there, and
/// every operation described there is routed. Patterns compare as the router writes them
/// (`{name}` in the spec is `:name`), so path-parameter names must agree too.
@Suite("OpenAPI: docs/openapi.yaml and the router")
struct OpenAPITests {
    static let specFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.yaml")

    @Test("every routed method and path is in docs/openapi.yaml, and every operation there is routed")
    func specMatchesRouter() async throws {
        let text = try String(contentsOf: Self.specFile, encoding: .utf8)
        let specified = OpenAPIPaths.operations(inYAML: text)
        try await withApp { app, _ in
            let routed = Set(app.routePatterns.map { "\($0.method) \($0.pattern)" })
            #expect(!routed.isEmpty, "the app lists no routes (MockBackendApp.routePatterns)")
            #expect(!specified.isEmpty, "no operations read from \(Self.specFile.path)")
            let undocumented = routed.subtracting(specified).sorted()
            let unrouted = specified.subtracting(routed).sorted()
            #expect(undocumented.isEmpty, "routed but missing from docs/openapi.yaml:\n  \(undocumented.joined(separator: "\n  "))")
            #expect(unrouted.isEmpty, "in docs/openapi.yaml but not routed:\n  \(unrouted.joined(separator: "\n  "))")
        }
    }

    @Test("the paths reader: 2-space path keys, 4-space method keys, quotes, comments, the end of paths")
    func reader() {
        let yaml = """
            openapi: 3.1.0
            info:
              title: x
            paths:
              # a comment
              /a/{id}:
                parameters:
                  - name: id
                get:
                  responses: {}
                post:
                  description: "get: not a method"
              '/b/{x}/c.m3u8':
                summary: nothing routed
                delete: {}

              "/c":
                put: {}
                patch: {}
            components:
              schemas:
                get: {}
            """
        #expect(OpenAPIPaths.operations(inYAML: yaml) == ["GET /a/:id", "POST /a/:id", "DELETE /b/:x/c.m3u8", "PUT /c", "PATCH /c"])
    }
}

/// A reader for the `paths:` section of an OpenAPI YAML file as this project writes it: paths
/// are 2-space-indented keys under a top-level `paths:`, methods 4-space-indented keys under them.
enum OpenAPIPaths {
    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// `METHOD /pattern` for every operation, with `{name}` written `:name`.
    static func operations(inYAML text: String) -> Set<String> {
        var operations: Set<String> = []
        var inPaths = false
        var path: String?
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let trimmed = line.drop { $0 == " " }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let indent = line.count - trimmed.count
            if indent == 0 {
                inPaths = trimmed.hasPrefix("paths:")
                path = nil
                continue
            }
            guard inPaths, let key = key(of: trimmed) else { continue }
            if indent == 2 {
                path = key.hasPrefix("/") ? routerPattern(key) : nil
            } else if indent == 4, let path, methods.contains(key) {
                operations.insert("\(key.uppercased()) \(path)")
            }
        }
        return operations
    }

    /// The key of a `key:` or `key: value` line, without quotes; nil for list items and the like.
    private static func key(of line: Substring) -> String? {
        if line.hasPrefix("'") || line.hasPrefix("\"") {
            let quote = line.first!
            guard let end = line.dropFirst().firstIndex(of: quote) else { return nil }
            let after = line[line.index(after: end)...]
            return after.hasPrefix(":") ? String(line[line.index(after: line.startIndex)..<end]) : nil
        }
        guard !line.hasPrefix("-"), let colon = line.firstIndex(of: ":") else { return nil }
        let rest = line[line.index(after: colon)...]
        guard rest.isEmpty || rest.hasPrefix(" ") else { return nil }
        return String(line[..<colon])
    }

    /// `/a/{id}/b` → `/a/:id/b`.
    private static func routerPattern(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix("{") && segment.hasSuffix("}") ? ":" + segment.dropFirst().dropLast() : segment
        }.joined(separator: "/")
    }
}
