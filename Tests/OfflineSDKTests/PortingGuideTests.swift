import Foundation
import Testing

/// docs/porting-from-brightcove.md has a row for every public member of the manager, its
/// delegate and the task API: the members are read from the sources, so a member added without
/// a row fails here.
@Suite("The porting guide covers the public API")
struct PortingGuideTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The types whose public members the guide maps, and whether they are protocols.
    static let types: [(name: String, isProtocol: Bool)] = [
        ("OfflineVideoManager", false), ("OfflineVideoManagerDelegate", true), ("DownloadManager", false),
        ("DownloadManagerDelegate", true), ("DownloadTask", false), ("LicenseFetcher", false), ("DownloadRequest", false),
    ]

    @Test("every public member of the manager, its delegate and the task API has a row in the porting guide")
    func everyMemberHasARow() throws {
        let guide = try String(contentsOf: Self.root.appendingPathComponent("docs/porting-from-brightcove.md"), encoding: .utf8)
        let rows = guide.split(separator: "\n").filter { $0.hasPrefix("|") }.joined(separator: "\n")
        var members: [String: Set<String>] = [:]
        let sources = try Self.swiftFiles(Self.root.appendingPathComponent("Client/OfflineSDK"))
        for file in sources {
            let text = try String(contentsOf: file, encoding: .utf8)
            for (type, isProtocol) in Self.types {
                members[type, default: []].formUnion(APIScan.members(of: type, isProtocol: isProtocol, in: text))
            }
        }
        // The scan itself works: members everyone knows are found.
        #expect(members["OfflineVideoManager"]?.contains("requestVideoDownload(_:mediaSelections:parameters:)") == true)
        #expect(members["OfflineVideoManager"]?.contains("authProxy") == true)
        #expect(members["OfflineVideoManagerDelegate"]?.contains("offlineVideoToken(_:didFinishDownloadWithError:)") == true)
        #expect(members["DownloadManager"]?.contains("enqueue(request:)") == true)
        for (type, names) in members.sorted(by: { $0.key < $1.key }) {
            #expect(!names.isEmpty, "no public member of \(type) found: the scan is broken")
            for name in names.sorted() where !rows.contains("`\(name)`") && !rows.contains("`\(type).\(name)`") {
                Issue.record("docs/porting-from-brightcove.md has no row for \(type).\(name): add one beside its Brightcove or Quickplay counterpart")
            }
        }
    }

    @Test("the scan reads declarations as the compiler names them")
    func scan() {
        let text = """
        public actor Thing {
            public func a(_ x: Int, label y: Int,
                          z: (Int, Int) -> Void) async throws(E) -> Int { 0 }
            func hidden() {}
            public nonisolated var b: Int { get { 1 } set {} }
            public static func c() {}
            public static func == (a: Thing, b: Thing) -> Bool { true }
            public init(d: Int) {}
            public struct Inner { public func notAMember() {} }
        }
        extension Thing {
            public var e: [Int] { get throws(E) { [] } }
        }
        public protocol P {
            func f(_ t: String, g h: Int)
            var i: Int { get }
        }
        """
        #expect(APIScan.members(of: "Thing", isProtocol: false, in: text) == ["a(_:label:z:)", "b", "c()", "init(d:)", "Inner", "e"])
        #expect(APIScan.members(of: "P", isProtocol: true, in: text) == ["f(_:g:)", "i"])
    }

    static func swiftFiles(_ folder: URL) throws -> [URL] {
        let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        return (walker?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "swift" }
    }
}

/// Reads public member declarations out of Swift source text: enough of the grammar for this
/// package's style (one declaration per line start, balanced braces and parentheses).
enum APIScan {
    /// The members declared directly in `type`'s body or its extensions: `name(label:…)` for
    /// functions and initializers, the name for properties and nested types. Public ones only,
    /// except in a protocol, where every requirement counts.
    static func members(of type: String, isProtocol: Bool, in text: String) -> Set<String> {
        var found: Set<String> = []
        let characters = Array(text)
        let openers = isProtocol ? ["public protocol \(type)"] : ["public actor \(type)", "public final class \(type)", "public struct \(type)",
                                                                     "public class \(type)", "extension \(type)"]
        var index = 0
        while index < characters.count {
            guard let start = openers.compactMap({ find($0, in: characters, from: index) }).min() else { break }
            // The opener must name the type exactly (not `OfflineVideoManagerDelegate` for `OfflineVideoManager`).
            let opener = openers.first { match($0, in: characters, at: start) }!
            let after = start + opener.count
            guard after < characters.count, !(characters[after].isLetter || characters[after].isNumber || characters[after] == "_"),
                  let open = characters[after...].firstIndex(of: "{") else { index = after; continue }
            let close = matching(characters, open)
            let body = String(characters[(open + 1)..<close])
            found.formUnion(topLevelDeclarations(body, requirePublic: !isProtocol))
            index = close + 1
        }
        return found
    }

