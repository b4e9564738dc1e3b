import Foundation

/// Every way an offline video's download state moves, in one place: an event applied to the
/// stored state gives the new state (or the record's deletion), what to record with it, and
/// the actions the manager carries out afterwards. Pure: no I/O, no clock; the manager applies
/// it inside one store transaction (`OfflineStore.transition`), so a state is only ever written
/// from the state it was decided on.
///
/// ```
/// licensePreloaded ─request─► requested ─start─► downloading ─complete─► completed ─filesMissing─► stale
///        (request(suspended) ─► suspended: a task-style download waits for its resume)
///                               ▲  │pause          │fail/pause             │
///                        resume │  ▼               ▼                       │
///                             suspended ◄──── (requested/downloading)      │
///   error ─retry/resume─► requested      cancel: requested/downloading/suspended/error ─► cancelled
///   forceStop: requested/downloading/suspended ─► error      delete, licenseExpired(purge): any ─► gone
///   (cancel, forceStop and delete of a requested, downloading or suspended one announce its end, cancelled)
///   purge (a task's, keeping its key): any ─► licensePreloaded with its license, else gone
/// ```
enum DownloadStateMachine {
    /// What happened to a download.
    enum Event: Sendable, Equatable, CustomStringConvertible {
        /// A download was requested for a video whose license was preloaded; `suspended`: it
        /// waits for a resume (a `DownloadTask` starts suspended) instead of being queued.
        case request(suspended: Bool)
        /// Its task begins fetching.
        case start
        /// A new manager found it interrupted (it was queued or running when the last one stopped).
        case interrupted
        /// The app paused it.
        case pause
        /// The app resumed it (from suspended, or from error).
        case resume
        /// The app retried it (from error only).
        case retry
        /// The app cancelled it.
        case cancel
        /// `forceStopAllDownloadTasks`.
        case forceStop
        /// Every selected file is in place.
        case complete
        /// It failed.
        case fail(OfflineVideoError)
        /// Files of a completed download vanished.
        case filesMissing(String)
        /// The app deleted it.
        case delete
        /// Its license expired and auto-purge is on.
        case purgeExpired
        /// The app purged a download task: its files go; its license (`keepsLicense`: it holds
        /// one) stays, as the record of a preloaded license.
        case purge(keepsLicense: Bool)

        var description: String {
            switch self {
            case .request: "request"
            case .start: "start"
            case .interrupted: "interrupted"
            case .pause: "pause"
            case .resume: "resume"
            case .retry: "retry"
            case .cancel: "cancel"
            case .forceStop: "forceStop"
            case .complete: "complete"
            case .fail: "fail"
            case .filesMissing: "filesMissing"
            case .delete: "delete"
            case .purgeExpired: "purgeExpired"
            case .purge: "purge"
            }
        }
    }

    /// What the manager does after the new state is stored, in this order.
    enum Action: Sendable, Equatable {
        /// Cancel the download's task and take it out of the queue.
        case stopTask
        /// Queue it to run.
        case enqueue
        /// Remove its package folder (once a stopped task has ended).
        case removePackage
        /// Give its license back to the server (now, or queued until online).
        case releaseLicense
        /// Forget cached video objects and open playback state of it.
        case forgetCaches
        /// `didFinishDownloadWithError` and `.downloadFinished`.
        case announceFinished(OfflineVideoError?)
        /// `offlineVideoStorageDidChange` and `.storageChanged`.
        case announceStorageChanged
        /// `.downloadPurged`.
        case announcePurged
    }

    /// The outcome of an event.
    struct Transition: Sendable, Equatable {
        /// The new state; nil when the record is deleted.
        var state: OfflineVideoDownloadState?
        /// How the end time changes.
        var endTime: Change = .keep
        /// How the stored error changes.
        var error: ErrorChange = .keep
        /// Whether its tracks, segments and local playlists are forgotten (the record stays).
        var dropsPlan = false
        var actions: [Action] = []

        enum Change: Sendable, Equatable { case keep, clear, now }
        enum ErrorChange: Sendable, Equatable { case keep, clear, set(OfflineVideoError) }
    }

    /// How a record comes to be.
    enum Birth: Sendable, Equatable {
        /// A download request; `suspended`: a task-style download, waiting for its resume.
        case download(suspended: Bool)
        /// A license preload: the record holds the license and no plan yet.
        case preload
    }

    /// The first state of a new record, and the actions once it is stored.
    static func birth(_ birth: Birth) -> (state: OfflineVideoDownloadState, actions: [Action]) {
        switch birth {
        case .download(suspended: false): (.requested, [.enqueue])
        case .download(suspended: true): (.suspended, [])
        case .preload: (.licensePreloaded, [])
        }
    }

