import Foundation
import MockBackend
@testable import OfflineSDK
import SystemFiles
import TestKit
import Testing

@Suite("Package files: the runner's look at the disk, the stored copies written again, segment rows")
struct PackageFilesTests {
    @Test("PackageListing: a file is seen only when its folder lists it, with its size; a folder or a missing one is nothing")
    func listing() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let root = directory.url.path
        try FileManager.default.createDirectory(atPath: root + "/0-video/00002.ts", withIntermediateDirectories: true)
        try Data(repeating: 7, count: 188).write(to: URL(fileURLWithPath: root + "/0-video/00000.ts"))
        try Data().write(to: URL(fileURLWithPath: root + "/0-video/00001.ts.part"))
        try Data(repeating: 1, count: 5).write(to: URL(fileURLWithPath: root + "/top.json"))

        var listing = PackageListing(packageDirectory: root)
        #expect(listing.size(of: "0-video/00000.ts") == 188)
        #expect(listing.size(of: "0-video/00001.ts") == nil, "only its .part file is there")
        #expect(listing.size(of: "0-video/00002.ts") == nil, "a folder by that name is not a segment")
        #expect(listing.size(of: "1-audio-en/00000.ts") == nil, "no such folder")
        #expect(listing.size(of: "top.json") == 5)
        // `exists` answers as access(F_OK) does: anything by that name.
        #expect(listing.exists("0-video/00000.ts") && listing.exists("0-video/00002.ts") && listing.exists("top.json"))
        #expect(!listing.exists("0-video/00001.ts") && !listing.exists("1-audio-en/00000.ts"))
        // A file that appears after its folder was listed is not looked at: the runner lists
        // before anything of this download is written.
        try Data(repeating: 2, count: 3).write(to: URL(fileURLWithPath: root + "/0-video/00003.ts"))
        #expect(listing.size(of: "0-video/00003.ts") == nil)
        var fresh = PackageListing(packageDirectory: root)
        #expect(fresh.size(of: "0-video/00003.ts") == 3)

        #expect(DirectoryNames.of(root + "/0-video") == ["00000.ts", "00001.ts.part", "00002.ts", "00003.ts"])
        #expect(DirectoryNames.of(root + "/nothing-here") == [])
        #expect(DirectoryNames.of(root + "/top.json") == [], "a file has nothing in it")
    }

    @Test("segment rows read back as written, column by column")
    func segmentRows() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await BlockingWork.run { try OfflineStore(directory: directory.url) }
        let record = try DownloadRecord.downloading(token: "t")
        let segments = [
            SegmentRecord(token: "t", track: 0, sequence: 0, url: "http://h/0.ts?a=1", file: "0-video/00000.ts", duration: 2.002,
                          estimatedBytes: 50_000, bytes: nil, done: false),
            SegmentRecord(token: "t", track: 1, sequence: 0, url: "http://h/a0.ts", file: "1-audio-en/00000.ts", duration: 1.5,
                          estimatedBytes: 32_000, bytes: 31_337, done: true),
        ]
        try await store.offPool { try $0.insert(record, tracks: [], segments: segments) }
        #expect(try await store.offPool { try $0.segments("t") } == segments)
        #expect(try await store.offPool { try $0.pendingSegments("t", after: nil, limit: 10) } == [segments[0]])
    }

    @Test("a package file cut short, zeroed at its full length or missing is written again from the store before the download runs; a whole one is left alone")
    func restoresDamagedFiles() async throws {
        try await withBackend { server in try await withHarness(server) { h in
            let token = try await h.manager.requestVideoDownload(try await h.service.findVideo(id: Catalog.clearVideo),
                                                                 mediaSelections: nil, parameters: nil)
            #expect(try await h.events.finished(token) == nil)
            let folder = await h.manager.packageFolder(token).path
            let stored = try await h.manager.store.offPool { try $0.playlists(token) }
            let cut = try #require(stored.keys.sorted().first { $0.hasSuffix("/index.m3u8") })
            let whole = PackageLayout.masterPlaylist
            let gone = PackageLayout.mediaOptionsFile
            let zeroed = try #require(stored.keys.sorted().last { $0.hasSuffix("/index.m3u8") })
            try #require(zeroed != cut)
            #expect(stored[gone] != nil)
            // What a power loss can leave of a file written without a sync on some file systems.
            try Data(count: stored[zeroed]!.count).write(to: URL(fileURLWithPath: folder + "/" + zeroed))
            let original = try #require(stored[cut])
            try original.prefix(original.count / 2).write(to: URL(fileURLWithPath: folder + "/" + cut))
            try FileManager.default.removeItem(atPath: folder + "/" + gone)
            let old = Date(timeIntervalSince1970: 1_000_000_000)
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: folder + "/" + whole)

            try await h.manager.downloads.restorePlaylists(token)
            #expect(FileManager.default.contents(atPath: folder + "/" + cut) == original)
            #expect(FileManager.default.contents(atPath: folder + "/" + gone) == stored[gone])
            #expect(FileManager.default.contents(atPath: folder + "/" + zeroed) == stored[zeroed])
            #expect(FileStatus(path: folder + "/" + whole)?.modifiedSeconds == 1_000_000_000, "not written again")
            #expect(FileManager.default.contents(atPath: folder + "/" + whole) == stored[whole])
        } }
    }
}
