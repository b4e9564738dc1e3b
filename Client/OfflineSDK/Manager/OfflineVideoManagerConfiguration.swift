public import Foundation

/// The reference's initialisation options.
public struct OfflineVideoManagerOptions: Sendable, Equatable {
    /// Whether downloads may use cellular data (default off). A download keeps the policy it started with.
    public var allowsCellularDownload = false
    /// Whether offline playback may fetch over cellular (licenses, first-play reports).
    public var allowsCellularPlayback = false
    /// Whether analytics events may be uploaded over cellular (default on); otherwise they wait for another network.
    public var allowsCellularAnalytics = true
    /// The most bytes of unsent analytics events kept, counted as their JSON (default 500 MiB, at
    /// least 1 MiB); beyond it the oldest are dropped, with `.analyticsEventsDropped(count:)`.
    public var analyticsStorageLimit: Int = 500 * 1024 * 1024 {
        didSet { analyticsStorageLimit = max(analyticsStorageLimit, 1024 * 1024) }
    }

    /// The defaults above.
    ///
    /// - Parameters:
    ///   - allowsCellularDownload: Whether downloads may use cellular data; false by default.
    ///   - allowsCellularPlayback: Whether offline playback may fetch over cellular; false by default.
    ///   - allowsCellularAnalytics: Whether analytics events may be uploaded over cellular; true by default.
    ///   - analyticsStorageLimit: The most bytes of unsent analytics events kept; 500 MiB by default, at least
    ///     1 MiB.
    public init(allowsCellularDownload: Bool = false, allowsCellularPlayback: Bool = false,
                allowsCellularAnalytics: Bool = true, analyticsStorageLimit: Int = 500 * 1024 * 1024) {
        self.allowsCellularDownload = allowsCellularDownload
        self.allowsCellularPlayback = allowsCellularPlayback
        self.allowsCellularAnalytics = allowsCellularAnalytics
        self.analyticsStorageLimit = max(analyticsStorageLimit, 1024 * 1024)
    }
}

/// What a manager may do with its storage folder.
public enum StorageRole: Sendable, Equatable {
    /// Runs downloads and changes what is stored. Holds the folder's `owner.lock` while open:
    /// a second owner, in this process or another, is refused with `storageInUse`.
    case owner
    /// Reads what is stored beside an owner, and plays (a video the owner is still downloading
    /// too: segments on disk at once, the others as the owner writes them); every change is
    /// refused with `readOnly`.
    case reader
}