    /// The transition for `event` in `state`, or `invalidState` when the event does not apply there.
    static func transition(from state: OfflineVideoDownloadState, on event: Event,
                           token: OfflineVideoToken) throws(OfflineVideoError) -> Transition {
        func refuse(_ what: String) -> OfflineVideoError {
            OfflineVideoError(.invalidParameter, .invalidState, "Download \(token) is \(state) and cannot be \(what)")
        }
        switch (event, state) {
        case (.request(let suspended), .licensePreloaded):
            return suspended ? Transition(state: .suspended, endTime: .clear, error: .clear, actions: [.forgetCaches])
                : Transition(state: .requested, endTime: .clear, error: .clear, actions: [.forgetCaches, .enqueue])
        case (.start, .requested):
            return Transition(state: .downloading)
        case (.interrupted, .requested), (.interrupted, .downloading):
            return Transition(state: .requested, actions: [.enqueue])
        case (.pause, .requested), (.pause, .downloading):
            return Transition(state: .suspended, actions: [.stopTask])
        case (.resume, .suspended), (.resume, .error), (.retry, .error):
            return Transition(state: .requested, endTime: .clear, error: .clear, actions: [.enqueue])
        case (.cancel, .requested), (.cancel, .downloading), (.cancel, .suspended):
            return Transition(state: .cancelled, endTime: .now, actions: [.stopTask, .removePackage, .forgetCaches,
                                                                          .announceFinished(cancelled("cancelVideoDownload"))])
        case (.cancel, .error):
            // Its failure was announced when it happened.
            return Transition(state: .cancelled, endTime: .now, actions: [.stopTask, .removePackage, .forgetCaches])
        case (.forceStop, .requested), (.forceStop, .downloading), (.forceStop, .suspended):
            let error = cancelled("forceStopAllDownloadTasks")
            return Transition(state: .error, endTime: .now, error: .set(error),
                              actions: [.stopTask, .removePackage, .forgetCaches, .announceFinished(error)])
        case (.complete, .downloading):
            return Transition(state: .completed, endTime: .now, error: .clear, actions: [.forgetCaches, .announceFinished(nil)])
        case (.fail(let error), .requested), (.fail(let error), .downloading):
            return Transition(state: .error, endTime: .now, error: .set(error), actions: [.announceFinished(error)])
        case (.filesMissing(let file), .completed):
            let error = OfflineVideoError(.downloadFailure, .filesMissing, "Files of the download vanished: \(file)")
            return Transition(state: .stale, error: .set(error), actions: [.forgetCaches, .announceStorageChanged])
        case (.delete, .requested), (.delete, .downloading), (.delete, .suspended):
            // Ends like a cancel: the app hears the download end.
            return Transition(state: nil, actions: [.stopTask, .releaseLicense, .removePackage, .forgetCaches,
                                                    .announceFinished(cancelled("deleteOfflineVideo"))])
        case (.delete, _):
            return Transition(state: nil, actions: [.stopTask, .releaseLicense, .removePackage, .forgetCaches])
        case (.purgeExpired, _):
            return Transition(state: nil, actions: [.stopTask, .releaseLicense, .removePackage, .forgetCaches, .announcePurged])
        case (.purge(true), _):
            return Transition(state: .licensePreloaded, endTime: .clear, error: .clear, dropsPlan: true,
                              actions: [.stopTask, .removePackage, .forgetCaches])
        case (.purge(false), _):
            return Transition(state: nil, actions: [.stopTask, .removePackage, .forgetCaches])
        case (.request, _): throw refuse("requested again")
        case (.start, _), (.interrupted, _): throw refuse("started")
        case (.pause, _): throw refuse("paused")
        case (.resume, _): throw refuse("resumed")
        case (.retry, _): throw refuse("retried (only a failed download can be)")
        case (.cancel, _): throw refuse("cancelled")
        case (.forceStop, _): throw refuse("stopped")
        case (.complete, _): throw refuse("completed")
        case (.fail, _): throw refuse("failed")
        case (.filesMissing, _): throw refuse("marked stale")
        }
    }

    /// States in which a video counts as downloaded or being downloaded: a new request for it
    /// is refused while one of its records is in one of these.
    static let holdsVideo: Set<OfflineVideoDownloadState> = [.requested, .downloading, .suspended, .completed]

    /// States in which a video's license counts as held: a new preload is refused.
    static let holdsLicense: Set<OfflineVideoDownloadState> = [.requested, .downloading, .suspended, .completed, .licensePreloaded]

    /// States `forceStopAllDownloadTasks` ends.
    static let stoppable: Set<OfflineVideoDownloadState> = [.requested, .downloading, .suspended]

    static func cancelled(_ by: String) -> OfflineVideoError {
        OfflineVideoError(.downloadFailure, .cancelled, "Stopped by \(by)")
    }
}
