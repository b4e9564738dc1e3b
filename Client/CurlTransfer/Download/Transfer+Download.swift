internal import CCurl

extension Transfer {
    /// Download options. The Range is sent with CURLOPT_RANGE rather than
    /// CURLOPT_RESUME_FROM_LARGE: with the latter, curl fails a 200 answer with
    /// CURLE_RANGE_ERROR before reading its body (costing a second request) and takes a
    /// Content-Length equal to the offset as "already complete" without looking further.
    /// We want to decide those cases ourselves, in `DownloadPlan`.
    func configureDownload(_ state: DownloadState, _ configuration: TransferEngine.Configuration) throws(CurlOptionError) {
        try easy.set(CURLOPT_URL, state.job.url)
        try easy.set(CURLOPT_FAILONERROR, 1)  // error bodies never reach the file
        try easy.set(CURLOPT_BUFFERSIZE, 128 * 1024)
        // A download slower than `lowSpeedLimit` bytes a second for `stallTimeout` fails as timed out.
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, max(1, configuration.lowSpeedLimit))
        try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, configuration.stallTimeout.milliseconds / 1000))
        try easy.setHeaders(Transfer.headerLines(state.job.headers))
        state.resumeOffset = PartFile.existingSize(at: state.job.partialPath)
        if let span = state.job.range, state.resumeOffset >= span.length {
            // A span's whole bytes were in (a stop before the commit) or more: no range asks for the
            // check a whole file's 416 gives, so the span is fetched again.
            PartFile.remove(at: state.job.partialPath)
            state.resumeOffset = 0
        }
        try setRange(from: state.resumeOffset, of: state.job.range)
    }

    /// The Range to ask for: the bytes from `offset` on, of the whole file or of `span`.
    private func setRange(from offset: Int64, of span: ByteSpan?) throws(CurlOptionError) {
        if let span {
            try easy.set(CURLOPT_RANGE, span.rangeValue(skipping: offset))
        } else if offset > 0 {
            try easy.set(CURLOPT_RANGE, "\(offset)-")
        } else {
            try easy.set(CURLOPT_RANGE, pointer: nil)
        }
    }

    func receiveDownloadBody(_ bytes: UnsafeRawBufferPointer, _ state: DownloadState) -> Int {
        if state.plan == nil { preparePlan(state) }
        guard state.failure == nil, let file = state.file else {
            // An unwanted body (e.g. after a 416) is drained, a failed one aborts.
            return state.failure == nil ? bytes.count : 0
        }
        do {
            try file.write(bytes)
        } catch {
            state.failure = error
            return 0
        }
        state.bytesWritten += Int64(bytes.count)
        return bytes.count
    }

    /// Decides what to do with the final response and opens the `.part` file accordingly.
    private func preparePlan(_ state: DownloadState) {
        let plan = DownloadPlan.decide(resumeOffset: state.resumeOffset, head: head, span: state.job.range)
        state.plan = plan
        do throws(TransferError) {
            switch plan {
            case .append, .alreadyComplete:
                let file = try PartFile(path: state.job.partialPath, truncate: false)
                guard file.size == state.resumeOffset else {
                    throw TransferError(.lengthMismatch, "\(state.job.partialPath) changed size during the request")
                }
                state.file = file
            case .replace:
                state.file = try PartFile(path: state.job.partialPath, truncate: true)
            case .restartFromZero:
                break
            case .fail(let error):
                state.failure = error
            }
        } catch {
            state.failure = error
        }
    }

    func reportProgress(_ state: DownloadState, final: Bool) {
        guard let progress = state.progress else { return }
        let bytes = state.file?.size ?? state.resumeOffset
        let now = ContinuousClock.now
        if !final {
            guard bytes != state.lastReportedBytes else { return }
            if let last = state.lastReport, now - last < .milliseconds(100) { return }
        }
        state.lastReport = now
        state.lastReportedBytes = bytes
        progress(bytes, final ? state.expectedTotal ?? bytes : state.expectedTotal)
    }

    func completeDownload(_ result: CURLcode, _ state: DownloadState) -> Completion {
        if result == CURLE_OK || result == CURLE_HTTP_RETURNED_ERROR, state.plan == nil, state.failure == nil {
            preparePlan(state)  // no body arrived: an empty file, an error status or a 416
        }
        if let failure = state.failure {
            state.answer(.failure(failure))
            return .answered
        }
        if state.plan == .restartFromZero {
            return restartFromZero(state)
        }
        let whole = if case .alreadyComplete = state.plan { true } else { false }
        guard result == CURLE_OK || whole else {
            state.answer(.failure(curlError(result)))
            return .answered
        }
        guard let file = state.file else {
            state.answer(.failure(TransferError(.writeFailed, "no file was opened for \(state.job.destination)")))
            return .answered
        }
        let onDisk = file.sizeOnDisk
        if let mismatch = DownloadPlan.verify(bytesOnDisk: onDisk, expectedTotal: state.expectedTotal) {
            state.answer(.failure(mismatch))
            return .answered
        }
        reportProgress(state, final: true)
        let resumed: Int64 = switch state.plan {
        case .append, .alreadyComplete: state.resumeOffset
        default: 0
        }
        state.answer(committing: file, result: FileDownloadResult(bytesWritten: state.bytesWritten, resumedFrom: resumed,
                                                                  totalSize: onDisk, status: head.status,
                                                                  reprDigest: head.value("Repr-Digest"),
                                                                  contentDigest: head.value("Content-Digest")))
        return .answered
    }

    /// The server refused the range (416): the `.part` file is complete or corrupt. Delete it
    /// and ask for the whole file on the same handle. No Range is sent then, so a second 416
    /// is an ordinary `.http(416)` failure and this cannot loop.
    private func restartFromZero(_ state: DownloadState) -> Completion {
        PartFile.remove(at: state.job.partialPath)
        state.resumeOffset = 0
        state.plan = nil
        state.file = nil
        head = ResponseHead()
        do {
            try setRange(from: 0, of: state.job.range)
        } catch {
            state.answer(.failure(error.transferError))
            return .answered
        }
        return .restart
    }
}
