internal import CCurl
#if canImport(Glibc)
internal import Glibc
#endif

/// libcurl's process-wide setup, done once before the first handle is made.
///
/// `curl_global_init` must run before any other curl call and is only thread-safe from
/// libcurl 7.84 on when built with atomics; a static let gives us Swift's once-only,
/// thread-safe initialisation whatever the libcurl build.
enum CurlGlobal {
    /// True when `curl_global_init` succeeded. Reading it performs the initialisation.
    static let isInitialized: Bool = {
        _ = openSSLSkipsExitCleanup
        return curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
    }()

    /// Whether OpenSSL (libcurl's TLS library, when it is the OpenSSL build) was initialised,
    /// before libcurl does it, with `OPENSSL_INIT_NO_ATEXIT`: no `OPENSSL_cleanup` from an
    /// `atexit` handler. That handler frees OpenSSL's global state while other threads still
    /// run; an engine thread ending at the same time (its engine released as a short-lived
    /// process returns from main) runs OpenSSL's per-thread cleanup on that freed state, and
    /// the process crashed at exit now and then (SIGSEGV in `OPENSSL_sk_num`, "double free" in
    /// `OPENSSL_LH_flush`). What the handler would free goes with the process anyway. False
    /// when the process has no OpenSSL (libcurl built on another TLS library).
    static let openSSLSkipsExitCleanup: Bool = {
        // RTLD_DEFAULT (nil): the libraries already loaded, libcurl's libcrypto among them.
        guard let symbol = dlsym(nil, "OPENSSL_init_crypto") else { return false }
        typealias InitCrypto = @convention(c) (UInt64, UnsafeRawPointer?) -> Int32
        let noAtExit: UInt64 = 0x0008_0000  // OPENSSL_INIT_NO_ATEXIT (OpenSSL 1.1.1b and later)
        return unsafeBitCast(symbol, to: InitCrypto.self)(noAtExit, nil) == 1
    }()
}
