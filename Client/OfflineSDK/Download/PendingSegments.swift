/// The segments a download still has to fetch, in download order (sequence, then track),
/// read from the store a page at a time: a 2-hour video's 7,200 segment records are never
/// all in memory. Segments handed back (a lost network, a failure to retry) are kept here
/// until they are taken again.
struct PendingSegments {
    private let store: OfflineStore
    private let token: String
    private let pageSize: Int
    /// The current page, consumed from `head`.
    private var page: [SegmentRecord] = []
    private var head = 0
    /// Where the next page starts: after the last segment read from the store.
    private var position: (sequence: Int, track: Int)?
    private var storeExhausted = false
    /// Put back to go first (their turn was interrupted), most recent first.
    private var front: [SegmentRecord] = []
    /// Failed ones, to go after everything else.
    private var retries: [SegmentRecord] = []

    init(store: OfflineStore, token: String, pageSize: Int = 256) {
        self.store = store
        self.token = token
        self.pageSize = pageSize
    }

    /// The next segment to fetch, or nil when none is left.
    mutating func next() throws -> SegmentRecord? {
        if let segment = front.popLast() { return segment }
        if try fill() {
            head += 1
            return page[head - 1]
        }
        return retries.isEmpty ? nil : retries.removeFirst()
    }

    /// The segment `next()` would return, without taking it.
    mutating func peek() throws -> SegmentRecord? {
        if let segment = front.last { return segment }
        if try fill() { return page[head] }
        return retries.first
    }

    /// Whether nothing is left to fetch.
    mutating func isEmpty() throws -> Bool { try peek() == nil }

    /// Puts a segment back to be taken next.
    mutating func putBack(_ segment: SegmentRecord) { front.append(segment) }

    /// Puts a segment at the end, after everything still pending.
    mutating func retryLater(_ segment: SegmentRecord) { retries.append(segment) }

    /// Replaces the URLs of the segments held here with the store's (after a URL refresh);
    /// later pages are read fresh anyway.
    mutating func reloadURLs() throws {
        let held = front + page[head...] + retries
        let urls = try store.segmentURLs(token, held.map(\.key))
        func refresh(_ segments: inout [SegmentRecord], from start: Int) {
            for index in segments.indices where index >= start {
                if let url = urls[segments[index].key] {
                    segments[index].url = url
                }
            }
        }
        refresh(&front, from: 0)
        refresh(&page, from: head)
        refresh(&retries, from: 0)
    }

    /// Makes sure the current page has a segment left, reading the next page if needed.
    private mutating func fill() throws -> Bool {
        if head < page.count { return true }
        guard !storeExhausted else { return false }
        page = try store.pendingSegments(token, after: position, limit: pageSize)
        head = 0
        if let last = page.last { position = (last.sequence, last.track) }
        if page.count < pageSize { storeExhausted = true }
        return !page.isEmpty
    }
}
