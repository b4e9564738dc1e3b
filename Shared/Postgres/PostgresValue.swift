/// A value sent as a statement parameter or read from a result column. Parameters are always
/// bound (`$1`, `$2`, …), never spliced into the SQL text.
package enum PostgresValue: Sendable, Equatable {
    case null
    case text(String)
    case bytes([UInt8])
    case int(Int64)
    case double(Double)
    case bool(Bool)

    /// `.text`, or `.null` for nil.
    package init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    /// `.int`, or `.null` for nil.
    package init(_ value: Int?) { self = value.map { .int(Int64($0)) } ?? .null }
    /// `.int`, or `.null` for nil.
    package init(_ value: Int64?) { self = value.map { .int($0) } ?? .null }
    /// `.double`, or `.null` for nil.
    package init(_ value: Double?) { self = value.map { .double($0) } ?? .null }
    /// `.bool`, or `.null` for nil.
    package init(_ value: Bool?) { self = value.map { .bool($0) } ?? .null }
    /// `.bytes`, or `.null` for nil.
    package init(_ value: [UInt8]?) { self = value.map { .bytes($0) } ?? .null }

    /// A one-dimensional array as PostgreSQL's text form (`{"a",NULL,"b \\"c\\""}`), for a
    /// parameter cast in the statement (`$1::text[]`, `$2::float8[]`, `unnest($1::text[], …)`):
    /// each element quoted, backslashes and double quotes escaped; nil is NULL.
    package static func array(_ elements: [String?]) -> PostgresValue {
        var literal: [UInt8] = [UInt8(ascii: "{")]
        for (index, element) in elements.enumerated() {
            if index > 0 { literal.append(UInt8(ascii: ",")) }
            guard let element else {
                literal += "NULL".utf8
                continue
            }
            literal.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") { literal.append(UInt8(ascii: "\\")) }
                literal.append(byte)
            }
            literal.append(UInt8(ascii: "\""))
        }
        literal.append(UInt8(ascii: "}"))
        return .text(String(decoding: literal, as: UTF8.self))
    }

    /// A name for messages.
    var kind: String {
        switch self {
        case .null: "NULL"
        case .text: "text"
        case .bytes: "bytea"
        case .int: "integer"
        case .double: "float8"
        case .bool: "boolean"
        }
    }
}

/// A Swift type a result column decodes to.
package protocol PostgresDecodable {
    /// The Swift value of `value` (of column `column`, for the message), or a `.decodingFailed` error.
    init(postgres value: PostgresValue, column: String) throws(PostgresError)
}

extension PostgresDecodable {
    static func mismatch(_ value: PostgresValue, _ column: String) -> PostgresError {
        PostgresError(.decodingFailed, "column \(column) holds \(value.kind), not \(Self.self)")
    }
}

extension String: PostgresDecodable {
    package init(postgres value: PostgresValue, column: String) throws(PostgresError) {
        guard case .text(let text) = value else { throw Self.mismatch(value, column) }
        self = text
    }
}

extension Int64: PostgresDecodable {
    package init(postgres value: PostgresValue, column: String) throws(PostgresError) {
        guard case .int(let int) = value else { throw Self.mismatch(value, column) }
        self = int
    }
}

extension Int: PostgresDecodable {
    package init(postgres value: PostgresValue, column: String) throws(PostgresError) {
        guard case .int(let int) = value else { throw Self.mismatch(value, column) }
        self = Int(int)
    }
}

extension Double: PostgresDecodable {
    /// Also from an integer column (a COUNT or SUM), exactly up to 2^53.
    package init(postgres value: PostgresValue, column: String) throws(PostgresError) {
        switch value {
        case .double(let double): self = double
        case .int(let int): self = Double(int)
        default: throw Self.mismatch(value, column)
        }
    }
}

extension Bool: PostgresDecodable {
    package init(postgres value: PostgresValue, column: String) throws(PostgresError) {
        guard case .bool(let bool) = value else { throw Self.mismatch(value, column) }
        self = bool
    }
}

extension [UInt8]: PostgresDecodable {
    package init(postgres value: PostgresValue, column: String) throws(PostgresError) {
        guard case .bytes(let bytes) = value else { throw Self.mismatch(value, column) }
        self = bytes
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    /// nil for NULL, else the wrapped type's value.
    package init(postgres value: PostgresValue, column: String) throws(PostgresError) {
        if case .null = value { self = nil } else { self = try Wrapped(postgres: value, column: column) }
    }
}

/// One row of a result: its values by column name.
package struct PostgresRow: Sendable {
    /// Column name → index, shared by every row of a result.
    let columns: [String: Int]
    /// The values, in column order.
    package let values: [PostgresValue]

    /// The value of `column` as `T` (an `Optional` for a column that may be NULL).
    package subscript<T: PostgresDecodable>(_ column: String) -> T {
        get throws(PostgresError) {
            guard let index = columns[column] else {
                throw PostgresError(.decodingFailed, "the result has no column \(column)")
            }
            return try T(postgres: values[index], column: column)
        }
    }
}

/// What a statement answered: its rows (all read), and how many rows it changed.
package struct PostgresResult: Sendable {
    package var rows: [PostgresRow]
    /// Rows inserted, updated or deleted (0 for a SELECT's own count; see `rows`).
    package var affectedRows: Int
}
