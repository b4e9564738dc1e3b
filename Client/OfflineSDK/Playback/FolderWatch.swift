import Dispatch
import Foundation
import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Waits for a file that another process is about to write into a folder (a segment the
/// folder's owner is downloading while this process plays it): the kernel says when the folder
/// changes (inotify), so nothing polls the disk; whether the file is still coming is asked again
/// at each change and at least every `recheck` (the owner may stop, or die).
///
/// Runs on a thread of its own: it blocks in `poll(2)`, never on Swift's cooperative pool.
enum FolderWatch {
    /// How many waits are under way in this process now.
    static var waiting: Int { count.load(ordering: .relaxed) }
    private static let count = Atomic<Int>(0)

    /// Returns true once the file at `path` exists; false when `stillComing` says it will not
    /// come (asked on the watching thread) or the task is cancelled (seen within `recheck`).
    static func waitForFile(_ path: String, recheck: Duration = .seconds(1),
                            stillComing: @escaping @Sendable () -> Bool) async -> Bool {
        let cancelled = Locked(false)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    count.add(1, ordering: .relaxed)
                    let arrived = watch(path, recheck: recheck, cancelled: cancelled, stillComing: stillComing)
                    count.subtract(1, ordering: .relaxed)
                    continuation.resume(returning: arrived)
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
    }

    private static func watch(_ path: String, recheck: Duration, cancelled: Locked<Bool>, stillComing: () -> Bool) -> Bool {
        let events = UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        defer { if descriptor >= 0 { close(descriptor) } }
        let milliseconds = Int32(clamping: recheck.components.seconds * 1000 + recheck.components.attoseconds / 1_000_000_000_000_000)
        var watched: String?
        while true {
            if access(path, F_OK) == 0 { return true }
            if cancelled.withLock({ $0 }) || !stillComing() { return access(path, F_OK) == 0 }
            // The nearest folder that exists: the track's, or the package's before the first
            // segment of a track made its folder. A new watch, then look again: a file that came
            // meanwhile raised no event.
            let folder = nearestFolder(of: path)
            if descriptor >= 0, folder != watched {
                _ = inotify_add_watch(descriptor, folder, events)
                watched = folder
                continue
            }
            if descriptor >= 0 {
                var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                if poll(&request, 1, milliseconds) > 0 { drain(descriptor) }
            } else {
                _ = poll(nil, 0, milliseconds)  // no inotify here: look every `recheck`
            }
            // A folder removed (the download deleted) or replaced is watched afresh.
            if access(watched ?? path, F_OK) != 0 { watched = nil }
        }
    }

    /// The events read and forgotten: each only says "look again".
    private static func drain(_ descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }

    private static func nearestFolder(of path: String) -> String {
        var folder = (path as NSString).deletingLastPathComponent
        while !folder.isEmpty, folder != "/", access(folder, F_OK) != 0 {
            folder = (folder as NSString).deletingLastPathComponent
        }
        return folder.isEmpty ? "/" : folder
    }
}
