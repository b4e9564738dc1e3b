import Foundation
import Locking
import SystemFiles
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server for the tests of one test process: made with `initdb` in a
/// temporary folder and started with `pg_ctl` on a free port the first time a test asks for
/// it, shared by every suite after that, stopped and deleted when the process ends (however
/// it ends: see `startReaper`). Each
/// test takes a database of its own from it (`makeDatabase()`), so tests stay independent
/// without paying for a server each.
///
/// `initdb` and `postgres` refuse to run as root (a server must not own the machine's files).
/// The tests run as root on CI, so there every PostgreSQL program runs as the `postgres` user
/// Debian's package creates, through `runuser` (root may become any user without a password or
/// a terminal), and the folder is handed to that user; run as anyone else, they run as is.
public final class TestPostgres: Sendable {
    /// A URL of the server's default database, as the superuser.
    public let url: String
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// The folder holding the cluster, the socket and the log.
    let folder: URL
    /// The folder of `pg_ctl`, `initdb`, `psql`.
    let binaries: String
    /// `runuser -u postgres --` when root, else nothing.
    let prefix: [String]
    private let databases = Locked(0)

    private static let started = Locked<Task<TestPostgres, any Error>?>(nil)

    /// The shared server, started on first use.
    public static func shared() async throws -> TestPostgres {
        let task = started.withLock { task in
            if let task { return task }
            let new = Task { try await TestPostgres.start() }
            task = new
            return new
        }
        return try await task.value
    }

    /// A fresh empty database on the shared server; its URL.
    public func makeDatabase() async throws -> String {
        let number = databases.withLock { $0 += 1; return $0 }
        let name = "test_\(getpid())_\(number)"
        try await run("psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                               "-q", "-c", "CREATE DATABASE \(name)"])
        return "postgres://postgres@127.0.0.1:\(port)/\(name)"
    }

    /// Runs `psql -c sql` against `database` (a URL); its output.
    public func psql(_ database: String, _ sql: String) async throws -> String {
        try await run("psql", [database, "-v", "ON_ERROR_STOP=1", "-q", "-A", "-t", "-c", sql])
    }

    private init(url: String, port: Int, folder: URL, binaries: String, prefix: [String]) {
        self.url = url
        self.port = port
        self.folder = folder
        self.binaries = binaries
        self.prefix = prefix
    }

    private static func start() async throws -> TestPostgres {
        let binaries = try findBinaries()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("offline-video-postgres-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var prefix: [String] = []
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else {
                throw TestPostgresError("the tests run as root and there is no postgres user to run PostgreSQL as (install Debian's postgresql)")
            }
            guard chown(folder.path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw TestPostgresError("cannot hand \(folder.path) to the postgres user: errno \(errno)")
            }
            prefix = ["/usr/sbin/runuser", "-u", "postgres", "--"]
        }
        let data = folder.appendingPathComponent("data").path
        var server = TestPostgres(url: "", port: 0, folder: folder, binaries: binaries, prefix: prefix)
        // No fsync: a test cluster is thrown away (the benchmark starts its own, durable one).
        try await server.run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"])
        var lastError: (any Error)?
        // A free port can be taken between our probe and the server's bind: try a few.
        for _ in 0..<3 {
            let port = try freePort()
            server = TestPostgres(url: "postgres://postgres@127.0.0.1:\(port)/postgres", port: port, folder: folder,
                                  binaries: binaries, prefix: prefix)
            do {
                // -w: pg_ctl returns once the server accepts connections (or failed to start).
                try await server.run("pg_ctl", ["-D", data, "-l", folder.appendingPathComponent("log").path, "-w", "-t", "120",
                                                "-o", "-p \(port) -k \(folder.path) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300",
                                                "start"])
                try server.startReaper()
                return server
            } catch {
                lastError = error
            }
        }
        throw lastError ?? TestPostgresError("PostgreSQL did not start")
    }

    /// Starts a shell that stops the server and deletes its folder once this process is gone.
    /// It reads a pipe only this process holds open (close-on-exec, so no other child inherits
    /// it): the kernel closes it when the process ends, by `exit`, a crash or SIGKILL, and the
    /// shell's `read` returns. An `atexit` hook was not enough: a full `swift test` run left
    /// the server running.
    private func startReaper() throws {
        var ends: [Int32] = [0, 0]
        // (Glibc does not export pipe2 to Swift: close-on-exec is set just after. A process
        // another test spawns in that instant does not inherit the write end all the same:
        // TestKit's spawns close every descriptor but the three standard ones.)
        guard pipe(&ends) == 0 else { throw TestPostgresError("pipe failed: errno \(errno)") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { close(ends[0]) }  // the write end stays open for the life of the process
        let (executable, arguments) = command("pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
        let stop = ([executable] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let script = "read -r _; \(stop) >/dev/null 2>&1; rm -rf '\(folder.path)'"
        do throws(ChildProcess.SpawnError) {
            _ = try ChildProcess.spawn("/bin/sh", ["-c", script], standardInput: ends[0], standardOutput: "/dev/null", standardError: "/dev/null")
        } catch {
            throw TestPostgresError("cannot start the PostgreSQL reaper: \(error)")
        }
    }

    /// Runs one of the server's programs (as the postgres user when root); its standard output.
    @discardableResult
    func run(_ program: String, _ arguments: [String]) async throws -> String {
        let (executable, all) = command(program, arguments)
        let output = try await Run.process(executable, all)
        guard output.exitCode == 0 else {
            throw TestPostgresError("\(program) \(arguments.joined(separator: " ")) failed (\(output.exitCode)): \(output.stderrText)")
        }
        return output.stdoutText
    }

    /// The executable and arguments that run `program` (as the postgres user when root).
    func command(_ program: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        let path = binaries + "/" + program
        return prefix.isEmpty ? (path, arguments) : (prefix[0], Array(prefix.dropFirst()) + [path] + arguments)
    }

    /// The folder holding `initdb` and `pg_ctl`: on the PATH, else Debian's
    /// /usr/lib/postgresql/<major>/bin (newest major first).
    private static func findBinaries() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        var candidates = path.split(separator: ":").map(String.init)
        let debian = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += debian.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
        // psql from the same folder too: Debian's /usr/bin/psql is a wrapper that looks for a
        // configured cluster, and a PATH folder may hold links to only some of the programs.
        for folder in candidates where ["initdb", "pg_ctl", "psql"].allSatisfy({ FileManager.default.isExecutableFile(atPath: folder + "/" + $0) }) {
            return folder
        }
        throw TestPostgresError("initdb, pg_ctl and psql are not installed in one folder (make test installs Debian's postgresql)")
    }
}

/// Why the test PostgreSQL server could not be used.
public struct TestPostgresError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A TCP port on 127.0.0.1 nothing listens on right now.
public func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw TestPostgresError("socket() failed: errno \(errno)") }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Bool in
            bind(socket, address, length) == 0 && getsockname(socket, address, &length) == 0
        }
    }
    guard bound else { throw TestPostgresError("cannot bind a probe socket: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
