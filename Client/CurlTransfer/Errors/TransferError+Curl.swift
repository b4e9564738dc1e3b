internal import CCurl

extension TransferError {
    /// Maps a libcurl result to an error. `detail` is the easy handle's error buffer;
    /// `status` the last HTTP status, used for `CURLE_HTTP_RETURNED_ERROR`.
    init(curlCode code: CURLcode, detail: String, status: Int) {
        let raw = Int(code.rawValue)
        let summary = String(cString: curl_easy_strerror(code))
        let message = detail.isEmpty ? summary : "\(summary): \(detail)"
        let kind: Code = switch code {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: .invalidURL
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .couldNotResolveHost
        case CURLE_COULDNT_CONNECT: .couldNotConnect
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_ABORTED_BY_CALLBACK: .cancelled
        case CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            .connectionLost
        case CURLE_TOO_MANY_REDIRECTS: .tooManyRedirects
        case CURLE_PARTIAL_FILE: .lengthMismatch
        case CURLE_WRITE_ERROR: .writeFailed
        case CURLE_HTTP_RETURNED_ERROR: .http(status)
        case CURLE_PEER_FAILED_VERIFICATION: .untrustedCertificate
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER: .tlsFailed
        default: .other(raw)
        }
        self.init(kind, message, curlCode: raw)
    }
}
