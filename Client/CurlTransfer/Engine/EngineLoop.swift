internal import CCurl
import Synchronization

/// The engine thread's body: drives every transfer through one multi handle with
/// `curl_multi_perform` and sleeps in `curl_multi_poll`, which `EngineCore` interrupts
/// with `curl_multi_wakeup` when work is added or cancelled.
///
/// Everything here (the multi handle, easy handles, transfers) is touched by this thread only.
final class EngineLoop {
    private let core: EngineCore
    private let multi: MultiHandle
    /// Running transfers by their easy handle's pointer.
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Reset easy handles kept for the next jobs.
    private var idleHandles: [EasyHandle] = []
    private var runningDownloads = 0
    /// Transfers whose outcome is settled and recorded, their callers not yet resumed: resumed
    /// after the next `perform` has sent the requests of the work that took their slots, so
    /// waking the callers' threads never holds up a freed connection's next request.
    private var settled: [Transfer] = []

    private init(core: EngineCore, multi: MultiHandle) {
        self.core = core
        self.multi = multi
    }

    /// The thread's entry point; returns when the engine shuts down.
    static func run(core: EngineCore) {
        let configuration = core.configuration
        guard let multi = MultiHandle(maxTotalConnections: configuration.maxTotalConnections,
                                      maxHostConnections: configuration.maxHostConnections) else {
            let error = TransferError(.other(Int(CURLE_FAILED_INIT.rawValue)), "libcurl could not create a multi handle")
            for job in core.detach(reason: error) { job.fail(error) }
            return
        }
        let loop = EngineLoop(core: core, multi: multi)
        if core.attach(multi.waker) { loop.drive() }
        loop.tearDown()
    }

    private func drive() {
        let cap = max(1, core.configuration.maxConcurrentTransfers)
        while let jobs = core.takeWork(freeDownloadSlots: cap - runningDownloads) {
            for job in jobs { start(job) }
            for transfer in transfers.values.filter({ $0.ticket.isCancelled }) {
                multi.remove(transfer.easy)
                transfer.abandon(.cancelled())
                retire(transfer)
            }
            _ = multi.perform()
            deliverSettled()
            var anyFinished = false
            for (easy, result) in multi.finishedTransfers() {
                guard let transfer = transfers[easy] else { continue }
                anyFinished = true
                multi.remove(transfer.easy)
                switch transfer.complete(result) {
                case .answered:
                    retire(transfer)
                case .restart:
                    core.connectionsOpened.add(transfer.easy.info(CURLINFO_NUM_CONNECTS), ordering: .relaxed)
                    let code = multi.add(transfer.easy)
                    if code != CURLM_OK {
                        transfer.abandon(TransferError(.other(Int(code.rawValue)), "curl_multi_add_handle failed"))
                        retire(transfer)
                    }
                }
            }
            // A finished transfer frees a slot: take queued work (and send its requests) before
            // telling the callers and sleeping.
            if !anyFinished {
                deliverSettled()
                multi.poll(timeoutMilliseconds: 1000)
            }
        }
    }

    private func deliverSettled() {
        guard !settled.isEmpty else { return }
        let transfers = settled
        settled = []
        for transfer in transfers { transfer.deliver() }
    }

    private func start(_ job: Job) {
        guard let easy = idleHandles.popLast() ?? EasyHandle() else {
            core.finished(job.ticket, newConnections: 0)
            job.fail(TransferError(.other(Int(CURLE_OUT_OF_MEMORY.rawValue)), "libcurl could not create an easy handle"))
            return
        }
        let transfer: Transfer
        do {
            transfer = try Transfer.make(job: job, easy: easy, configuration: core.configuration)
        } catch {
            recycle(easy)
            core.finished(job.ticket, newConnections: 0)
            job.fail(error)
            return
        }
        transfers[easy.pointer] = transfer
        if job.isDownload { runningDownloads += 1 }
        let code = multi.add(easy)
        if code != CURLM_OK {
            transfer.abandon(TransferError(.other(Int(code.rawValue)), "curl_multi_add_handle failed"))
            retire(transfer)
        }
    }

    /// Drops a transfer whose outcome is settled and whose handle is out of the multi; its
    /// caller is told by `deliverSettled`, soon after. Bookkeeping comes first, so the caller
    /// sees it done.
    private func retire(_ transfer: Transfer) {
        transfers[transfer.easy.pointer] = nil
        if case .download = transfer.kind { runningDownloads -= 1 }
        core.finished(transfer.ticket, newConnections: transfer.easy.info(CURLINFO_NUM_CONNECTS))
        recycle(transfer.easy)
        settled.append(transfer)
    }

    private func recycle(_ easy: EasyHandle) {
        easy.reset()
        if idleHandles.count < core.configuration.maxConcurrentTransfers + 4 { idleHandles.append(easy) }
    }

    /// Cancels what still runs, withdraws the waker, then lets the handles go: easy handles
    /// leave the multi handle before it is cleaned up (when this object is released).
    private func tearDown() {
        let reason = TransferError.cancelled("the transfer engine has shut down")
        for transfer in Array(transfers.values) {
            multi.remove(transfer.easy)
            transfer.abandon(reason)
            retire(transfer)
        }
        deliverSettled()
        idleHandles = []
        for job in core.detach(reason: reason) { job.fail(reason) }
    }
}
