import Foundation

/// Loads the files under `Resources/` (copied into the test bundle as one folder).
enum TestResources {
    struct Missing: Error, CustomStringConvertible {
        let path: String
        var description: String { "test resource \(path) not found" }
    }

    static func data(_ path: String) throws -> Data {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().relativePath
        guard let found = Bundle.module.url(
            forResource: url.lastPathComponent, withExtension: nil,
            subdirectory: folder == "." ? "Resources" : "Resources/\(folder)")
        else { throw Missing(path: path) }
        return try Data(contentsOf: found)
    }

    static func text(_ path: String) throws -> String {
        String(decoding: try data(path), as: UTF8.self)
    }
}

/// Canonical JSON text (sorted keys, no whitespace) for comparing documents regardless of layout.
func canonicalJSON(_ data: Data) throws -> String {
    let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
    let canonical = try JSONSerialization.data(
        withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
    return String(decoding: canonical, as: UTF8.self)
}

/// The top-level JSON object of `data`.
func jsonObject(_ data: Data) throws -> [String: Any] {
    try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
}
