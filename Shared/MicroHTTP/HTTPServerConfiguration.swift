import CMicroHTTPD

/// How an `HTTPServer` binds and what it accepts.
package struct HTTPServerConfiguration: Sendable {
    /// The address to bind: an IPv4 or IPv6 literal, or "localhost".
    package var host: String = "127.0.0.1"
    /// The port to bind; 0 picks a free one (read it back from `HTTPServer.port`).
    package var port: Int = 8080
    /// Threads in MHD's epoll thread pool.
    package var threadCount: Int = 2
    /// The largest request body accepted; larger ones get 413 and are not read into memory.
    package var maxBodySize: Int = 64 * 1024
    /// A body over `maxBodySize` but at most this long is read to its end and dropped before
    /// the 413 is sent. A 413 sent while the client is still sending is followed by closing
    /// a socket with unread bytes, which makes the kernel reset the connection, and a reset
    /// can destroy the 413 before the client has read it (curl: "Connection reset by peer").
    /// Longer bodies get their 413 at once, with that risk.
    package var drainedBodyLimit: Int = 16 * 1024 * 1024
    /// The largest request line plus headers answered through the error responder (431).
    package var maxHeaderSize: Int = 32 * 1024
    /// Memory MHD may use per connection. Requests whose headers do not even fit here are
    /// refused by MHD itself (431 with its own body), so keep it well above `maxHeaderSize`.
    /// Not much more: MHD zeroes the whole pool between the requests of a keep-alive
    /// connection (at 128 KiB that memset took 8 % of a segment's serving time).
    package var connectionMemoryLimit: Int = 64 * 1024
    /// Seconds an idle keep-alive connection is kept open.
    package var idleTimeoutSeconds: Int = 30
    /// The listen backlog.
    package var listenBacklog: Int = 512
    /// File bodies are memory-mapped once and sent from memory, headers and body in one
    /// `writev`, until the mapped files add up to this many bytes; beyond it (and with 0, the
    /// default) they are sent with `sendfile`. Mapped files are never unmapped or re-read:
    /// only for files that are never modified in place (replacing them by rename is fine).
    /// libmicrohttpd sends a file in 128 KiB `sendfile` chunks with a poll round between
    /// them, which costs a third of the throughput on 200 KB media segments.
    package var mappedFileBytesLimit: Int = 0
    /// Milliseconds added to every response (benchmarks and client tests). No thread is held while waiting.
    package var addedLatencyMilliseconds: Int = 0

    /// HTTPS with this key and certificate (through libmicrohttpd's GnuTLS); nil serves plain HTTP.
    package var tls: TLSCredentials?
    /// The request target as the log line of each request shows it: a server whose URLs carry
    /// secrets redacts them here. As it arrived by default.
    package var loggedTarget: @Sendable (String) -> String = { $0 }

    /// Creates a configuration with the defaults above.
    package init() {}
}

/// A server's TLS identity: its private key and its certificate chain, both PEM; and what it
/// speaks (a GnuTLS priority string).
package struct TLSCredentials: Sendable {
    /// The private key (PKCS#8 `PRIVATE KEY`, `EC PRIVATE KEY` or `RSA PRIVATE KEY`).
    package var privateKeyPEM: String
    /// The certificate, then any intermediates.
    package var certificateChainPEM: String
    /// The protocol versions, key exchanges, ciphers and signatures offered, as a GnuTLS
    /// priority string (`gnutls-cli --priority STRING -l` lists what one allows).
    package var priorities: String

    package init(privateKeyPEM: String, certificateChainPEM: String, priorities: String = TLSCredentials.intermediatePriorities) {
        self.privateKeyPEM = privateKeyPEM
        self.certificateChainPEM = certificateChainPEM
        self.priorities = priorities
    }

    /// Mozilla's "intermediate" server profile (ssl-config.mozilla.org, guidelines v5) in GnuTLS terms:
    /// TLS 1.3 and 1.2 only; forward-secret ECDHE key exchange (ECDSA or RSA certificates) with
    /// AEAD ciphers only (AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305: no CBC, no SHA-1 MAC, no
    /// RSA key transport); X25519, P-256 and P-384; no SHA-1 signatures; the server's order
    /// (`%SERVER_PRECEDENCE`), which is this list's. Mozilla's DHE suites are left out: ECDHE
    /// covers every client the profile names, and finite-field groups only add a weaker choice.
    package static let intermediatePriorities = [
        "NONE", "+VERS-TLS1.3", "+VERS-TLS1.2",
        "+ECDHE-ECDSA", "+ECDHE-RSA",
        "+AES-128-GCM", "+AES-256-GCM", "+CHACHA20-POLY1305", "+AEAD",
        "+GROUP-X25519", "+GROUP-SECP256R1", "+GROUP-SECP384R1",
        "+SIGN-ALL", "-SIGN-RSA-SHA1", "-SIGN-ECDSA-SHA1", "-SIGN-DSA-SHA1",
        "+COMP-NULL", "%SERVER_PRECEDENCE",
    ].joined(separator: ":")

    /// Whether this libmicrohttpd can serve HTTPS at all (Debian's is built with GnuTLS).
    package static var isSupported: Bool { mhd_shim_supports_tls() != 0 }
}

/// Why a server could not start: a stable `code` and a message for a person. (MHD says
/// no more than that it did not start, so there is no underlying error to keep.)
package struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable.
    package var code: Code
    /// What went wrong, for a person.
    package var message: String
    /// Creates an error.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }

    /// The kinds of failure. A struct over a private enum, so kinds can be added later
    /// without breaking anyone's exhaustive switch.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable { case badConfiguration, tlsNotSupported, couldNotBind }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The configuration cannot work: a port out of range, a host that is not an address.
        package static let badConfiguration = Code(.badConfiguration)
        /// HTTPS was asked for, and this libmicrohttpd was built without TLS.
        package static let tlsNotSupported = Code(.tlsNotSupported)
        /// The daemon did not start: the address is in use or not available, or (HTTPS)
        /// GnuTLS refused the key or certificate.
        package static let couldNotBind = Code(.couldNotBind)

        /// The stable name of the kind, e.g. "couldNotBind".
        package var description: String { base.rawValue }
    }
}
