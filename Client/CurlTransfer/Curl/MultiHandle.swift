internal import CCurl

/// Owns the `CURLM*` multi handle: the connection cache, the DNS cache and the set of
/// transfers driven together. Used only on the engine thread, except through `MultiWaker`.
final class MultiHandle {
    let pointer: UnsafeMutableRawPointer

    /// Makes a multi handle with the given connection limits, or nil when libcurl cannot.
    init?(maxTotalConnections: Int, maxHostConnections: Int) {
        guard CurlGlobal.isInitialized, let pointer = curl_multi_init() else { return nil }
        self.pointer = pointer
        _ = curl_shim_multi_setopt_long(pointer, CURLMOPT_MAX_TOTAL_CONNECTIONS, max(1, maxTotalConnections))
        _ = curl_shim_multi_setopt_long(pointer, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, maxHostConnections))
        // Keep every connection we may open in the cache, so none is closed just to be reopened.
        _ = curl_shim_multi_setopt_long(pointer, CURLMOPT_MAXCONNECTS, max(1, maxTotalConnections))
    }

    /// Every easy handle must have been removed before this runs (the engine loop does it).
    deinit {
        curl_multi_cleanup(pointer)
    }

    func add(_ easy: EasyHandle) -> CURLMcode {
        curl_multi_add_handle(pointer, easy.pointer)
    }

    func remove(_ easy: EasyHandle) {
        _ = curl_multi_remove_handle(pointer, easy.pointer)
    }

    /// Runs every transfer as far as it can go without blocking; returns how many are still running.
    func perform() -> Int {
        var running: Int32 = 0
        _ = curl_multi_perform(pointer, &running)
        return Int(running)
    }

    /// Blocks until a socket is ready, curl's own timer fires, `timeoutMilliseconds` pass,
    /// or another thread calls `MultiWaker.wake()`. Never call this on the cooperative pool.
    func poll(timeoutMilliseconds: Int32) {
        _ = curl_multi_poll(pointer, nil, 0, timeoutMilliseconds, nil)
    }

    /// The transfers that finished since the last call: (easy pointer, result).
    func finishedTransfers() -> [(easy: UnsafeMutableRawPointer, result: CURLcode)] {
        var finished: [(easy: UnsafeMutableRawPointer, result: CURLcode)] = []
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(pointer, &remaining) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                finished.append((easy, message.pointee.data.result))
            }
        }
        return finished
    }

    var waker: MultiWaker { MultiWaker(pointer: pointer) }
}

/// Lets other threads interrupt `curl_multi_poll`.
///
/// `@unchecked Sendable` is sound because `curl_multi_wakeup` is the one multi call libcurl
/// documents as safe from any thread, and the engine only calls `wake()` while holding the
/// lock of `EngineCore`'s state, from which the loop removes the waker (under the same lock)
/// before the multi handle is cleaned up. The pointer is never used for anything else.
struct MultiWaker: @unchecked Sendable {
    fileprivate let pointer: UnsafeMutableRawPointer

    func wake() {
        _ = curl_multi_wakeup(pointer)
    }
}
