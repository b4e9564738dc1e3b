import Foundation
import Locking
import MockBackend
@testable import OfflineSDK
import TestKit
import Testing
import WireModels

/// A delegate written the way an app ports Brightcove's sample: the Swift names of
/// `BCOVOfflineVideoManagerDelegate`'s methods, `(any Error)?` for the error, `TimeInterval`
/// percents, declared in the extension that declares the conformance.
final class PortedDelegate: Sendable {
    let calls = Locked<[String]>([])
    let errors = Locked<[OfflineVideoToken: (any Error)?]>([:])
    let selections = Locked<[OfflineMediaSelection: [TimeInterval]]>([:])
    let finishedSelections = Locked<[OfflineMediaSelection]>([])
    func record(_ name: String) { calls.withLock { $0.append(name) } }
    var called: Set<String> { Set(calls.withLock { $0 }) }
}

extension PortedDelegate: OfflineVideoManagerDelegate {
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didProgressTo progressPercent: TimeInterval,
                           for mediaSelection: OfflineMediaSelection) {
        record("didProgressToForMediaSelection")
        selections.withLock { $0[mediaSelection, default: []].append(progressPercent) }
    }
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishMediaSelectionDownload mediaSelection: OfflineMediaSelection) {
        record("didFinishMediaSelectionDownload")
        finishedSelections.withLock { $0.append(mediaSelection) }
    }
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, willDownloadVariants variants: [OfflineVariant]) {
        record("willDownloadVariants")
    }
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didProgressTo progressPercent: TimeInterval) {
        record("didProgressTo")
    }
    func didCreateTransferConfiguration(_ configuration: inout TransferConfiguration) {
        record("didCreateTransferConfiguration")
    }
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishDownloadWithError error: (any Error)?) {
        record("didFinishDownloadWithError")
        errors.withLock { $0[offlineVideoToken] = error }
    }
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didChangeStateTo state: OfflineVideoDownloadState?) {
        record("didChangeStateTo")
    }
    func didDownloadStaticImages(withOfflineVideoToken offlineVideoToken: OfflineVideoToken) {
        record("didDownloadStaticImages")
    }
    func shouldDeleteVideoPackage(_ videoPackagePath: String) -> Bool {
        record("shouldDeleteVideoPackage")
        return true
    }
    func offlineVideoStorageDidChange() {
        record("offlineVideoStorageDidChange")
    }
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didChangeLicenseExpirationTo expiration: Date?) {
        record("didChangeLicenseExpirationTo")
    }
    func offlineVideoTokenWasPurged(_ offlineVideoToken: OfflineVideoToken) {
        record("offlineVideoTokenWasPurged")
    }
    func offlineVideoAnalyticsEventsDropped(_ count: Int) {
        record("offlineVideoAnalyticsEventsDropped")
    }
    func playbackServiceForManifestURLTTLUpdate(for video: PlaybackVideo) -> PlaybackService? {
        record("playbackServiceForManifestURLTTLUpdate")
        return nil
    }
}

@Suite("Delegate methods as a ported app declares them")
struct PortedDelegateTests {
    /// One event of every kind: a case added to `OfflineVideoEvent` without a line here fails to compile.
    static func everyEvent(_ token: OfflineVideoToken) -> [OfflineVideoEvent] {
        let selection = OfflineMediaSelection(kind: .audio, language: "en", name: "English")
        let events: [OfflineVideoEvent] = [
            .progress(token, percent: 50, mediaSelection: selection), .mediaSelectionFinished(token, selection),
            .willDownloadVariants(token, variants: []), .downloadProgress(token, percent: 50), .staticImagesDownloaded(token),
            .downloadFinished(token, error: nil), .downloadStateChanged(token, state: .requested), .storageChanged,
            .licenseExpirationChanged(token, expiration: nil), .downloadPurged(token), .analyticsEventsDropped(count: 1),
        ]
        for event in events {
            switch event {  // exhaustive on purpose
            case .progress, .mediaSelectionFinished, .willDownloadVariants, .downloadProgress, .staticImagesDownloaded,
                 .downloadFinished, .downloadStateChanged, .storageChanged, .licenseExpirationChanged, .downloadPurged,
                 .analyticsEventsDropped: break
            }
        }
        return events
    }

