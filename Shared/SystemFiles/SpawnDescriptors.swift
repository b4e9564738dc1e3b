#if canImport(Glibc)
public import Glibc

/// The descriptors a child started with `posix_spawn` keeps: its three standard ones, nothing
/// else of its parent's. A descriptor the parent opened without close-on-exec (Foundation's
/// file writes, for one) would otherwise live on in the child: a file another thread is filling
/// keeps its space after its unlink until the child ends, a socket keeps its peer waiting.
public enum SpawnDescriptors {
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare: looked up once by name.
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// Adds "close every descriptor from 3 up" to `actions`, after the actions that set up
    /// 0, 1 and 2 (file actions run in order); nothing on a C library without it.
    public static func closeAllButStandard(_ actions: inout posix_spawn_file_actions_t) {
        _ = addCloseFrom?(&actions, 3)
    }
}
#endif
