#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SystemFiles

/// What a handler answers. Files are sent zero-copy by the server; byte ranges and
/// conditional requests are applied by the server to any 200 answer (see `HTTPResponse+Conditional`).
package struct HTTPResponse: Sendable {
    /// The body of a response.
    package enum Body: Sendable, Equatable {
        /// No body.
        case empty
        /// Bytes held in memory.
        case bytes([UInt8])
        /// A region of a file on disk, sent with sendfile.
        case file(path: String, offset: UInt64, length: UInt64)
        /// Bytes made while they are sent (events, a paced or broken body); no ranges apply.
        case stream(BodyStream)
        /// Bytes of a known length made for the range asked for (`RangedBody`); ranges apply.
        case ranged(RangedBody)

        /// The number of bytes the body holds (a stream: its announced length, else 0).
        package var count: UInt64 {
            switch self {
            case .empty: 0
            case .bytes(let bytes): UInt64(bytes.count)
            case .file(_, _, let length): length
            case .stream(let stream): stream.length ?? 0
            case .ranged(let ranged): ranged.length
            }
        }

        /// The bytes the body holds, a file's read from its region (all of them, else nil); nil for
        /// a body made while it is sent or for the range asked (a stream, a ranged body).
        package var contents: [UInt8]? {
            switch self {
            case .empty: return []
            case .bytes(let bytes): return bytes
            case .file(let path, let offset, let length):
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { return nil }
                defer { close(fd) }
                var bytes = [UInt8](repeating: 0, count: Int(length))
                var done = 0
                while done < bytes.count {
                    let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(offset) + off_t(done)) }
                    if read < 0, errno == EINTR { continue }
                    guard read > 0 else { return nil }
                    done += read
                }
                return bytes
            case .stream, .ranged: return nil
            }
        }
    }

    /// The status code.
    package var status: Int
    /// The response headers (Content-Length is added by the server).
    package var headers: HTTPHeaders
    /// The body.
    package var body: Body
    /// Time to wait before sending the answer (besides the server's added latency); no
    /// thread waits with it.
    package var delay: Duration?
    /// A remark for the completion observer (a request log), never sent.
    package var note: String?
    /// Close the connection without answering at all (a fault a mock injects).
    package var dropsConnection = false
    /// The work of an answer that comes later (`HTTPResponse.later(_:)`).
    var laterWork: (@Sendable (PendingAnswer) -> Void)?

    /// Creates a response.
    package init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a UTF-8 text body and its content type.
    package static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", contentType)]), body: .bytes(Array(text.utf8)))
    }

    /// A response with a byte body and its content type.
    package static func bytes(_ bytes: [UInt8], status: Int = 200, contentType: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", contentType)]), body: .bytes(bytes))
    }

    /// A 200 response for a whole file, with an ETag from its size and modification time
    /// (as nginx makes them); nil when the path is not a readable regular file.
    package static func file(at path: String, contentType: String) -> HTTPResponse? {
        guard let status = FileStatus(path: path), status.isRegularFile, access(path, R_OK) == 0 else { return nil }
        let size = UInt64(status.size)
        let mtime = status.modifiedSeconds
        var headers = HTTPHeaders([("Content-Type", contentType)])
        headers.add("ETag", etag(mtime: mtime, size: size))
        return HTTPResponse(status: 200, headers: headers, body: .file(path: path, offset: 0, length: size))
    }

    /// A file's ETag as nginx makes it: `"{mtime hex}-{size hex}"`, quotes included.
    package static func etag(mtime: Int, size: UInt64) -> String {
        "\"\(String(mtime, radix: 16))-\(String(size, radix: 16))\""
    }
}

/// Common status codes' reason phrases, for logs and error bodies.
package enum HTTPStatus {
    /// The standard reason phrase for `code`.
    package static func reason(_ code: Int) -> String {
        switch code {
        case 200: "OK"
        case 204: "No Content"
        case 206: "Partial Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 413: "Content Too Large"
        case 416: "Range Not Satisfiable"
        case 422: "Unprocessable Content"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        default: "Status \(code)"
        }
    }
}