    @Test("every requirement reaches the ported declaration: each event as the manager delivers it, the rest through the protocol")
    func everyMethodIsTheWitness() throws {
        let ported = PortedDelegate()
        let delegate: any OfflineVideoManagerDelegate = ported
        for event in Self.everyEvent("t") { event.deliver(to: delegate) }
        var configuration = TransferConfiguration(OfflineVideoManagerConfiguration())
        delegate.didCreateTransferConfiguration(&configuration)
        #expect(delegate.shouldDeleteVideoPackage("/tmp/x"))
        let video = try DownloadRequest(contentId: "c", contentUrl: URL(string: "http://127.0.0.1/master.m3u8")!, title: "t").video(now: Date())
        #expect(delegate.playbackServiceForManifestURLTTLUpdate(for: video) == nil)
        #expect(ported.called == [
            "didProgressToForMediaSelection", "didFinishMediaSelectionDownload", "willDownloadVariants", "didProgressTo",
            "didCreateTransferConfiguration", "didFinishDownloadWithError", "didChangeStateTo", "didDownloadStaticImages",
            "shouldDeleteVideoPackage", "offlineVideoStorageDidChange", "didChangeLicenseExpirationTo", "offlineVideoTokenWasPurged",
            "offlineVideoAnalyticsEventsDropped", "playbackServiceForManifestURLTTLUpdate",
        ])
    }

    @Test("live: per-selection progress and finish for every track, sideband subtitles included; static images; the end with a nil error")
    func liveDownload() async throws {
        try await withBackend { server in
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let ported = PortedDelegate()
            let manager = try await OfflineVideoManager(configuration: testConfiguration(storage), delegate: ported)
            let events = EventRecorder(manager)
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            let video = try await service.findVideo(id: Catalog.clearVideo)
            let token = try await manager.requestVideoDownload(video, mediaSelections: MediaSelections(audioLanguages: ["en"], subtitleLanguages: ["de"]),
                                                               parameters: nil)
            #expect(try await events.finished(token) == nil)
            await manager.close()
            #expect(ported.called.isSuperset(of: ["didCreateTransferConfiguration", "didProgressToForMediaSelection",
                                                   "didFinishMediaSelectionDownload", "didDownloadStaticImages", "didFinishDownloadWithError",
                                                   "didChangeStateTo"]))
            #expect(ported.errors.withLock { $0[token] }.map { $0 == nil } == true, "completed: called with nil")
            let finished = ported.finishedSelections.withLock { $0 }
            #expect(finished.map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.audio, .subtitles, .video])
            let sideband = try #require(finished.first { $0.kind == .subtitles })
            #expect(sideband.language == "de", "the sideband track is a media selection of its own")
            #expect(ported.selections.withLock { $0[sideband] } == [0, 100])
            for (selection, percents) in ported.selections.withLock({ $0 }) {
                #expect(percents.last == 100, "\(selection) reached 100")
                #expect(percents == percents.sorted(), "\(selection) never went back")
            }
        }
    }

    @Test("live: cancel and delete of a running download end it with didFinishDownloadWithError (cancelled, 69302); its percent is 0 once cancelled")
    func cancelAndDelete() async throws {
        let network = ManualNetworkMonitor(path: .wifi)
        try await withBackend { server in
            // Slow segments (both videos): neither can finish between its first percent and the stop,
            // however long a loaded machine keeps this test from running.
            try server.app.faults.add(FaultRule(id: "slow", route: .segment, latencyMs: 100))
            let storage = try TemporaryDirectory()
            defer { storage.remove() }
            let ported = PortedDelegate()
            var configuration = testConfiguration(storage)
            configuration.network = network
            let manager = try await OfflineVideoManager(configuration: configuration, delegate: ported)
            let events = EventRecorder(manager)
            let service = PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
            let cancelled = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.marathonVideo), mediaSelections: nil, parameters: nil)
            let deleted = try await manager.requestVideoDownload(try await service.findVideo(id: Catalog.tenMinuteVideo), mediaSelections: nil, parameters: nil)
            #expect(try await eventually { try await manager.status(cancelled).downloadPercent > 1 })
            #expect(try await eventually { try await manager.status(deleted).downloadPercent > 1 })
            network.currentPath = .none  // nothing new starts: neither can complete first
            try await manager.cancelVideoDownload(cancelled)
            try await manager.deleteOfflineVideo(deleted)
            #expect(try await events.finished(cancelled)?.reason == .cancelled)
            #expect(try await events.finished(deleted)?.reason == .cancelled)
            for token in [cancelled, deleted] {
                let error = try #require(ported.errors.withLock { $0[token] } ?? nil)
                #expect((error as NSError).code == 69302 && (error as NSError).domain == OfflineVideoError.errorDomain)
                #expect((error as? OfflineVideoError)?.reason == .cancelled)
            }
            let status = try await manager.status(cancelled)
            #expect(status.downloadState == .cancelled && status.downloadPercent == 0, "a cancelled download reports no old percent")
            #expect(try await manager.offlineVideoStatus(forToken: deleted) == nil)
            await manager.close()
        }
    }
}
