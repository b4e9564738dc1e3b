public import Foundation

/// JSON coders configured for the wire: ISO-8601 dates with milliseconds, unescaped slashes.
///
/// The wire types in this module encode their dates and nulls themselves, so they come out right
/// under any `JSONEncoder`; these factories make everything else (and ad-hoc `Date` values) agree.
public enum WireJSON {
    /// An encoder writing dates as `2024-03-01T12:00:00.000Z` and URLs without `\/` escapes.
    public static func encoder(sortedKeys: Bool = false, prettyPrinted: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        var formatting: JSONEncoder.OutputFormatting = [.withoutEscapingSlashes]
        if sortedKeys { formatting.insert(.sortedKeys) }
        if prettyPrinted { formatting.insert(.prettyPrinted) }
        encoder.outputFormatting = formatting
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(WireDate.string(from: date))
        }
        return encoder
    }

    /// A decoder reading ISO-8601 dates with or without fractional seconds.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = WireDate.date(from: text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "Expected an ISO-8601 timestamp, found \"\(text)\"")
            }
            return date
        }
        return decoder
    }
}

// Helpers the wire types use so their JSON does not depend on the coder's strategies.
extension KeyedEncodingContainer {
    /// Writes `date` as a wire timestamp string.
    mutating func encodeWireDate(_ date: Date, forKey key: Key) throws {
        try encode(WireDate.string(from: date), forKey: key)
    }

    /// Writes `value`, or an explicit JSON `null` when it is nil (the Playback API emits nulls).
    mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value {
            try encode(value, forKey: key)
        } else {
            try encodeNil(forKey: key)
        }
    }
}

extension KeyedDecodingContainer {
    /// Reads a wire timestamp string; also accepts whatever the decoder's date strategy yields.
    func decodeWireDate(forKey key: Key) throws -> Date {
        if let text = try? decode(String.self, forKey: key) {
            guard let date = WireDate.date(from: text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: self, debugDescription: "Expected an ISO-8601 timestamp, found \"\(text)\"")
            }
            return date
        }
        return try decode(Date.self, forKey: key)
    }

    /// Reads a collection that the real API always sends but a hand-written body may leave out or null.
    func decodeOrEmpty<T: Decodable & RangeReplaceableCollection>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeIfPresent(type, forKey: key) ?? T()
    }

    /// Reads a dictionary that may be absent or null.
    func decodeOrEmpty<Value: Decodable>(_ type: [String: Value].Type, forKey key: Key) throws -> [String: Value] {
        try decodeIfPresent(type, forKey: key) ?? [:]
    }
}
