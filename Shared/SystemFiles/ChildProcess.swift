#if canImport(Glibc)
package import Glibc

/// Starting a child process and waiting for it, one way for the backend's tools and the tests'
/// programs: `posix_spawn` and `waitpid` (Foundation's `Process` on Linux can miss a child's
/// exit when many are started at once), output to files (a chatty child cannot fill a pipe and
/// stall), no descriptor of the parent's but the three standard ones (``SpawnDescriptors``),
/// every signal at its default and none blocked, whatever the parent's threads had set.
package enum ChildProcess {
    /// Why a child could not be started: the error number `posix_spawn` returned.
    package struct SpawnError: Error, Sendable, CustomStringConvertible {
        /// The `errno` value, e.g. `ENOENT` for a missing executable.
        package let number: Int32
        /// The C library's sentence for the number.
        package var description: String { String(cString: strerror(number)) }
    }

    /// Starts `executable` with `arguments` (its `argv[0]` is `executable`) and returns its pid.
    ///
    /// Standard input is `standardInput` (a descriptor of the parent's), or /dev/null when nil;
    /// standard output and error go to the files at `standardOutput` and `standardError`,
    /// created or emptied with `mode`. `searchingPath`: `executable` is a name looked up on PATH.
    package static func spawn(_ executable: String, _ arguments: [String], standardInput: Int32? = nil,
                             standardOutput: String, standardError: String, mode: mode_t = 0o600,
                             searchingPath: Bool = false) throws(SpawnError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, standardOutput, O_WRONLY | O_CREAT | O_TRUNC, mode)
        posix_spawn_file_actions_addopen(&actions, 2, standardError, O_WRONLY | O_CREAT | O_TRUNC, mode)
        SpawnDescriptors.closeAllButStandard(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var child: pid_t = 0
        let result = searchingPath
            ? posix_spawnp(&child, executable, &actions, &attributes, argv, environ)
            : posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard result == 0 else { throw SpawnError(number: result) }
        return child
    }

    /// Blocks until `child` ends (a signal interrupting the wait waits again) and reaps it: its
    /// exit code, or 128 + the signal that ended it, as a shell reports it; -1000 - errno when
    /// `waitpid` failed (something else reaped the child: its status is lost).
    package static func waitForExit(_ child: pid_t) -> Int32 {
        var status: Int32 = 0
        var result = waitpid(child, &status, 0)
        while result < 0 && errno == EINTR { result = waitpid(child, &status, 0) }
        if result < 0 { return -1000 - errno }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}
#endif
