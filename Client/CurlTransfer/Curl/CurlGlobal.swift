internal import CCurl

/// libcurl's process-wide setup, done once before the first handle is made.
///
/// `curl_global_init` must run before any other curl call and is only thread-safe from
/// libcurl 7.84 on when built with atomics; a static let gives us Swift's once-only,
/// thread-safe initialisation whatever the libcurl build.
enum CurlGlobal {
    /// True when `curl_global_init` succeeded. Reading it performs the initialisation.
    static let isInitialized: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
}
