internal import CCurl

/// Owns one `CURL*` easy handle, its error buffer and the header list it points to.
///
/// Used only on the engine thread. Between transfers the handle is `reset()` and kept in
/// a pool, so its buffers survive; `deinit` frees the handle first, then what it pointed to.
final class EasyHandle {
    let pointer: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var headerList: UnsafeMutablePointer<curl_slist>?

    /// Makes a handle, or nil when libcurl cannot allocate one.
    init?() {
        guard CurlGlobal.isInitialized, let pointer = curl_easy_init() else { return nil }
        self.pointer = pointer
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        _ = curl_shim_setopt_pointer(pointer, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    deinit {
        curl_easy_cleanup(pointer)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    /// Clears every option (connections stay in the multi handle's cache) for the next transfer.
    func reset() {
        curl_easy_reset(pointer)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        errorBuffer[0] = 0
        _ = curl_shim_setopt_pointer(pointer, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    /// curl's detailed message for the last failure, or "" when it left none.
    var errorDetail: String { String(cString: errorBuffer) }

    // MARK: Options. A failed setopt means the option is unknown or out of range: a bug or
    // an old libcurl, reported as the transfer's error by the caller.

    func set(_ option: CURLoption, _ value: Int) throws(CurlOptionError) {
        try check(curl_shim_setopt_long(pointer, option, value), option)
    }

    func set(_ option: CURLoption, offset value: Int64) throws(CurlOptionError) {
        try check(curl_shim_setopt_off(pointer, option, Int(value)), option)
    }

    /// Sets a string option; libcurl copies the string, so it need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws(CurlOptionError) {
        try check(curl_shim_setopt_string(pointer, option, value), option)
    }

    /// Sets an option that libcurl copies from a buffer (CURLOPT_COPYPOSTFIELDS; set the size first).
    func setCopied(_ option: CURLoption, _ bytes: [UInt8]) throws(CurlOptionError) {
        let code = bytes.withUnsafeBytes { raw -> CURLcode in
            guard let base = raw.baseAddress else { return curl_shim_setopt_string(pointer, option, "") }
            return curl_shim_setopt_pointer(pointer, option, UnsafeMutableRawPointer(mutating: base))
        }
        try check(code, option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(CurlOptionError) {
        try check(curl_shim_setopt_pointer(pointer, option, value), option)
    }

    /// Sets the request headers ("Name: value" lines). The list lives until the next reset.
    func setHeaders(_ lines: [String]) throws(CurlOptionError) {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                if let list { curl_slist_free_all(list) }
                throw CurlOptionError(option: CURLOPT_HTTPHEADER, code: CURLE_OUT_OF_MEMORY)
            }
            list = appended
        }
        let code = curl_shim_setopt_slist(pointer, CURLOPT_HTTPHEADER, list)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = list
        try check(code, CURLOPT_HTTPHEADER)
    }

    // MARK: Information about the transfer that just ran.

    func info(_ item: CURLINFO) -> Int {
        var value = 0
        return curl_shim_getinfo_long(pointer, item, &value) == CURLE_OK ? value : 0
    }

    func info(offset item: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        return curl_shim_getinfo_off(pointer, item, &value) == CURLE_OK ? Int64(value) : -1
    }

    func info(string item: CURLINFO) -> String? {
        var value: UnsafeMutableRawPointer?
        guard curl_shim_getinfo_pointer(pointer, item, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value.assumingMemoryBound(to: CChar.self))
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(CurlOptionError) {
        if code != CURLE_OK { throw CurlOptionError(option: option, code: code) }
    }
}

/// A `curl_easy_setopt` that libcurl refused.
struct CurlOptionError: Error {
    let option: CURLoption
    let code: CURLcode

    var transferError: TransferError {
        TransferError(.other(Int(code.rawValue)),
                      "libcurl refused option \(option.rawValue): \(String(cString: curl_easy_strerror(code)))",
                      curlCode: Int(code.rawValue))
    }
}
