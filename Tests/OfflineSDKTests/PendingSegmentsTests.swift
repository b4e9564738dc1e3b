import Foundation
@testable import OfflineSDK
import TestKit
import Testing

/// The queue reads its pages from the store as it goes: each test drives it off the pool, as the
/// runner does (on the work executor), and checks what it saw afterwards.
@Suite("PendingSegments: the runner's page-at-a-time queue")
struct PendingSegmentsTests {
    /// A store holding one download with `tracks` x `count` segments, some already done.
    private func store(tracks: Int, count: Int, done: Set<Int> = [], in directory: TemporaryDirectory) async throws -> OfflineStore {
        let store = try await BlockingWork.run { try OfflineStore(directory: directory.url) }
        let record = try DownloadRecord.downloading(token: "t")
        var segments: [SegmentRecord] = []
        for track in 0..<tracks {
            for sequence in 0..<count {
                segments.append(SegmentRecord(token: "t", track: track, sequence: sequence, url: "http://h/\(track)/\(sequence).ts",
                                              file: "\(track)/\(sequence).ts", duration: 2, estimatedBytes: 10,
                                              bytes: nil, done: done.contains(sequence)))
            }
        }
        try await store.offPool { [segments] in try $0.insert(record, tracks: [], segments: segments) }
        return store
    }

    private static func drain(_ pending: inout PendingSegments) throws -> [String] {
        var order: [String] = []
        while let next = try pending.next() { order.append("\(next.sequence)/\(next.track)") }
        return order
    }

    @Test("every unfinished segment comes once, in (sequence, track) order, across page boundaries")
    func order() async throws {
        let directory = try TemporaryDirectory()
        let store = try await store(tracks: 2, count: 7, done: [1, 4], in: directory)
        let (order, emptyAfter) = try await store.offPool { store in
            var pending = PendingSegments(store: store, token: "t", pageSize: 3)
            return (try Self.drain(&pending), try pending.isEmpty())
        }
        let expected = [0, 2, 3, 5, 6].flatMap { ["\($0)/0", "\($0)/1"] }
        #expect(order == expected)
        #expect(emptyAfter)
    }

    @Test("a segment put back comes next; a retried one after everything else")
    func putBackAndRetry() async throws {
        let directory = try TemporaryDirectory()
        let store = try await store(tracks: 1, count: 5, in: directory)
        let (first, second, peeked, rest) = try await store.offPool { store in
            var pending = PendingSegments(store: store, token: "t", pageSize: 2)
            let first = try pending.next(), second = try pending.next()
            if let first, let second {
                pending.retryLater(first)
                pending.putBack(second)
            }
            return (first, second, try pending.peek()?.sequence, try Self.drain(&pending))
        }
        try #require(first != nil && second != nil)
        #expect(peeked == 1)
        #expect(rest == ["1/0", "2/0", "3/0", "4/0", "0/0"])
    }

    @Test("held segments take the store's fresh URLs; later pages are read fresh")
    func reloadURLs() async throws {
        let directory = try TemporaryDirectory()
        let store = try await store(tracks: 1, count: 4, in: directory)
        let (first, urls) = try await store.offPool { store in
            var pending = PendingSegments(store: store, token: "t", pageSize: 2)
            let first = try pending.next()
            if let first { pending.retryLater(first) }
            try store.updateURLs(token: "t", (0..<4).map { (track: 0, sequence: $0, url: "http://fresh/\($0).ts") })
            try pending.reloadURLs()
            var urls: [String] = []
            while let next = try pending.next() { urls.append(next.url) }
            return (first, urls)
        }
        try #require(first != nil)
        #expect(urls == ["http://fresh/1.ts", "http://fresh/2.ts", "http://fresh/3.ts", "http://fresh/0.ts"])
    }
}

extension DownloadRecord {
    /// A downloading record with nothing else set, for tests of the store's segment rows.
    static func downloading(token: String) throws -> DownloadRecord {
        DownloadRecord(
            token: token, videoID: "1", accountID: "2", videoJSON: Data("{}".utf8), state: OfflineVideoDownloadState.downloading.rawValue,
            parameters: try JSONEncoder().encode(DownloadParameters()), selections: nil, displayName: "v", requestedAt: 0,
            endedAt: nil, error: nil, bitrate: nil, masterURL: nil, policyKey: nil, serviceBaseURL: nil, allowsCellular: false,
            license: nil, licenseTerms: nil, licenseRequestedAt: nil, licenseExpiresAt: nil, initialPlaybackAt: nil,
            posterFile: nil, thumbnailFile: nil, sequence: 1)
    }
}
