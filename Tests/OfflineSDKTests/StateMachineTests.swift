import Foundation
@testable import OfflineSDK
import Testing

@Suite("The download state machine, without I/O")
struct StateMachineTests {
    typealias Machine = DownloadStateMachine
    let all = OfflineVideoDownloadState.allCases
    let failure = OfflineVideoError(.downloadFailure, .network, "gone")

    func next(_ state: OfflineVideoDownloadState, _ event: Machine.Event) -> Machine.Transition? {
        try? Machine.transition(from: state, on: event, token: "t")
    }

    /// The states an event applies to.
    func sources(_ event: Machine.Event) -> Set<OfflineVideoDownloadState> {
        Set(all.filter { next($0, event) != nil })
    }

    @Test("each event applies to exactly the states it should; everywhere else it is invalidState")
    func applicability() throws {
        #expect(sources(.request(suspended: false)) == [.licensePreloaded])
        #expect(sources(.request(suspended: true)) == [.licensePreloaded])
        #expect(sources(.purge(keepsLicense: true)) == Set(all))
        #expect(sources(.purge(keepsLicense: false)) == Set(all))
        #expect(sources(.start) == [.requested])
        #expect(sources(.interrupted) == [.requested, .downloading])
        #expect(sources(.pause) == [.requested, .downloading])
        #expect(sources(.resume) == [.suspended, .error])
        #expect(sources(.retry) == [.error])
        #expect(sources(.cancel) == [.requested, .downloading, .suspended, .error])
        #expect(sources(.forceStop) == [.requested, .downloading, .suspended])
        #expect(sources(.complete) == [.downloading])
        #expect(sources(.fail(failure)) == [.requested, .downloading])
        #expect(sources(.filesMissing("x")) == [.completed])
        #expect(sources(.delete) == Set(all))
        #expect(sources(.purgeExpired) == Set(all))
        let refusal = #expect(throws: OfflineVideoError.self) { try Machine.transition(from: .completed, on: .pause, token: "abc") }
        #expect(refusal?.code == .invalidParameter && refusal?.reason == .invalidState)
        #expect(refusal?.message == "Download abc is completed and cannot be paused")
    }

    @Test("a completion after a pause, a cancel or a force-stop is refused: a stopped download is never marked completed")
    func lateCompletion() throws {
        for event in [Machine.Event.pause, .cancel, .forceStop] {
            let stopped = try #require(next(.downloading, event)?.state)
            #expect(next(stopped, .complete) == nil, "\(event) then complete")
            #expect(next(stopped, .fail(failure)) == nil, "\(event) then fail")
        }
    }

    @Test("new states, recorded times and errors, and actions in order")
    func outcomes() throws {
        #expect(next(.licensePreloaded, .request(suspended: false)) == .init(state: .requested, endTime: .clear, error: .clear,
                                                                             actions: [.forgetCaches, .enqueue]))
        #expect(next(.licensePreloaded, .request(suspended: true)) == .init(state: .suspended, endTime: .clear, error: .clear,
                                                                            actions: [.forgetCaches]), "a task waits for its resume")
        #expect(next(.downloading, .purge(keepsLicense: true)) == .init(state: .licensePreloaded, endTime: .clear, error: .clear, dropsPlan: true,
                                                                        actions: [.stopTask, .removePackage, .forgetCaches]),
                "a purged task keeps its key: its record becomes a preloaded license")
        #expect(next(.completed, .purge(keepsLicense: false)) == .init(state: nil, actions: [.stopTask, .removePackage, .forgetCaches]),
                "nothing to give back: a purge without a key releases nothing")
        #expect(next(.requested, .start) == .init(state: .downloading))
        #expect(next(.downloading, .interrupted) == .init(state: .requested, actions: [.enqueue]))
        #expect(next(.downloading, .pause) == .init(state: .suspended, actions: [.stopTask]))
        #expect(next(.error, .retry) == .init(state: .requested, endTime: .clear, error: .clear, actions: [.enqueue]))
        let cancelled = Machine.cancelled("cancelVideoDownload")
        #expect(next(.suspended, .cancel) == .init(state: .cancelled, endTime: .now,
                                                   actions: [.stopTask, .removePackage, .forgetCaches, .announceFinished(cancelled)]))
        #expect(next(.error, .cancel)?.actions.contains { if case .announceFinished = $0 { true } else { false } } == false,
                "a failed download's end was announced when it failed")
        let stopped = Machine.cancelled("forceStopAllDownloadTasks")
        #expect(next(.requested, .forceStop) == .init(state: .error, endTime: .now, error: .set(stopped),
                                                      actions: [.stopTask, .removePackage, .forgetCaches, .announceFinished(stopped)]))
        #expect(next(.downloading, .complete) == .init(state: .completed, endTime: .now, error: .clear,
                                                       actions: [.forgetCaches, .announceFinished(nil)]))
        #expect(next(.downloading, .fail(failure)) == .init(state: .error, endTime: .now, error: .set(failure),
                                                            actions: [.announceFinished(failure)]))
        let stale = try #require(next(.completed, .filesMissing("0-video/00001.ts")))
        #expect(stale.state == .stale && stale.actions == [.forgetCaches, .announceStorageChanged])
        if case .set(let error) = stale.error { #expect(error.reason == .filesMissing && error.message.contains("0-video/00001.ts")) } else {
            Issue.record("stale without its error")
        }
        #expect(next(.completed, .delete) == .init(state: nil, actions: [.stopTask, .releaseLicense, .removePackage, .forgetCaches]))
        #expect(next(.completed, .purgeExpired)?.actions.last == .announcePurged)
    }

    @Test("the states a new request or preload is refused in")
    func holding() {
        #expect(Machine.holdsVideo == [.requested, .downloading, .suspended, .completed])
        #expect(Machine.holdsLicense == Machine.holdsVideo.union([.licensePreloaded]))
        #expect(Machine.stoppable == [.requested, .downloading, .suspended])
    }

    @Test("records are born through the machine: a download queued, a task's suspended, a preload holding its license")
    func births() {
        #expect(Machine.birth(.download(suspended: false)) == (.requested, [.enqueue]))
        #expect(Machine.birth(.download(suspended: true)) == (.suspended, []))
        #expect(Machine.birth(.preload) == (.licensePreloaded, []))
        // Each first state is one the machine moves on from (a preload by `request`, a task by `resume`).
        #expect(next(.requested, .start) != nil && next(.suspended, .resume) != nil && next(.licensePreloaded, .request(suspended: false)) != nil)
    }
}
