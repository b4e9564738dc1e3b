internal import CCurl

/// The C callbacks handed to libcurl. Each receives the `Transfer` it belongs to as an
/// unretained pointer: the engine loop keeps the transfer alive for as long as its easy
/// handle is in the multi handle, and curl only calls back from `curl_multi_perform`,
/// on the engine thread.
nonisolated enum CurlCallbacks {
    /// CURLOPT_WRITEFUNCTION: body bytes. Returning less than given aborts the transfer.
    static let write: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
    }

    /// CURLOPT_HEADERFUNCTION: one header line (status lines and the blank end line included).
    static let header: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
        transfer.receiveHeader(String(decoding: bytes, as: UTF8.self))
        return size * count
    }

    /// CURLOPT_XFERINFOFUNCTION: called often while data flows and about once a second when idle.
    /// A non-zero answer aborts the transfer; a cancelled job is aborted here as a backstop.
    static let progress: @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> Int32 = {
        context, _, _, _, _ in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.tick() ? 0 : 1
    }
}
