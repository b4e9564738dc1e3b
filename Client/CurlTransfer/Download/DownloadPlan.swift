/// What a file download does with the final response, decided from the status and the
/// headers alone. The rules for resuming live here and nowhere else; pure, tested without I/O.
enum DownloadPlan: Equatable, Sendable {
    /// 206 for the range we asked: append to the `.part` file. `expectedTotal` is the full size.
    case append(expectedTotal: Int64?)
    /// 200: the whole file follows; truncate the `.part` file and write from byte 0.
    case replace(expectedTotal: Int64?)
    /// 416 to a resume request naming a full size equal to the `.part` file's (`bytes */N`):
    /// the body had arrived whole before (a process stopped between receiving and committing
    /// it, the only way a `.part` file reaches its full length): commit it as it is.
    case alreadyComplete(total: Int64)
    /// 416 to a resume request otherwise: the `.part` file is longer than the file or cannot be
    /// checked; fetch again from 0.
    case restartFromZero
    /// Anything else: fail, keeping the `.part` file as it was.
    case fail(TransferError)

    /// The plan for a response to a request that asked for bytes from `resumeOffset` on
    /// (0: no Range header was sent), of the whole file or of `span` (a byte range of it, whose
    /// bytes alone the file holds: always asked for with a Range).
    static func decide(resumeOffset: Int64, head: ResponseHead, span: ByteSpan? = nil) -> DownloadPlan {
        if let span { return decide(resumeOffset: resumeOffset, head: head, span: span) }
        switch head.status {
        case 200:
            return .replace(expectedTotal: head.contentLength)
        case 206:
            guard let contentRange = head.contentRange, let range = contentRange.range else {
                return .fail(TransferError(.lengthMismatch, "206 response without a usable Content-Range"))
            }
            guard range.lowerBound == resumeOffset else {
                return .fail(TransferError(.lengthMismatch,
                                           "asked for bytes from \(resumeOffset), server sent \(range.lowerBound)-\(range.upperBound)"))
            }
            let rangeLength = range.upperBound - range.lowerBound + 1
            if let contentLength = head.contentLength, contentLength != rangeLength {
                return .fail(TransferError(.lengthMismatch,
                                           "Content-Length \(contentLength) does not match Content-Range \(range.lowerBound)-\(range.upperBound)"))
            }
            // With a known full size, expect it even if this range stops short: a server may
            // send less than the open-ended range asked for, and the final check reports it.
            return .append(expectedTotal: contentRange.completeLength ?? range.upperBound + 1)
        case 416 where resumeOffset > 0:
            if let total = head.contentRange?.completeLength, total == resumeOffset, head.contentRange?.range == nil {
                return .alreadyComplete(total: total)
            }
            return .restartFromZero
        default:
            return .fail(TransferError(.http(head.status), "the server answered \(head.status)", retryAfter: head.value("Retry-After")))
        }
    }

    /// The same for a request of `span`'s bytes from `resumeOffset` on: only a 206 with exactly
    /// those bytes is kept. A 200 is the whole file, which is not the segment: it fails (a server
    /// that ignores ranges cannot serve byte-range playlists).
    private static func decide(resumeOffset: Int64, head: ResponseHead, span: ByteSpan) -> DownloadPlan {
        let first = span.offset + resumeOffset, last = span.offset + span.length - 1
        switch head.status {
        case 206:
            guard let range = head.contentRange?.range else {
                return .fail(TransferError(.lengthMismatch, "206 response without a usable Content-Range"))
            }
            guard range.lowerBound == first, range.upperBound == last else {
                return .fail(TransferError(.lengthMismatch, "asked for bytes \(first)-\(last), server sent \(range.lowerBound)-\(range.upperBound)"))
            }
            if let contentLength = head.contentLength, contentLength != last - first + 1 {
                return .fail(TransferError(.lengthMismatch,
                                           "Content-Length \(contentLength) does not match Content-Range \(range.lowerBound)-\(range.upperBound)"))
            }
            return .append(expectedTotal: span.length)
        case 200:
            return .fail(TransferError(.lengthMismatch,
                                       "asked for bytes \(first)-\(last), the server answered 200 with the whole file: it does not serve byte ranges"))
        case 416 where resumeOffset > 0:
            return .restartFromZero
        default:
            return .fail(TransferError(.http(head.status), "the server answered \(head.status)", retryAfter: head.value("Retry-After")))
        }
    }

    /// Checks the finished file's size against what the server announced; nil when it fits.
    static func verify(bytesOnDisk: Int64, expectedTotal: Int64?) -> TransferError? {
        guard let expectedTotal, expectedTotal != bytesOnDisk else { return nil }
        return TransferError(.lengthMismatch, "received \(bytesOnDisk) bytes, the server announced \(expectedTotal)")
    }
}
