@testable import CurlTransfer
import Testing

@Suite("libcurl's process-wide setup")
struct CurlGlobalTests {
    /// The crash this prevents is a race at process exit (OpenSSL's atexit cleanup against an
    /// engine thread ending), seen about once in 200 short `offline` commands; what a test can
    /// hold is that the setup is in place: Debian's libcurl is the OpenSSL build.
    @Test("OpenSSL is initialised without its exit-time cleanup before libcurl initialises it")
    func openSSLWithoutExitCleanup() {
        #expect(CurlGlobal.isInitialized)
        #expect(CurlGlobal.openSSLSkipsExitCleanup)
    }
}
