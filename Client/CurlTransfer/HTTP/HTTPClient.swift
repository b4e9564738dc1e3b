/// Sends HTTP requests for API calls and reads the answers into memory.
///
/// Requests run on a `TransferEngine`'s thread and share its connection cache; give the
/// client the engine that downloads the segments so both reuse the same connections.
///
/// ```swift
/// let client = HTTPClient(engine: engine)
/// let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:8080/api/videos/1"))
/// if response.status == 200, response.headers["Content-Type"] == "application/json" {
///     let json = response.body
/// }
/// ```
///
/// Any HTTP status is a response (the caller reads `status` and `body`); only transport
/// failures throw. Cancelling the calling task cancels the request with `.cancelled`.
package final class HTTPClient: Sendable {
    /// The engine the requests run on.
    package let engine: TransferEngine

    /// Creates a client on `engine` (a new one of its own by default).
    package init(engine: TransferEngine = TransferEngine()) {
        self.engine = engine
    }

    /// Sends `request` and returns the final response after redirects.
    ///
    /// Throws `.invalidURL`, `.couldNotResolveHost`, `.couldNotConnect`, `.timedOut` (after
    /// `request.timeout` or the engine's `requestTimeout`), `.connectionLost`, `.cancelled` or `.other(curlCode)`.
    package func send(_ request: HTTPClientRequest) async throws(TransferError) -> HTTPClientResponse {
        try await engine.send(request)
    }
}
