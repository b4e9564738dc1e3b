internal import CCurl
import Locking

/// An `HTTPClient` request's state while it runs. Engine thread only.
final class RequestState {
    let request: HTTPClientRequest
    private var continuation: CheckedContinuation<Result<HTTPClientResponse, TransferError>, Never>?
    var body: [UInt8] = []

    init(request: HTTPClientRequest, continuation: CheckedContinuation<Result<HTTPClientResponse, TransferError>, Never>) {
        self.request = request
        self.continuation = continuation
    }

    private var outcome: Result<HTTPClientResponse, TransferError>?

    /// Settles the outcome; the first one wins.
    func answer(_ result: Result<HTTPClientResponse, TransferError>) {
        if outcome == nil { outcome = result }
    }

    /// Resumes the caller with the settled outcome, once.
    func deliver() {
        guard let outcome, let continuation else { return }
        self.continuation = nil
        Handoff.publish()
        continuation.resume(returning: outcome)
    }
}

extension Transfer {
    func configureRequest(_ state: RequestState, _ configuration: TransferEngine.Configuration) throws(CurlOptionError) {
        let request = state.request
        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_TIMEOUT_MS, (request.timeout ?? configuration.requestTimeout).milliseconds)
        try easy.set(CURLOPT_FRESH_CONNECT, request.sendOnce ? 1 : 0)
        var lines = Transfer.headerLines(request.headers)
        if request.method == .head {
            try easy.set(CURLOPT_NOBODY, 1)
        } else if let body = request.body ?? (request.method == .post ? [] : nil) {
            try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(body.count))
            try easy.setCopied(CURLOPT_COPYPOSTFIELDS, body)
            if request.method != .post { try easy.set(CURLOPT_CUSTOMREQUEST, request.method.rawValue) }
            // curl would otherwise send "Expect: 100-continue" for large bodies and wait for it.
            if !request.headers.contains(where: { $0.0.equalsIgnoringASCIICase("Expect") }) {
                lines.append("Expect:")
            }
        } else {
            try easy.set(CURLOPT_HTTPGET, 1)
            if request.method != .get { try easy.set(CURLOPT_CUSTOMREQUEST, request.method.rawValue) }
        }
        try easy.setHeaders(lines)
    }

    func receiveRequestBody(_ bytes: UnsafeRawBufferPointer, _ state: RequestState) -> Int {
        if state.body.isEmpty, let length = head.contentLength, length < 256 * 1024 * 1024 {
            state.body.reserveCapacity(Int(length))
        }
        state.body.append(contentsOf: bytes)
        return bytes.count
    }

    func completeRequest(_ result: CURLcode, _ state: RequestState) -> Completion {
        guard result == CURLE_OK else {
            state.answer(.failure(curlError(result)))
            return .answered
        }
        let response = HTTPClientResponse(
            status: easy.info(CURLINFO_RESPONSE_CODE),
            headers: HTTPClientHeaders(head.fields),
            body: state.body,
            effectiveURL: easy.info(string: CURLINFO_EFFECTIVE_URL) ?? state.request.url)
        state.answer(.success(response))
        return .answered
    }
}
