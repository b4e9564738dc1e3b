import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection (`PGconn`), which it frees in `deinit`. Not thread-safe: one thread
/// uses it at a time (the pool hands it to one caller at once). Statements are prepared on
/// first use and kept by SQL text; parameters are always bound, never spliced into the SQL.
package final class PostgresConnection {
    private let handle: OpaquePointer
    /// SQL text → name of its prepared statement on this connection.
    private var statementNames: [String: String] = [:]
    /// Prepared statements kept at most; past it they are all dropped and prepared again as
    /// used (the backend's statements are a fixed set far below it).
    private static let statementLimit = 512

    /// How a transaction sees other transactions' writes.
    package enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// Connects to `url` (a `postgres://` or `postgresql://` URL, or a `key=value` string),
    /// waiting at most `connectTimeout` seconds unless the URL says otherwise.
    package init(url: String, connectTimeout: Int = 10) throws(PostgresError) {
        guard !url.isEmpty else { throw PostgresError(.invalidArgument, "the database URL is empty") }
        // connect_timeout before dbname: the URL (expanded from dbname) overrides it when it sets one.
        let keywords = ["connect_timeout", "fallback_application_name", "dbname"]
        let values = [String(connectTimeout), "mock-backend", url]
        let connection = Self.withCStrings(keywords) { keywords in
            Self.withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else { throw PostgresError(.connectionFailed, "libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.trimmed(String(cString: PQerrorMessage(connection)))
            PQfinish(connection)
            throw PostgresError(.connectionFailed, "cannot connect to \(Self.redacted(url)): \(message)")
        }
        pq_shim_quiet_notices(connection)
        handle = connection
    }

    deinit { PQfinish(handle) }

    /// Whether the connection is still up (it goes down when the server stops or the network breaks).
    package var isUsable: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Whether no transaction is open on the connection (and none failed half-way).
    package var isIdle: Bool { PQtransactionStatus(handle) == PQTRANS_IDLE }

    /// The server process serving this connection (for `pg_terminate_backend`, `pg_locks`).
    package var serverProcessID: Int32 { PQbackendPID(handle) }

    /// Runs `sql` with `parameters` bound to `$1`, `$2`, … as a prepared statement and reads
    /// every row of its answer.
    @discardableResult
    package func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        // PostgreSQL text cannot hold NUL, and libpq would end the value at the first one:
        // refuse rather than store a shortened string.
        for (index, parameter) in parameters.enumerated() {
            if case .text(let text) = parameter, text.utf8.contains(0) {
                throw PostgresError(.invalidArgument, "parameter $\(index + 1) holds a NUL character (U+0000), which PostgreSQL text cannot store")
            }
        }
        let name = try prepare(sql)
        let result = Self.withBound(parameters) { values, lengths, formats in
            // Results in binary: exact doubles and integers, bytes as they are.
            PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 1)
        }
        return try consume(result)
    }

    /// Runs `sql` (one or more statements, no parameters, no rows read): transaction control,
    /// schema changes.
    package func execute(_ sql: String) throws(PostgresError) {
        _ = try consume(PQexec(handle, sql), readRows: false)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    package func transaction<T>(_ isolation: Isolation = .readCommitted, _ body: (PostgresConnection) throws -> T) throws -> T {
        try execute("BEGIN ISOLATION LEVEL \(isolation.rawValue)")
        return try inOpenTransaction(body)
    }

    /// `body` inside a transaction already begun: COMMIT after it, ROLLBACK if it throws.
    func inOpenTransaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            let value = try body(self)
            try execute("COMMIT")
            return value
        } catch {
            if isUsable && !isIdle { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Notifications (`LISTEN`ed channels) that arrived, waiting up to `timeout` for the
    /// first when none is queued. Empty when none came in time.
    package func notifications(waitingUpTo timeout: Duration) throws(PostgresError) -> [(channel: String, payload: String)] {
        var found = drainNotifications()
        guard found.isEmpty else { return found }
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw PostgresError(.connectionLost, "the connection to the database is closed") }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 && errno != EINTR {
            throw PostgresError(.connectionLost, "waiting for notifications failed: errno \(errno)")
        }
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(.connectionLost, "the connection to the database broke: \(Self.trimmed(String(cString: PQerrorMessage(handle))))")
        }
        found = drainNotifications()
        return found
    }

    private func drainNotifications() -> [(channel: String, payload: String)] {
        var found: [(channel: String, payload: String)] = []
        while let notification = PQnotifies(handle) {
            found.append((String(cString: notification.pointee.relname), String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return found
    }

    // MARK: Statements

    private func prepare(_ sql: String) throws(PostgresError) -> String {
        if let name = statementNames[sql] { return name }
        if statementNames.count >= Self.statementLimit {
            try execute("DEALLOCATE ALL")
            statementNames = [:]
        }
        let name = "s\(statementNames.count + 1)"
        _ = try consume(PQprepare(handle, name, sql, 0, nil), readRows: false)
        statementNames[sql] = name
        return name
    }

    /// The answer of `result` (which it frees), or the error it carries.
    private func consume(_ result: OpaquePointer?, readRows: Bool = true) throws(PostgresError) -> PostgresResult {
        guard let result else {
            let message = Self.trimmed(String(cString: PQerrorMessage(handle)))
            throw PostgresError(isUsable ? .queryFailed : .connectionLost, message.isEmpty ? "libpq returned no result" : message)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY {
            return PostgresResult(rows: [], affectedRows: Int(String(cString: PQcmdTuples(result))) ?? 0)
        }
        if status == PGRES_TUPLES_OK {
            return PostgresResult(rows: readRows ? try Self.rows(of: result) : [], affectedRows: Int(String(cString: PQcmdTuples(result))) ?? 0)
        }
        let sqlState = pq_shim_sqlstate(result).map { String(cString: $0) }
        var message = pq_shim_primary_message(result).map { String(cString: $0) }
            ?? Self.trimmed(String(cString: PQresultErrorMessage(result)))
        if message.isEmpty { message = Self.trimmed(String(cString: PQerrorMessage(handle))) }
        if let detail = pq_shim_detail(result) { message += " (\(String(cString: detail)))" }
        let code = !isUsable ? .connectionLost : sqlState.map(PostgresError.code(forSQLState:)) ?? .queryFailed
        throw PostgresError(code, message, sqlState: sqlState)
    }

    private static func rows(of result: OpaquePointer) throws(PostgresError) -> [PostgresRow] {
        let fieldCount = PQnfields(result), rowCount = PQntuples(result)
        var columns: [String: Int] = [:]
        var names: [String] = [], types: [UInt32] = []
        for field in 0..<fieldCount {
            let name = String(cString: PQfname(result, field))
            names.append(name)
            types.append(PQftype(result, field))
            columns[name] = Int(field)
        }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [PostgresValue] = []
            values.reserveCapacity(Int(fieldCount))
            for field in 0..<fieldCount {
                if PQgetisnull(result, row, field) == 1 { values.append(.null); continue }
                let bytes = UnsafeRawBufferPointer(start: PQgetvalue(result, row, field), count: Int(PQgetlength(result, row, field)))
                values.append(try decode(bytes, type: types[Int(field)], column: names[Int(field)]))
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        return rows
    }

    /// A column value in PostgreSQL's binary format (network byte order), by the column's type OID.
    private static func decode(_ bytes: UnsafeRawBufferPointer, type: UInt32, column: String) throws(PostgresError) -> PostgresValue {
        func integer(_ size: Int) throws(PostgresError) -> Int64 {
            guard bytes.count == size else {
                throw PostgresError(.decodingFailed, "column \(column): \(bytes.count) bytes for a \(size)-byte value")
            }
            var value: UInt64 = 0
            for byte in bytes { value = value << 8 | UInt64(byte) }
            // Sign-extend from `size` bytes.
            let shift = UInt64(64 - 8 * size)
            return Int64(bitPattern: value << shift) >> Int64(shift)
        }
        switch type {
        case 16: return .bool(try integer(1) != 0)
        case 17: return .bytes(Array(bytes))
        case 18, 19, 25, 705, 1042, 1043: return .text(String(decoding: bytes, as: UTF8.self))
        case 20: return .int(try integer(8))
        case 21: return .int(try integer(2))
        case 23: return .int(try integer(4))
        case 26: return .int(try integer(4) & 0xFFFF_FFFF)
        case 2278: return .null  // void (a function that returns nothing, e.g. pg_notify)
        case 700: return .double(Double(Float(bitPattern: UInt32(truncatingIfNeeded: try integer(4)))))
        case 701: return .double(Double(bitPattern: UInt64(bitPattern: try integer(8))))
        default:
            throw PostgresError(.decodingFailed, "column \(column) has a type (OID \(type)) this wrapper does not read; cast it in the SQL (::text, ::bigint)")
        }
    }

    // MARK: C strings

    /// Runs `body` with the parameters as libpq wants them: text for strings and numbers (the
    /// server converts to the column's type; a double's `description` reads back exactly),
    /// binary for bytes.
    private static func withBound<T>(_ parameters: [PostgresValue],
                                     _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> T) -> T {
        var values: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = [], formats: [Int32] = []
        values.reserveCapacity(parameters.count)
        defer { for value in values { free(value) } }
        for parameter in parameters {
            switch parameter {
            case .null: values.append(nil); lengths.append(0); formats.append(0)
            case .bytes(let bytes):
                let buffer = malloc(max(1, bytes.count))!.assumingMemoryBound(to: CChar.self)  // only fails without memory
                bytes.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(buffer), byteCount: $0.count) }
                values.append(buffer); lengths.append(Int32(bytes.count)); formats.append(1)
            case .text(let text): values.append(strdup(text)); lengths.append(0); formats.append(0)
            case .int(let int): values.append(strdup(String(int))); lengths.append(0); formats.append(0)
            case .double(let double): values.append(strdup(double.description)); lengths.append(0); formats.append(0)
            case .bool(let bool): values.append(strdup(bool ? "t" : "f")); lengths.append(0); formats.append(0)
            }
        }
        return values.withUnsafeBufferPointer { values in
            values.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in body(values.baseAddress, lengths.baseAddress, formats.baseAddress) }
                }
            }
        }
    }

    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { body($0.baseAddress!) }  // non-empty array
        }
    }

    static func trimmed(_ message: String) -> String {
        var text = Substring(message)
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        return String(text)
    }

    /// `url` with its password (if any) replaced by `***`, for messages and logs.
    package static func redacted(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url.contains("password") ? "(the connection string)" : url }
        let rest = url[scheme.upperBound...]
        guard let at = rest.firstIndex(of: "@"), !rest[..<at].contains("/"),
              let colon = rest[..<at].firstIndex(of: ":") else { return url }
        return String(url[..<rest.index(after: colon)]) + "***" + String(rest[at...])
    }
}
