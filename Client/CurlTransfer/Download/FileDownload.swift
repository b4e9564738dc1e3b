internal import Synchronization

/// One file to fetch with `TransferEngine.download(_:progress:)`.
///
/// The bytes go to `destination + ".part"` first; the destination only appears, complete
/// and synced, when the whole body has arrived and its length checked out.
package struct FileDownload: Sendable {
    /// Identifies the job for `TransferEngine.cancel(_:)`. Unique per value made with `init`.
    package var id: TransferID
    /// The absolute http or https URL.
    package var url: String
    /// Extra request header fields, sent in this order.
    package var headers: [(String, String)]
    /// The path of the finished file. Missing parent folders are created.
    package var destination: String
    /// The group whose limit this download counts against, if any.
    package var group: TransferGroup?
    /// The bytes of the resource to fetch (an HLS `EXT-X-BYTERANGE`), nil for all of it. The
    /// file then holds those bytes only, and is resumed within them.
    package var range: ByteSpan?

    /// Creates a job with a fresh id.
    package init(url: String, destination: String, headers: [(String, String)] = [], id: TransferID = TransferID(),
                group: TransferGroup? = nil, range: ByteSpan? = nil) {
        self.id = id
        self.url = url
        self.headers = headers
        self.destination = destination
        self.group = group
        self.range = range
    }

    /// Where the bytes are written until the download completes; kept for a later resume.
    package var partialPath: String { destination + ".part" }
}

/// `length` bytes of a resource from byte `offset` on.
package struct ByteSpan: Sendable, Hashable {
    package var offset: Int64
    package var length: Int64

    package init(offset: Int64, length: Int64) {
        self.offset = offset
        self.length = length
    }

    /// The `Range` value (without `bytes=`) for the span's bytes from `skipping` on.
    func rangeValue(skipping: Int64) -> String { "\(offset + skipping)-\(offset + length - 1)" }
}

/// What a finished download did.
package struct FileDownloadResult: Sendable, Equatable {
    /// Bytes this download wrote (not counting what a resumed `.part` file already held).
    package var bytesWritten: Int64
    /// Bytes that were already in the `.part` file and were kept (0 when it started afresh).
    package var resumedFrom: Int64
    /// The size of the finished file.
    package var totalSize: Int64
    /// The final HTTP status: 200 for a whole file, 206 for a resumed one, 416 for a `.part`
    /// file that was already whole (committed as it was).
    package var status: Int
    /// The final answer's `Repr-Digest` field (RFC 9530) as sent: the digest of the whole file,
    /// also on a 206 that sent only its end. nil when the server sent none.
    package var reprDigest: String?
    /// The final answer's `Content-Digest` field (RFC 9530) as sent: the digest of the bytes that
    /// answer carried (on a 206, the range sent, from `resumedFrom` in the file on). nil when the
    /// server sent none.
    package var contentDigest: String?

    /// Creates a result.
    package init(bytesWritten: Int64, resumedFrom: Int64, totalSize: Int64, status: Int, reprDigest: String? = nil,
                 contentDigest: String? = nil) {
        self.bytesWritten = bytesWritten
        self.resumedFrom = resumedFrom
        self.totalSize = totalSize
        self.status = status
        self.reprDigest = reprDigest
        self.contentDigest = contentDigest
    }
}

/// Reports a download's progress from the engine thread: the bytes in the file so far
/// (a resumed prefix included) and the full size when the server announced it. Called at
/// most every ~100 ms per job and once more on success with the final size; keep it quick.
/// The count only goes down when a server ignores a resume range and the file restarts at 0.
package typealias DownloadProgress = @Sendable (_ bytesNow: Int64, _ totalExpected: Int64?) -> Void

/// A job's identity, for cancelling it. Fresh values never repeat within a process.
package struct TransferID: Hashable, Sendable, CustomStringConvertible {
    private static let counter = Atomic<UInt64>(0)

    /// The number behind the id.
    package let rawValue: UInt64

    /// A new id, different from every other made in this process.
    package init() {
        rawValue = TransferID.counter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// "transfer-N".
    package var description: String { "transfer-\(rawValue)" }
}

/// Downloads that share a limit of their own within the engine's: at most `limit` of a
/// group's downloads run at once, the others wait in the engine's queue. A caller can so queue
/// its next files ahead: when one of the group's transfers ends, the engine thread starts the
/// next at once, without a round trip through the caller's tasks.
package struct TransferGroup: Hashable, Sendable {
    /// The group's identity.
    package let id: TransferID
    /// Downloads of the group running at once (at least 1).
    package let limit: Int

    /// A new group.
    package init(limit: Int) {
        id = TransferID()
        self.limit = max(1, limit)
    }
}
