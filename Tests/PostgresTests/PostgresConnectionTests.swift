import Foundation
import Postgres
import Testing
import TestKit

/// The libpq wrapper against a real PostgreSQL server (TestKit's, one database per test).
@Suite("PostgreSQL wrapper")
struct PostgresConnectionTests {
    @Test("bound parameters round-trip text, bytea, int8, float8, bool and NULL exactly, quotes and all")
    func parametersRoundTrip() async throws {
        let url = try await TestPostgres.shared().makeDatabase()
        try await offPool {
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE t (s text, b bytea, i bigint, d double precision, f boolean)")
            let tricky = "it's a \"test\"; DROP TABLE t; -- ü 🎬"
            let bytes: [UInt8] = [0, 1, 0x5C, 0x27, 0xFF] + Array(repeating: 0, count: 3)
            for (s, b, i, d, f) in [(tricky, bytes, Int64.min, 0.1, true), ("", [], Int64.max, -1.5e-300, false)] as [(String, [UInt8], Int64, Double, Bool)] {
                try connection.query("INSERT INTO t VALUES ($1, $2, $3, $4, $5)", [.text(s), .bytes(b), .int(i), .double(d), .bool(f)])
            }
            try connection.query("INSERT INTO t VALUES ($1, $2, $3, $4, $5)", [.null, .null, .null, .null, .null])
            let rows = try connection.query("SELECT * FROM t ORDER BY i NULLS LAST").rows
            #expect(rows.count == 3)
            #expect(try rows[0]["s"] as String == tricky)
            #expect(try rows[0]["b"] as [UInt8] == bytes)
            #expect(try rows[0]["i"] as Int64 == .min)
            #expect(try rows[0]["d"] as Double == 0.1)
            #expect(try rows[0]["f"] as Bool == true)
            #expect(try rows[1]["s"] as String == "")
            #expect(try rows[1]["b"] as [UInt8] == [])
            #expect(try rows[1]["i"] as Int64 == .max)
            #expect(try rows[1]["d"] as Double == -1.5e-300)
            #expect(try rows[2]["s"] as String? == nil)
            #expect(try rows[2]["b"] as [UInt8]? == nil)
            #expect(try rows[2]["d"] as Double? == nil)
            // The table is still there: the quote-laden text was a value, never SQL.
            #expect(try connection.query("SELECT count(*) AS n FROM t").rows[0]["n"] as Int == 3)
            // A value of another type, and a NULL where a value is needed, are clear errors.
            #expect(throws: PostgresError.self) { _ = try rows[0]["i"] as String }
            do { _ = try rows[2]["i"] as Int64; Issue.record("NULL decoded as Int64") } catch {
                #expect((error as? PostgresError)?.code == .decodingFailed)
            }
            // Integers of every width and float4 read as Swift numbers.
            let widths = try connection.query("SELECT 7::smallint AS a, -8::int AS b, 2.5::real AS c, $1::bigint + 1 AS d", [.int(41)]).rows[0]
            #expect(try widths["a"] as Int == 7)
            #expect(try widths["b"] as Int == -8)
            #expect(try widths["c"] as Double == 2.5)
            #expect(try widths["d"] as Int == 42)
            // Text holding NUL is refused, never stored cut short at the NUL.
            let nul = #expect(throws: PostgresError.self) { try connection.query("INSERT INTO t (s) VALUES ($1)", [.text("a\u{0}b")]) }
            #expect(nul?.code == .invalidArgument && nul?.message.contains("$1") == true)
            #expect(try connection.query("SELECT count(*) AS n FROM t").rows[0]["n"] as Int == 3, "nothing was stored")
        }
    }

