import CurlTransfer
import Foundation

/// How the manager's transfer engine fetches (the role `NSURLSessionConfiguration` plays for
/// Brightcove's download session). Made from `OfflineVideoManagerConfiguration` and handed to
/// the delegate's `didCreateTransferConfiguration(_:)` before the engine uses it. Counts below 1
/// are taken as 1, and durations below 1 ms as 1 ms.
public struct TransferConfiguration: Sendable, Equatable {
    /// Connections open to one host at once.
    public var maxConnectionsPerHost: Int
    /// Connections open at once in all.
    public var maxTotalConnections: Int
    /// File downloads (segments, images, subtitles) running at once over all downloads; more wait in order.
    public var maxConcurrentTransfers: Int
    /// Segments one download fetches at once (`OfflineVideoManagerConfiguration.segmentsInParallel`).
    public var segmentsInParallel: Int
    /// The longest a connection attempt may take.
    public var connectTimeout: Duration
    /// The longest a request to the backend (playlists, keys, licenses) may take.
    public var requestTimeout: Duration
    /// A file download slower than this many bytes a second for `lowSpeedTime` fails as timed
    /// out and is retried (default 1: one that receives nothing).
    public var lowSpeedLimit: Int
    /// How long a file download may stay under `lowSpeedLimit` (`OfflineVideoManagerConfiguration.stallTimeout`).
    public var lowSpeedTime: Duration
    /// The User-Agent header.
    public var userAgent: String
    /// Failures without progress before a download or a request gives up, once `timeWithoutProgress`
    /// has passed too (`OfflineVideoManagerConfiguration.failuresWithoutProgress`, default 10).
    public var failuresWithoutProgress: Int
    /// Time without progress before a download or a request gives up (default 30 s).
    public var timeWithoutProgress: Duration
    /// The wait after a segment's or a request's first failure, doubled per failure with jitter
    /// (default 250 ms); a longer `Retry-After` from the server wins.
    public var retryInitialDelay: Duration
    /// The longest back-off (default 8 s).
    public var retryMaxDelay: Duration

    /// The manager's defaults for `configuration`: as many connections and transfers as its
    /// downloads fetch segments at once, plus 4 for playlists, keys and images.
    init(_ configuration: OfflineVideoManagerConfiguration) {
        let slots = max(1, configuration.maxConcurrentDownloads) * max(1, configuration.segmentsInParallel) + 4
        maxConnectionsPerHost = slots
        maxTotalConnections = slots
        maxConcurrentTransfers = slots
        segmentsInParallel = max(1, configuration.segmentsInParallel)
        connectTimeout = .seconds(10)
        requestTimeout = configuration.requestTimeout
        lowSpeedLimit = 1
        lowSpeedTime = configuration.stallTimeout
        userAgent = "OfflineSDK/1.0"
        failuresWithoutProgress = configuration.failuresWithoutProgress
        timeWithoutProgress = configuration.timeWithoutProgress
        retryInitialDelay = configuration.retryInitialDelay
        retryMaxDelay = configuration.retryMaxDelay
    }

    /// The retry rule every request of the manager follows (`RetryPolicy`).
    var retryPolicy: RetryPolicy {
        RetryPolicy(failuresWithoutProgress: failuresWithoutProgress, timeWithoutProgress: timeWithoutProgress,
                    initialDelay: retryInitialDelay, maxDelay: retryMaxDelay)
    }

    /// The values clamped to what the engine accepts.
    var clamped: TransferConfiguration {
        var copy = self
        let least = Duration.milliseconds(1)
        copy.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
        copy.maxTotalConnections = max(1, maxTotalConnections)
        copy.maxConcurrentTransfers = max(1, maxConcurrentTransfers)
        copy.segmentsInParallel = max(1, segmentsInParallel)
        copy.connectTimeout = max(least, connectTimeout)
        copy.requestTimeout = max(least, requestTimeout)
        copy.lowSpeedLimit = max(1, lowSpeedLimit)
        copy.lowSpeedTime = max(least, lowSpeedTime)
        copy.failuresWithoutProgress = max(1, failuresWithoutProgress)
        copy.timeWithoutProgress = max(.zero, timeWithoutProgress)
        copy.retryInitialDelay = max(least, retryInitialDelay)
        copy.retryMaxDelay = max(copy.retryInitialDelay, retryMaxDelay)
        return copy
    }

    /// The engine's configuration, trusting `trustedCAFile`.
    func engineConfiguration(trustedCAFile: URL?) -> TransferEngine.Configuration {
        var engine = TransferEngine.Configuration()
        engine.maxHostConnections = maxConnectionsPerHost
        engine.maxTotalConnections = maxTotalConnections
        engine.maxConcurrentTransfers = maxConcurrentTransfers
        engine.connectTimeout = connectTimeout
        engine.requestTimeout = requestTimeout
        engine.lowSpeedLimit = lowSpeedLimit
        engine.stallTimeout = lowSpeedTime
        engine.userAgent = userAgent
        engine.trustedCAFile = trustedCAFile?.path
        return engine
    }
}
