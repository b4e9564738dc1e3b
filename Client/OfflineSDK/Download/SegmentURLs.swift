/// A track's segment URLs while its plan waits to be stored, front-coded: each URL is kept as
/// the number of bytes it shares with the one before and the bytes after those, all in one
/// buffer. A track's segment URLs differ only from their file name on (`…/41.ts?token=…`), so
/// a 2-hour video's 3,600 URLs per track take about 110 bytes each instead of a ~300-byte
/// string apiece. Read in order only, which is how a plan is stored.
struct SegmentURLs: Sendable, Sequence {
    private var bytes: [UInt8] = []
    /// Per URL: the bytes shared with the previous URL, and where its own bytes end in `bytes`.
    private var entries: [Entry] = []
    private var last: [UInt8] = []

    private struct Entry: Sendable {
        var shared: Int32
        var end: Int32
    }

    init() {}

    init(_ urls: some Sequence<String>) {
        for url in urls { append(url) }
    }

    var count: Int { entries.count }

    mutating func append(_ url: String) {
        var url = url
        url.withUTF8 { new in
            var shared = 0
            while shared < new.count, shared < last.count, new[shared] == last[shared] { shared += 1 }
            bytes.append(contentsOf: new[shared...])
            entries.append(Entry(shared: Int32(shared), end: Int32(bytes.count)))
            last.removeAll(keepingCapacity: true)
            last.append(contentsOf: new)
        }
    }

    func makeIterator() -> Iterator { Iterator(list: self) }

    struct Iterator: IteratorProtocol {
        let list: SegmentURLs
        var index = 0
        var start = 0
        var current: [UInt8] = []

        init(list: SegmentURLs) { self.list = list }

        mutating func next() -> String? {
            guard index < list.entries.count else { return nil }
            let entry = list.entries[index]
            current.removeSubrange(Int(entry.shared)...)
            current.append(contentsOf: list.bytes[start..<Int(entry.end)])
            start = Int(entry.end)
            index += 1
            return String(decoding: current, as: UTF8.self)
        }
    }
}