    @Test("an array parameter round-trips every element exactly: quotes, backslashes, braces, commas, NULL, \"NULL\", empty and non-ASCII")
    func arrayParameterRoundTrips() async throws {
        let url = try await TestPostgres.shared().makeDatabase()
        try await offPool {
            let connection = try PostgresConnection(url: url)
            let elements: [String?] = [#"a "quoted" \ back\slash"#, "{braces},commas", nil, "NULL", "", " spaced ", "ü 🎬", #"\""#,
                                       #"{"json": "terms", "n": [1, 2]}"#]
            let rows = try connection.query("SELECT element, position FROM unnest($1::text[]) WITH ORDINALITY AS e (element, position) ORDER BY position",
                                            [.array(elements)]).rows
            #expect(try rows.map { try $0["element"] as String? } == elements)
            // Numbers and booleans through the same text form, cast by the statement; an empty array is no rows.
            let numbers = try connection.query("SELECT unnest($1::float8[]) AS d, unnest($2::boolean[]) AS f",
                                               [.array(["0.1", "-1.5e-300", "1764306000.123456", nil]), .array(["t", "f", "t", nil])]).rows
            #expect(try numbers.map { try $0["d"] as Double? } == [0.1, -1.5e-300, 1764306000.123456, nil])
            #expect(try numbers.map { try $0["f"] as Bool? } == [true, false, true, nil])
            #expect(try connection.query("SELECT unnest($1::text[]) AS e", [.array([])]).rows.isEmpty)
        }
    }

    @Test("a statement is prepared once and reused; a refused statement gives the SQLSTATE and a stable code")
    func preparedStatementsAndErrors() async throws {
        let url = try await TestPostgres.shared().makeDatabase()
        try await offPool {
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE k (id text PRIMARY KEY)")
            for n in 0..<50 { try connection.query("INSERT INTO k (id) VALUES ($1)", [.text("k\(n)")]) }
            let prepared = try connection.query("SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO k%'").rows
            #expect(try prepared[0]["n"] as Int == 1)

            do { try connection.query("INSERT INTO k (id) VALUES ($1)", [.text("k1")]); Issue.record("duplicate accepted") } catch let error as PostgresError {
                #expect(error.code == .constraintViolation)
                #expect(error.sqlState == "23505")
                #expect(error.isUniqueViolation)
                #expect(error.message.contains("duplicate key"))
            }
            do { try connection.query("SELECT * FROM missing_table"); Issue.record("missing table read") } catch let error as PostgresError {
                #expect(error.code == .queryFailed)
                #expect(error.sqlState == "42P01")
            }
            // The connection is still usable after errors outside a transaction.
            #expect(try connection.query("SELECT count(*) AS n FROM k").rows[0]["n"] as Int == 50)
            let changed = try connection.query("DELETE FROM k WHERE id LIKE $1", [.text("k1%")])
            #expect(changed.affectedRows == 11)
        }
    }

    @Test("a transaction commits when its body returns and rolls back everything when it throws")
    func transactions() async throws {
        let url = try await TestPostgres.shared().makeDatabase()
        try await offPool {
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE a (n bigint PRIMARY KEY)")
            try connection.transaction { connection in
                try connection.query("INSERT INTO a VALUES ($1)", [.int(1)])
                try connection.query("INSERT INTO a VALUES ($1)", [.int(2)])
            }
            struct Stop: Error {}
            #expect(throws: Stop.self) {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO a VALUES ($1)", [.int(3)])
                    throw Stop()
                }
            }
            #expect(throws: PostgresError.self) {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO a VALUES ($1)", [.int(4)])
                    try connection.query("INSERT INTO a VALUES ($1)", [.int(1)])  // duplicate: the whole transaction goes
                }
            }
            #expect(connection.isIdle)
            let all = try connection.query("SELECT n FROM a ORDER BY n").rows.map { try $0["n"] as Int }
            #expect(all == [1, 2])
        }
    }

    @Test("serializable transactions that collide are retried by the pool until both apply")
    func serializationRetry() async throws {
        let url = try await TestPostgres.shared().makeDatabase()
        let pool = try PostgresPool(url: url, size: 4)
        try await offPool { try pool.withConnection { try $0.execute("CREATE TABLE c (id int PRIMARY KEY, n bigint); INSERT INTO c VALUES (1, 0)") } }
        // Each increments by reading then writing: under SERIALIZABLE concurrent ones fail with
        // 40001 and are run again, so no increment is lost.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await offPool {
                        for _ in 0..<25 {
                            try pool.transaction(.serializable) { connection in
                                let n: Int = try connection.query("SELECT n FROM c WHERE id = 1").rows[0]["n"]
                                try connection.query("UPDATE c SET n = $1 WHERE id = 1", [PostgresValue(n + 1)])
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let total = try await offPool { try pool.withConnection { try $0.query("SELECT n FROM c").rows[0]["n"] as Int } }
        #expect(total == 100)
    }

    @Test("a caller waits for a busy pool's connection, and gets poolExhausted when the wait runs out")
    func poolWaitsThenGivesUp() async throws {
        let url = try await TestPostgres.shared().makeDatabase()
        let pool = try PostgresPool(url: url, size: 1, acquireTimeout: .seconds(120))
        let holding = Gate(), release = Gate()
        let holder = Task {
            try await offPool {
                try pool.withConnection { _ in
                    holding.open()
                    release.waitBlocking()
                }
            }
        }
        await holding.wait()
        let waiter = Task { try await offPool { try pool.withConnection { try $0.query("SELECT 1 AS one").rows[0]["one"] as Int } } }
        #expect(try await eventually { pool.waitingCount == 1 })
        release.open()
        #expect(try await waiter.value == 1)
        try await holder.value

        let impatient = try PostgresPool(url: url, size: 1, acquireTimeout: .milliseconds(200))
        let held = Gate(), done = Gate()
        let keeper = Task { try await offPool { try impatient.withConnection { _ in held.open(); done.waitBlocking() } } }
        await held.wait()
        do {
            try await offPool { try impatient.withConnection { _ in } }
            Issue.record("a connection was lent twice")
        } catch let error as PostgresError {
            #expect(error.code == .poolExhausted)
            #expect(error.message.contains("1 database connections stayed busy"))
        }
        done.open()
        try await keeper.value
        #expect(throws: PostgresError.self) { try PostgresPool(url: url, size: 0) }
    }

    @Test("a server that is not there, or that drops the connection, gives connectionFailed or connectionLost with the reason")
    func serverGone() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.makeDatabase()
        let port = try freePort()
        try await offPool {
            do {
                _ = try PostgresConnection(url: "postgres://postgres:secret@127.0.0.1:\(port)/nothing", connectTimeout: 5)
                Issue.record("connected to nothing")
            } catch let error as PostgresError {
                #expect(error.code == .connectionFailed)
                #expect(error.message.contains("127.0.0.1:\(port)"))
                #expect(error.message.contains("Connection refused"))
                #expect(!error.message.contains("secret"), "the password stays out of messages")
            }
            #expect(throws: PostgresError.self) { try PostgresConnection(url: "") }

            let victim = try PostgresConnection(url: url)
            let killer = try PostgresConnection(url: url)
            // With a timeout the call returns once the backend has exited (PostgreSQL 14+), not when
            // the signal is sent: on a loaded machine the victim's next query could still run.
            try killer.query("SELECT pg_terminate_backend($1::int, 600000)", [.int(Int64(victim.serverProcessID))])
            do {
                try victim.query("SELECT 1")
                Issue.record("a terminated connection answered")
            } catch let error as PostgresError {
                #expect(error.code == .connectionLost, "\(error)")
            }
            #expect(!victim.isUsable)
        }
        // The pool drops a broken connection instead of lending it again.
        let pool = try PostgresPool(url: url, size: 1)
        let first = try await offPool { try pool.withConnection { $0.serverProcessID } }
        try await offPool {
            let killer = try PostgresConnection(url: url)
            try killer.query("SELECT pg_terminate_backend($1::int, 600000)", [.int(Int64(first))])
            // Either its first use fails and the pool drops it, or (when more than the idle check's
            // 5 s passed since it was given back, as on a loaded machine) the check on taking it
            // finds it dead and lends a new one: the broken connection is never lent twice.
            do { _ = try pool.withConnection { try $0.query("SELECT 1") } } catch { #expect(error is PostgresError, "\(error)") }
            let second = try pool.withConnection { connection in
                _ = try connection.query("SELECT 1")
                return connection.serverProcessID
            }
            #expect(second != first)
        }
    }

    @Test("LISTEN on one connection receives what another connection NOTIFYs, and waiting ends with nothing when nobody does")
    func notifications() async throws {
        let url = try await TestPostgres.shared().makeDatabase()
        try await offPool {
            let listener = try PostgresConnection(url: url)
            try listener.execute("LISTEN changes")
            #expect(try listener.notifications(waitingUpTo: .milliseconds(50)).isEmpty)
            let sender = try PostgresConnection(url: url)
            try sender.query("SELECT pg_notify('changes', $1)", [.text("catalog 7")])
            var received: [(channel: String, payload: String)] = []
            let deadline = ContinuousClock.now + .seconds(120)
            while received.isEmpty && ContinuousClock.now < deadline {
                received = try listener.notifications(waitingUpTo: .seconds(120))
            }
            #expect(received.map(\.channel) == ["changes"])
            #expect(received.map(\.payload) == ["catalog 7"])
        }
    }
}
