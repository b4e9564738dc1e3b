public import Foundation

/// Why a transfer failed: a stable `code` to decide on, a message for people, and the
/// libcurl or system error number underneath when there is one.
///
/// ```swift
/// do {
///     _ = try await engine.download(job)
/// } catch let error where error.code == .cancelled {
///     // the `.part` file is kept; download again later to resume
/// } catch {
///     if let status = error.code.httpStatus { print("server said \(status)") }
/// }
/// ```
public struct TransferError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure. New kinds may be added, so switch with a `default`.
    public let code: Code
    /// What happened, for logs and people.
    public let message: String
    /// libcurl's `CURLcode` when curl reported the failure.
    public let curlCode: Int?
    /// The `errno` when a system call (open, write, fsync, rename) failed.
    public let systemError: Int32?
    /// The `Retry-After` field of an error answer, as the server sent it (seconds or a date).
    public let retryAfter: String?
    /// Body bytes a failed file download received and kept in its `.part` file before it failed
    /// (a body cut short): the next try asks only for the rest. 0 for anything else.
    public let bytesReceived: Int64

    /// Creates an error.
    package init(_ code: Code, _ message: String, curlCode: Int? = nil, systemError: Int32? = nil, retryAfter: String? = nil,
                 bytesReceived: Int64 = 0) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
        self.systemError = systemError
        self.retryAfter = retryAfter
        self.bytesReceived = bytesReceived
    }

    /// This error, saying that `bytes` body bytes were received and kept before it.
    func keeping(_ bytes: Int64) -> TransferError {
        TransferError(code, message, curlCode: curlCode, systemError: systemError, retryAfter: retryAfter, bytesReceived: bytes)
    }

    /// The code and the message on one line.
    public var description: String { "\(code): \(message)" }

    /// A stable failure kind. A struct over a private enum, so kinds can be added later
    /// without breaking anyone's exhaustive switch.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidURL, couldNotResolveHost, couldNotConnect, timedOut, cancelled
            case connectionLost, tooManyRedirects, lengthMismatch, contentMismatch, writeFailed, diskFull
            case untrustedCertificate, tlsFailed
            case http(Int)
            case other(Int)
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The URL is malformed or its scheme is not http or https.
        public static let invalidURL = Code(.invalidURL)
        /// The host name did not resolve.
        public static let couldNotResolveHost = Code(.couldNotResolveHost)
        /// Nobody accepted the connection (refused, unreachable).
        public static let couldNotConnect = Code(.couldNotConnect)
        /// The request timeout passed, or a download stalled for longer than allowed.
        public static let timedOut = Code(.timedOut)
        /// The caller cancelled (task cancellation, `cancel(_:)`, `cancelAll()`, engine shut down).
        public static let cancelled = Code(.cancelled)
        /// The connection broke or the server sent nothing; retrying may help.
        public static let connectionLost = Code(.connectionLost)
        /// The redirect limit was reached.
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// The body was shorter or longer than announced (Content-Length, Content-Range), or
        /// the server answered a different range than asked for.
        public static let lengthMismatch = Code(.lengthMismatch)
        /// The body arrived whole but is not what the server said it sent (its `Repr-Digest`
        /// differs, or it is not the kind of file it should be): it was not kept; retrying may help.
        public static let contentMismatch = Code(.contentMismatch)
        /// Writing the file failed for a reason other than a full disk.
        public static let writeFailed = Code(.writeFailed)
        /// The disk or the quota is full (ENOSPC, EDQUOT).
        public static let diskFull = Code(.diskFull)
        /// The server's HTTPS certificate is not trusted: signed by a CA outside the trusted
        /// ones (give its CA file: `TransferEngine.Configuration.trustedCAFile`), expired, or
        /// not for this host name. Retrying does not help.
        public static let untrustedCertificate = Code(.untrustedCertificate)
        /// The TLS handshake failed, or the trusted-CA file could not be read.
        public static let tlsFailed = Code(.tlsFailed)
        /// A file download got this HTTP status instead of 200/206. `HTTPClient` never uses it.
        public static func http(_ status: Int) -> Code { Code(.http(status)) }
        /// Any other libcurl failure, by its `CURLcode`.
        public static func other(_ curlCode: Int) -> Code { Code(.other(curlCode)) }

        /// The stable number of the kind (`NSError.code`): 1 … 13 in the order above, the HTTP
        /// status itself for `.http(status)`, and 1000 + the `CURLcode` for `.other`.
        public var number: Int {
            switch base {
            case .invalidURL: 1
            case .couldNotResolveHost: 2
            case .couldNotConnect: 3
            case .timedOut: 4
            case .cancelled: 5
            case .connectionLost: 6
            case .tooManyRedirects: 7
            case .lengthMismatch: 8
            case .contentMismatch: 9
            case .writeFailed: 10
            case .diskFull: 11
            case .untrustedCertificate: 12
            case .tlsFailed: 13
            case .http(let status): status
            case .other(let code): 1000 + code
            }
        }

        /// The HTTP status when this is `.http(status)`.
        public var httpStatus: Int? {
            if case .http(let status) = base { status } else { nil }
        }

        /// The name of the kind, e.g. "timedOut" or "http(404)".
        public var description: String {
            switch base {
            case .invalidURL: "invalidURL"
            case .couldNotResolveHost: "couldNotResolveHost"
            case .couldNotConnect: "couldNotConnect"
            case .timedOut: "timedOut"
            case .cancelled: "cancelled"
            case .connectionLost: "connectionLost"
            case .tooManyRedirects: "tooManyRedirects"
            case .lengthMismatch: "lengthMismatch"
            case .contentMismatch: "contentMismatch"
            case .writeFailed: "writeFailed"
            case .diskFull: "diskFull"
            case .untrustedCertificate: "untrustedCertificate"
            case .tlsFailed: "tlsFailed"
            case .http(let status): "http(\(status))"
            case .other(let code): "other(\(code))"
            }
        }
    }
}

extension TransferError {
    static func cancelled(_ message: String = "the transfer was cancelled") -> TransferError {
        TransferError(.cancelled, message)
    }
}

/// The message as `localizedDescription`; `(error as NSError).code` is `code.number`.
extension TransferError: LocalizedError, CustomNSError {
    /// The domain of every `TransferError`; it never changes.
    public static let errorDomain = "CurlTransfer.TransferError"
    /// `code.number`.
    public var errorCode: Int { code.number }
    /// The message and the recovery suggestion (swift-corelibs-foundation reads them only from here).
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let recoverySuggestion { info[NSLocalizedRecoverySuggestionErrorKey] = recoverySuggestion }
        return info
    }
    /// The message.
    public var errorDescription: String? { message }
    /// What to do next, where something can be done.
    public var recoverySuggestion: String? {
        switch code {
        case .untrustedCertificate: "Trust the server's CA (trustedCAFile), or check the server's host name and certificate."
        case .diskFull: "Free some space, then try again."
        case .couldNotResolveHost, .couldNotConnect, .timedOut, .connectionLost: "Check the network connection, then try again."
        default: nil
        }
    }
}
