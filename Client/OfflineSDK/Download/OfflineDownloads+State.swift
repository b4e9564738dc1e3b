import Foundation

/// Every change of a download's state goes through `apply`: the state machine decides from
/// the stored state, the store records the decision in the same transaction, then the
/// decision's actions run here.
extension OfflineDownloads {
    /// Applies `event` to the download `token` and carries out its actions. Throws
    /// `unknownToken`, `invalidState` when the event does not apply to the stored state, and
    /// `readOnly` on a reader.
    @discardableResult
    func apply(_ event: DownloadStateMachine.Event, to token: OfflineVideoToken,
               announcesStorageChange: Bool = true) async throws(OfflineVideoError) -> DownloadStateMachine.Transition {
        try seams.requireOwner()
        try recordUnrecordedFailure(token)
        let (transition, before) = try record(event, token)
        if transition.state != before.downloadState { hub.emit(.downloadStateChanged(token, state: transition.state)) }
        await carryOut(transition.actions, for: before, announcesStorageChange: announcesStorageChange)
        return transition
    }

    /// Decides `event` from the stored state and records the decision, in one store transaction;
    /// `at`: when it happened (default: now).
    private func record(_ event: DownloadStateMachine.Event, _ token: OfflineVideoToken, at: TimeInterval? = nil)
        throws(OfflineVideoError) -> (DownloadStateMachine.Transition, DownloadRecord) {
        let now = at ?? configuration.clock().timeIntervalSince1970
        let decided = try storeCall(.download) {
            try store.transition(token, at: now) { state throws(OfflineVideoError) in
                try DownloadStateMachine.transition(from: state, on: event, token: token)
            }
        }
        guard let decided else {
            throw OfflineVideoError(.invalidParameter, .unknownToken, "No offline video has the token \(token)")
        }
        return decided
    }

    /// Records the failure `finish` announced but could not record (`unrecordedFailures`),
    /// before any other event of its download: that event then applies to `error`, the state
    /// the app was told of, at the time it happened. Its actions ran when it was announced.
    /// Throws the store's error while the store still cannot write it (its disk is still full).
    private func recordUnrecordedFailure(_ token: OfflineVideoToken) throws(OfflineVideoError) {
        guard let failure = unrecordedFailures[token] else { return }
        do {
            _ = try record(.fail(failure.error), token, at: failure.at)
        } catch where error.reason == .invalidState || error.reason == .unknownToken {
            // Not `requested` or `downloading` any more, or gone: nothing left to record.
        }
        unrecordedFailures[token] = nil
    }

    /// A download's state as the app was told it: `error` for a failure announced but not
    /// yet recorded, else the stored state.
    func announcedState(of record: DownloadRecord) -> OfflineVideoDownloadState {
        unrecordedFailures[record.token] == nil ? record.downloadState : .error
    }

    /// `apply`, for events that race with the app's own calls (a task starting or ending while
    /// the app pauses or cancels): false, and nothing done, when the download has moved to a
    /// state the event does not apply to, or is gone.
    func applyUnlessMoved(_ event: DownloadStateMachine.Event, to token: OfflineVideoToken,
                          announcesStorageChange: Bool = true) async throws(OfflineVideoError) -> Bool {
        do {
            try await apply(event, to: token, announcesStorageChange: announcesStorageChange)
            return true
        } catch {
            if error.reason == .invalidState || error.reason == .unknownToken { return false }
            throw error
        }
    }

    /// Announces a record just stored as `born` made it, and carries out its actions.
    func announceBirth(_ record: DownloadRecord, _ born: (state: OfflineVideoDownloadState, actions: [DownloadStateMachine.Action])) async {
        hub.emit(.downloadStateChanged(record.token, state: record.downloadState))
        await carryOut(born.actions, for: record, announcesStorageChange: true)
    }

    /// Runs a transition's actions for the download whose record was `before` the transition.
    private func carryOut(_ actions: [DownloadStateMachine.Action], for before: DownloadRecord, announcesStorageChange: Bool) async {
        let token = before.token
        for action in actions {
            switch action {
            case .stopTask:
                stopRunning(token)
            case .enqueue:
                run(scheduler.enqueue(token))
            case .removePackage:
                await removePackage(token)
            case .releaseLicense:
                licenses.onSharedQueue { $0.queueRelease(before) }
            case .forgetCaches:
                seams.forgetVideoObject(token)
            case .announceFinished(let error):
                // Recorded first: whoever hears the announcement finds the event recorded.
                seams.recordAnalytics(before, .finished(error))
                hub.emit(.downloadFinished(token, error: error))
            case .announceStorageChanged:
                if announcesStorageChange { hub.emit(.storageChanged) }
            case .announcePurged:
                hub.emit(.downloadPurged(token))
            }
        }
    }
}
