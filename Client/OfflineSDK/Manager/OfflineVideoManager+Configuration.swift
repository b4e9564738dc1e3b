import Foundation
import Locking

/// What may change on a manager that exists: the key-exchange hook (Brightcove's `authProxy`, set
/// after initializing), the delegate and the options; everything else of the configuration is
/// fixed for the manager's life, and a later `initializeOfflineVideoManager` asking for another
/// value is refused rather than silently ignored.
extension OfflineVideoManager {
    /// The app's hook on the FairPlay key exchange (Brightcove's `authProxy`): settable at any
    /// time, in effect from the next certificate or license request (a request under way keeps
    /// the hook it started with). Starts as `configuration.keyExchange`; nil sends the requests
    /// straight to the video's URLs.
    ///
    /// ```swift
    /// OfflineVideoManager.shared?.authProxy = SigningProxy()
    /// ```
    public nonisolated var authProxy: (any FairPlayKeyExchange)? {
        get { licenses.client.keyExchange.withLock { $0 } }
        set { licenses.client.keyExchange.withLock { $0 = newValue } }
    }

    /// The settings of `requested` that differ from `running`'s and cannot take effect on a manager
    /// that exists, by name. Not compared: `options` (given on their own), `keyExchange` (set as
    /// `authProxy`), `autoPurgesExpiredDownloads` (applied), and `clock` (a closure cannot be compared).
    static func fixedSettingsDiffering(_ requested: OfflineVideoManagerConfiguration,
                                       from running: OfflineVideoManagerConfiguration) -> [String] {
        var names: [String] = []
        func check(_ name: String, _ same: Bool) { if !same { names.append(name) } }
        check("storageDirectory", requested.storageDirectory.standardizedFileURL == running.storageDirectory.standardizedFileURL)
        check("maxConcurrentDownloads", requested.maxConcurrentDownloads == running.maxConcurrentDownloads)
        check("segmentsInParallel", requested.segmentsInParallel == running.segmentsInParallel)
        check("minimumFreeSpace", requested.minimumFreeSpace == running.minimumFreeSpace)
        check("preferredAudioLanguages", requested.preferredAudioLanguages == running.preferredAudioLanguages)
        check("preferredSubtitleLanguages", requested.preferredSubtitleLanguages == running.preferredSubtitleLanguages)
        check("failuresWithoutProgress", requested.failuresWithoutProgress == running.failuresWithoutProgress)
        check("timeWithoutProgress", requested.timeWithoutProgress == running.timeWithoutProgress)
        check("requestTimeout", requested.requestTimeout == running.requestTimeout)
        check("stallTimeout", requested.stallTimeout == running.stallTimeout)
        check("trustedCAFile", requested.trustedCAFile?.standardizedFileURL == running.trustedCAFile?.standardizedFileURL)
        check("retryInitialDelay", requested.retryInitialDelay == running.retryInitialDelay)
        check("retryMaxDelay", requested.retryMaxDelay == running.retryMaxDelay)
        check("progressInterval", requested.progressInterval == running.progressInterval)
        check("role", requested.role == running.role)
        check("clockTolerance", requested.clockTolerance == running.clockTolerance)
        check("deviceSecretFile", requested.deviceSecretFile.standardizedFileURL == running.deviceSecretFile.standardizedFileURL)
        check("network", sameMonitor(requested.network, running.network))
        return names
    }

    /// The same monitor: the same object for a class, else the same type.
    private static func sameMonitor(_ a: any NetworkMonitor, _ b: any NetworkMonitor) -> Bool {
        let typeA: Any.Type = type(of: a), typeB: Any.Type = type(of: b)
        guard typeA == typeB else { return false }
        return typeA is AnyClass ? (a as AnyObject) === (b as AnyObject) : true
    }
}
