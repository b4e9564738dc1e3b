import Foundation
import MicroHTTP
import WireModels

/// JSON request bodies of the admin API: objects read leniently enough to merge, decoded
/// strictly, and every refusal a sentence a person can act on.
enum JSONBody {
    /// The body as a JSON object, or a refusal saying what to send.
    static func object(_ body: [UInt8], example: String) throws(CatalogEditError) -> [String: Any] {
        guard !body.isEmpty, let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw CatalogEditError(.invalid, "INVALID_BODY", "Send a JSON object, e.g. \(example)")
        }
        return object
    }

    /// `target` with `patch` merged in as RFC 7396 says: members of `patch` replace those of
    /// `target`, objects merge member by member, and `null` removes a member.
    static func mergePatch(_ target: [String: Any], _ patch: [String: Any]) -> [String: Any] {
        var result = target
        for (key, value) in patch {
            if value is NSNull {
                result.removeValue(forKey: key)
            } else if let object = value as? [String: Any] {
                result[key] = mergePatch(result[key] as? [String: Any] ?? [:], object)
            } else {
                result[key] = value
            }
        }
        return result
    }

    /// `value` as a JSON object (how it encodes).
    static func encodeObject(_ value: some Encodable) -> [String: Any] {
        guard let data = try? JSONEncoder().encode(value),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return object
    }

    /// Decodes `object` as `T`, or refuses with the field that is missing or wrong.
    static func decode<T: Decodable>(_ type: T.Type, from object: [String: Any], subcode: String) throws(CatalogEditError) -> T {
        do {
            let data = try JSONSerialization.data(withJSONObject: object)
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw CatalogEditError(.invalid, subcode, describe(error))
        } catch {
            throw CatalogEditError(.invalid, subcode, "\(error)")
        }
    }

    /// A decoding error in words: which field, and what was wrong with it.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ key: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath + (key.map { [$0] } ?? [])
            let text = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return text.hasPrefix(".") ? String(text.dropFirst()) : text
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context, key)) is required"
        case .typeMismatch(let type, let context): return "\(path(context)) must be \(describe(type))"
        case .valueNotFound(let type, let context): return "\(path(context)) must be \(describe(type)), not null"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "the body is not valid JSON" : "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Double.Type: "a number"
        case is [String].Type: "an array of strings"
        case is [String: String].Type: "an object of strings"
        default: "\(type)".hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

extension JSONBody {
    /// The first `null` member of a JSON object, or of any object of a JSON array, as
    /// `[index].name` (or `name`); nil when there is none or the body is not JSON. Where the
    /// spec types a member (an integer, an object) `null` is not one of its values: a body
    /// with one is refused, not read as if the member were absent.
    static func nullMember(in body: [UInt8]) -> String? {
        guard let json = try? JSONSerialization.jsonObject(with: Data(body)) else { return nil }
        func member(of object: [String: Any]) -> String? { object.filter { $0.value is NSNull }.keys.sorted().first }
        if let object = json as? [String: Any] { return member(of: object) }
        for (index, element) in (json as? [Any] ?? []).enumerated() {
            if let object = element as? [String: Any], let name = member(of: object) { return "[\(index)].\(name)" }
        }
        return nil
    }

    /// Refuses a request whose JSON body or query holds a NUL character (U+0000), before any
    /// handler: no store keeps it the same way (PostgreSQL text cannot hold it at all), and no
    /// field of this API means anything with one. Paths are refused earlier (`RequestTarget`).
    static func refuseNUL(in request: HTTPRequest) throws(HTTPError) {
        if request.query.contains(where: { $0.name.utf8.contains(0) || $0.value.utf8.contains(0) }) {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_PARAMETER", "Query parameters may not contain a NUL character (%00)")
        }
        if containsNULEscape(request.body) {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_BODY", "Strings in the body may not contain a NUL character (\\u0000)")
        }
    }

    /// Whether JSON text holds the escape `\u0000` as an escape: its backslash
    /// is not itself escaped (`\\u0000` is a backslash and the letters `u0000`). JSON strings
    /// cannot hold a raw NUL, so this is the only way one arrives.
    static func containsNULEscape(_ body: [UInt8]) -> Bool {
        let backslash = UInt8(ascii: "\\")
        var index = 0
        while index < body.count {
            guard body[index] == backslash else { index += 1; continue }
            // An escape: `\u` and four hex digits, or a backslash and one character.
            if index + 5 < body.count, body[index + 1] == UInt8(ascii: "u"),
               body[(index + 2)...(index + 5)].allSatisfy({ $0 == UInt8(ascii: "0") }) {
                return true
            }
            index += 2
        }
        return false
    }
}
