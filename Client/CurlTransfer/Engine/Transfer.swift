internal import CCurl

/// One job while its easy handle is in the multi handle. Lives on the engine thread only:
/// the loop creates it, curl's callbacks reach it through an unretained pointer, and the
/// loop answers the caller and drops it when curl reports the transfer done.
final class Transfer {
    let ticket: JobTicket
    let easy: EasyHandle
    /// The latest response's status line and headers, rebuilt from curl's header callback.
    var head = ResponseHead()
    let kind: Kind

    enum Kind {
        case download(DownloadState)
        case request(RequestState)
    }

    /// What the loop does after curl reported the transfer done.
    enum Completion {
        /// The outcome is settled: retire the transfer, then `deliver()` it to the caller.
        case answered
        /// Options were changed for a second attempt; add the handle to the multi again.
        case restart
    }

    private init(ticket: JobTicket, easy: EasyHandle, kind: Kind) {
        self.ticket = ticket
        self.easy = easy
        self.kind = kind
    }

    /// Sets up `easy` for `job`. On failure the job has not been answered; the caller does it.
    static func make(job: Job, easy: EasyHandle, configuration: TransferEngine.Configuration) throws(TransferError) -> Transfer {
        let transfer: Transfer
        switch job.work {
        case .download(let download, let progress, let continuation):
            let state = DownloadState(job: download, progress: progress, continuation: continuation)
            transfer = Transfer(ticket: job.ticket, easy: easy, kind: .download(state))
        case .request(let request, let continuation):
            let state = RequestState(request: request, continuation: continuation)
            transfer = Transfer(ticket: job.ticket, easy: easy, kind: .request(state))
        }
        do {
            try transfer.configureCommon(configuration)
            switch transfer.kind {
            case .download(let state): try transfer.configureDownload(state, configuration)
            case .request(let state): try transfer.configureRequest(state, configuration)
            }
        } catch {
            throw error.transferError
        }
        return transfer
    }

    /// Options every transfer gets. The handle was reset, so nothing is left from a previous job.
    private func configureCommon(_ configuration: TransferEngine.Configuration) throws(CurlOptionError) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_NOSIGNAL, 1)  // curl must not use signals on our thread
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, 1)
        try easy.set(CURLOPT_MAXREDIRS, configuration.maxRedirects)
        // HTTP/1.1 keep-alive: one transfer per connection, so the connection caps mean
        // what they say, and connections are reused from the multi handle's cache.
        try easy.set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        try easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        try easy.set(CURLOPT_MAXAGE_CONN, max(1, configuration.idleConnectionAge.milliseconds / 1000))
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.milliseconds)
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        // HTTPS always verifies the peer and the host name; a CA file replaces the system's store.
        try easy.set(CURLOPT_SSL_VERIFYPEER, 1)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = configuration.trustedCAFile {
            try easy.set(CURLOPT_CAINFO, caFile)
            try easy.set(CURLOPT_CAPATH, pointer: nil)
        }
        try check(curl_shim_setopt_write_function(easy.pointer, CurlCallbacks.write), CURLOPT_WRITEFUNCTION)
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try check(curl_shim_setopt_header_function(easy.pointer, CurlCallbacks.header), CURLOPT_HEADERFUNCTION)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        try check(curl_shim_setopt_xferinfo_function(easy.pointer, CurlCallbacks.progress), CURLOPT_XFERINFOFUNCTION)
        try easy.set(CURLOPT_XFERINFODATA, pointer: context)
        try easy.set(CURLOPT_NOPROGRESS, 0)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(CurlOptionError) {
        if code != CURLE_OK { throw CurlOptionError(option: option, code: code) }
    }

    /// "Name: value" lines for CURLOPT_HTTPHEADER. An empty value needs curl's "Name;" form.
    static func headerLines(_ headers: [(String, String)]) -> [String] {
        headers.map { name, value in value.isEmpty ? "\(name);" : "\(name): \(value)" }
    }

    // MARK: Callback entry points

    func receiveHeader(_ line: String) {
        head.consume(line: line)
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch kind {
        case .download(let state): receiveDownloadBody(bytes, state)
        case .request(let state): receiveRequestBody(bytes, state)
        }
    }

    /// False aborts the transfer.
    func tick() -> Bool {
        if ticket.isCancelled { return false }
        if case .download(let state) = kind { reportProgress(state, final: false) }
        return true
    }

    // MARK: Ending

    /// curl reported the transfer done with `result`; the handle is out of the multi handle.
    func complete(_ result: CURLcode) -> Completion {
        switch kind {
        case .download(let state): completeDownload(result, state)
        case .request(let state): completeRequest(result, state)
        }
    }

    /// Settles the outcome as `error` (cancellation, engine shutdown, setup failure).
    func abandon(_ error: TransferError) {
        switch kind {
        case .download(let state): state.answer(.failure(error))
        case .request(let state): state.answer(.failure(error))
        }
    }

    /// Resumes the caller with the settled outcome. The loop calls it after its bookkeeping,
    /// so a caller that reads the engine's statistics sees this transfer counted.
    func deliver() {
        switch kind {
        case .download(let state): state.deliver()
        case .request(let state): state.deliver()
        }
    }

    /// The error for a failed curl result: curl's own, or `.http(status)` for FAILONERROR.
    func curlError(_ result: CURLcode) -> TransferError {
        TransferError(curlCode: result, detail: easy.errorDetail, status: head.status)
    }
}

extension Duration {
    /// Whole milliseconds, at least 1 (curl reads 0 as "no limit").
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        return max(1, Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000))
    }
}