    private static func topLevelDeclarations(_ body: String, requirePublic: Bool) -> Set<String> {
        var found: Set<String> = []
        let characters = Array(body)
        var depth = 0, lineStart = true, index = 0
        while index < characters.count {
            let character = characters[index]
            if character == "\n" { lineStart = true; index += 1; continue }
            if lineStart, depth == 0, !character.isWhitespace {
                lineStart = false
                let line = String(characters[index..<(characters[index...].firstIndex(of: "\n") ?? characters.count)])
                if let member = declaration(line, rest: characters, at: index, requirePublic: requirePublic) { found.insert(member) }
            }
            if !character.isWhitespace { lineStart = false }
            if character == "{" || character == "(" || character == "[" { depth += 1 }
            if character == "}" || character == ")" || character == "]" { depth -= 1 }
            if character == "\"" {  // skip string literals (they may hold braces)
                index += 1
                while index < characters.count, characters[index] != "\"" { index += characters[index] == "\\" ? 2 : 1 }
            }
            index += 1
        }
        return found
    }

    private static func declaration(_ line: String, rest: [Character], at position: Int, requirePublic: Bool) -> String? {
        var words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        if words.first?.hasPrefix("@") == true { words.removeFirst() }
        if requirePublic {
            guard words.first == "public" else { return nil }
        }
        let modifiers: Set<String> = ["public", "static", "nonisolated", "final", "mutating", "nonmutating", "@discardableResult", "override"]
        while let first = words.first, modifiers.contains(first) || first.hasPrefix("internal(") || first.hasPrefix("private(") { words.removeFirst() }
        guard let keyword = words.first.map({ String($0.prefix { $0.isLetter }) }) else { return nil }
        switch keyword {
        case "func", "init":
            let text = String(rest[position...])
            guard let paren = text.firstIndex(of: "(") else { return nil }
            guard let nameStart = keyword == "init" ? text.startIndex : text.range(of: "func ")?.upperBound else { return nil }
            let name = keyword == "init" ? "init" : String(text[nameStart..<paren].prefix { $0 != "<" }).trimmingCharacters(in: .whitespaces)
            // Operators and `hash(into:)` are Equatable and Hashable boilerplate, not API to port.
            guard name == "init" || name.first?.isLetter == true, name != "hash" else { return nil }
            let characters = Array(text)
            let open = text.distance(from: text.startIndex, to: paren)
            let close = matching(characters, open)
            let parameters = splitTopLevel(String(characters[(open + 1)..<close]))
            let labels = parameters.compactMap { parameter -> String? in
                guard let colon = parameter.firstIndex(of: ":") else { return nil }
                return parameter[..<colon].split(separator: " ").first.map(String.init)
            }
            return name + "(" + labels.map { $0 + ":" }.joined() + ")"
        case "var", "let":
            return words.dropFirst().first.map { String($0.prefix { $0.isLetter || $0.isNumber || $0 == "_" }) }
        case "struct", "enum", "class", "actor", "typealias", "protocol":
            return words.dropFirst().first.map { String($0.prefix { $0.isLetter || $0.isNumber || $0 == "_" }) }
        default:
            return nil
        }
    }

    private static func splitTopLevel(_ text: String) -> [String] {
        var parts: [String] = [], current = "", depth = 0
        for character in text {
            if "([{<".contains(character) { depth += 1 }
            if ")]}>".contains(character) { depth -= 1 }
            if character == ",", depth == 0 {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { parts.append(current) }
        return parts.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    private static func find(_ needle: String, in characters: [Character], from: Int) -> Int? {
        let pattern = Array(needle)
        guard characters.count >= pattern.count else { return nil }
        var index = from
        while index + pattern.count <= characters.count {
            if Array(characters[index..<(index + pattern.count)]) == pattern, index == 0 || characters[index - 1] == "\n" { return index }
            index += 1
        }
        return nil
    }

    private static func match(_ needle: String, in characters: [Character], at index: Int) -> Bool {
        let pattern = Array(needle)
        return index + pattern.count <= characters.count && Array(characters[index..<(index + pattern.count)]) == pattern
    }

    /// The index of the bracket closing the one at `open`.
    private static func matching(_ characters: [Character], _ open: Int) -> Int {
        var depth = 0, index = open
        while index < characters.count {
            let character = characters[index]
            if "([{".contains(character) { depth += 1 }
            if ")]}".contains(character) {
                depth -= 1
                if depth == 0 { return index }
            }
            if character == "\"" {
                index += 1
                while index < characters.count, characters[index] != "\"" { index += characters[index] == "\\" ? 2 : 1 }
            }
            index += 1
        }
        return characters.count - 1
    }
}