/// Everything an `OfflineVideoManager` is made with.
public struct OfflineVideoManagerConfiguration: Sendable {
    /// Where the database and the package folders live.
    public var storageDirectory: URL
    /// The reference's options.
    public var options = OfflineVideoManagerOptions()
    /// Downloads running at once (default 2); more wait in the order requested.
    public var maxConcurrentDownloads = 2
    /// Segments fetched in parallel per download (default 6).
    public var segmentsInParallel = 6
    /// A download is refused when it would leave less free space than this, in bytes (default 0:
    /// as the reference, the SDK enforces no reserve; the guide suggests leaving about 1 GB free,
    /// and the `offline` command keeps 1 GiB unless `--reserve-mb` says otherwise).
    public var minimumFreeSpace: Int64 = 0
    /// Audio languages taken when a request gives no media selections (empty: the default audio).
    public var preferredAudioLanguages: [String] = []
    /// Subtitle languages taken when a request gives no media selections.
    public var preferredSubtitleLanguages: [String] = []
    /// Which HLS format a download takes when a video offers both MPEG-TS and CMAF (fragmented
    /// MP4) HLS: by default the first one the Playback API lists, after the FairPlay and HTTPS
    /// preferences, as Brightcove's iOS SDK chooses (Dynamic Delivery lists MPEG-TS first);
    /// `.prefer(.cmaf)` takes CMAF where the video has it (HEVC renditions come only in CMAF).
    public var sourcePreference: HLSSourcePreference = .firstListed
    /// Codecs this device cannot play: a source or variant using one is never downloaded (an
    /// HEVC-less device sets `[.hevc]`: the H.264 variants of a mixed CMAF source are then the
    /// ones chosen). Empty by default.
    public var unplayableCodecs: Set<MediaCodec> = []
    /// Failures without progress (no byte received and kept, across all of a download's or a
    /// request's tries) before it fails, once `timeWithoutProgress` has passed too (default 10).
    public var failuresWithoutProgress = 10
    /// Time without progress before a download or a request fails, once it has also had
    /// `failuresWithoutProgress` failures (default 30 s).
    public var timeWithoutProgress: Duration = .seconds(30)
    /// The longest a request to the backend (playlists, keys, licenses) may take (default 30 s).
    public var requestTimeout: Duration = .seconds(30)
    /// A segment download that receives nothing for this long fails as timed out and is
    /// retried (default 30 s).
    public var stallTimeout: Duration = .seconds(30)
    /// A PEM file of CA certificates that every HTTPS connection (playlists, segments, keys,
    /// licenses, reports) trusts instead of the system's: the mock backend's local CA. An
    /// HTTPS server it did not sign is refused (`TransferError.Code.untrustedCertificate`).
    public var trustedCAFile: URL?
    /// The wait after a segment's or a request's first failure; doubled after each further one,
    /// with jitter, up to `retryMaxDelay` (default 250 ms). A server's `Retry-After` wins when longer.
    public var retryInitialDelay: Duration = .milliseconds(250)
    /// The longest back-off between two tries of one segment or request (default 8 s).
    public var retryMaxDelay: Duration = .seconds(8)
    /// The least time between two progress reports of a download (default 100 ms: 10 a second).
    public var progressInterval: Duration = .milliseconds(100)
    /// Whether this manager runs the storage folder's downloads (`owner`, the default: one per
    /// folder across every process; it continues what the last one left unfinished) or only
    /// reads it beside the owner (`reader`: status, lists, video objects and playback).
    public var role: StorageRole = .owner
    /// Whether downloads whose license expired are deleted: at start, and as they expire while
    /// the manager runs (not while a playback session of them is open), with `.downloadPurged`
    /// (default off, as Quickplay's `downloadAutoPurgeOnExpiry`).
    public var autoPurgesExpiredDownloads = false
    /// How far the wall clock may stand behind the latest trusted time (server dates, license
    /// issue and first-play times, earlier opens) before licensed playback is refused as a
    /// clock set back (default 10 minutes).
    public var clockTolerance: TimeInterval = 600
    /// The device secret that binds stored licenses to this user on this machine: 32 random
    /// bytes, made on first use, mode 0600 (refused when others may read it). It must live
    /// outside `storageDirectory`, so a copied storage folder carries no key (default
    /// `$XDG_CONFIG_HOME/OfflineSDK/device-secret`, else `~/.config/OfflineSDK/device-secret`).
    /// Every manager of one device should use the same file; a new file is a new device (its
    /// licenses must be renewed).
    public var deviceSecretFile: URL = OfflineVideoManagerConfiguration.defaultDeviceSecretFile
    /// Where the machine id mixed into the device's keys is read (tests stand in another machine).
    var machineIDFiles = DeviceIdentity.Source.standardMachineIDFiles
    /// The device identity's source: the secret file and the machine id files.
    var deviceSource: DeviceIdentity.Source { DeviceIdentity.Source(secretFile: deviceSecretFile, machineIDFiles: machineIDFiles) }
    /// Notes store statements that run on Swift's cooperative pool (tests; `BlockingWork`).
    var poolCheck: PoolCheck?
    /// How the store is opened (tests that hold its lock give a longer busy timeout).
    var storeSetup = OfflineStore.setup
    /// Runs before each segment's commit (sync and rename): tests stand in for a slow disk with it.
    var beforeCommit: (@Sendable () async -> Void)?
    /// The app's hook on the FairPlay key exchange (certificate and license requests), in the
    /// role of Brightcove's `authProxy`; nil sends them straight to the video's URLs.
    public var keyExchange: (any FairPlayKeyExchange)?
    /// Which network the device is on (default: the kernel's, `SystemNetworkMonitor.shared`).
    public var network: any NetworkMonitor = SystemNetworkMonitor.shared
    /// The clock license and URL expiry decisions read.
    public var clock: @Sendable () -> Date = { Date() }

    /// A configuration storing under `storageDirectory`, defaults elsewhere.
    ///
    /// - Parameter storageDirectory: Where the database and the package folders live;
    ///   ``defaultStorageDirectory`` by default.
    public init(storageDirectory: URL = OfflineVideoManagerConfiguration.defaultStorageDirectory) {
        self.storageDirectory = storageDirectory
    }

    /// `$XDG_CONFIG_HOME/OfflineSDK/device-secret`, else `~/.config/OfflineSDK/device-secret`.
    public static var defaultDeviceSecretFile: URL {
        if let xdg = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("OfflineSDK/device-secret")
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config/OfflineSDK/device-secret")
    }

    /// `$XDG_DATA_HOME/OfflineSDK`, else `~/.local/share/OfflineSDK`.
    public static var defaultStorageDirectory: URL {
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("OfflineSDK")
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share/OfflineSDK")
    }
}
