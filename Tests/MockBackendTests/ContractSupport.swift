import Foundation
import MicroHTTP
import MockBackend
import Testing
import TestKit
import WireModels

/// Requests the contract tests (issue 26) make of a live server with curl.
enum Contract {
    static let videos = "/playback/v1/accounts/\(Fixture.northwind)/videos"

    static func get(_ server: MockBackendServer, _ path: String, key: String? = Fixture.northwindSearchKey,
                    _ options: [String] = []) async throws -> CurlResponse {
        try await Curl.fetch(server.app.baseURL + path, (key.map { ["-H", "BCOV-Policy: \($0)"] } ?? []) + options)
    }

    static func admin(_ server: MockBackendServer, _ path: String, _ options: [String] = []) async throws -> CurlResponse {
        try await Curl.fetch(server.app.baseURL + path, ["-H", "Authorization: Bearer \(server.app.adminToken)"] + options)
    }

    static func expectError(_ response: CurlResponse, _ status: Int, _ code: String, _ subcode: String?,
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        let errors = try response.apiErrors()
        #expect(errors.count == 1, sourceLocation: sourceLocation)
        #expect(errors.first?.errorCode == code, sourceLocation: sourceLocation)
        #expect(errors.first?.errorSubcode == subcode, "\(response.text)", sourceLocation: sourceLocation)
    }
}

/// One HTTP/1.1 connection kept alive, blocking, for tests that must control which requests
/// share a connection. Answers must carry `Content-Length`.
final class KeepAliveConnection {
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    private let socket: Int32
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure("socket: \(errno)") }
        // A ceiling on every read, never a wait: a server that stops answering fails the test.
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var noDelay: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(socket); throw Failure("connect: \(errno)") }
    }

    deinit { close(socket) }

    /// Sends a GET and reads its whole answer.
    func get(_ target: String, headers: [String] = []) throws -> (status: Int, body: [UInt8]) {
        let request = Array(("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n").utf8)
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure("send: \(errno)") }
            sent += count
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while true {
            if buffer.count >= 4, let end = (0...(buffer.count - 4)).first(where: { Array(buffer[$0..<$0 + 4]) == separator }) { headEnd = end; break }
            try fill()
        }
        guard let headEnd else { throw Failure("no header end") }
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        let length = head.dropFirst().compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "content-length" ? Int(parts[1].trimmingCharacters(in: .whitespaces)) : nil
        }.first
        guard let length else { throw Failure("no Content-Length in \(head)") }
        buffer.removeFirst(headEnd + 4)
        while buffer.count < length { try fill() }
        let body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return (status, body)
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Failure("recv: \(count == 0 ? "closed" : "errno \(errno)")") }
        buffer += chunk[..<count]
    }
}
