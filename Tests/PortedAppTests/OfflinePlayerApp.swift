import Foundation
import Locking
import OfflineSDK

// A small app written the way Brightcove's offline guide and its OfflinePlayer sample write it
// (a download manager object that is the manager's delegate, one parameter set for preload and
// download, alerts that show `error.localizedDescription`, an expired-license branch on the
// error's code), ported with renames, `await`, and parameter structs only. `ConfigConstants`,
// `UIAlertController.show` and `NotificationCenter` become the small stand-ins at the bottom.

/// The sample's settings tab: purchase or rental, durations, bitrate.
struct Settings: Sendable {
    var isPurchaseLicenseType = false
    var rentalDuration: TimeInterval = 30 * 24 * 60 * 60
    var playDuration: TimeInterval? = 24 * 60 * 60
    var bitrate = 0
}

/// The sample's `VideoDownload`: a video and the parameters it is downloaded with.
struct VideoDownload: Sendable {
    let video: PlaybackVideo
    let paramaters: DownloadParameters
}

/// The sample's `DownloadManager` (it keeps the name: the app's own type shadows the SDK's).
final class DownloadManager: Sendable {
    let settings: Locked<Settings>
    let alerts = Alerts()
    let notifications = Notifications()
    private let state = Locked<(videoDownloadQueue: [VideoDownload], downloadInProgress: Bool)>(([], false))
    /// What the downloads view shows: each token's last progress per media selection.
    let progress = Locked<[OfflineVideoToken: [OfflineMediaSelection: TimeInterval]]>([:])

    init(settings: Settings) {
        self.settings = Locked(settings)
    }

    var sharedManager: OfflineVideoManager { OfflineVideoManager.shared! }

    // MARK: Class methods (the sample's generateLicenseParameters / generateDownloadParameters)

    func generateLicenseParameters() -> DownloadParameters {
        let settings = settings.withLock { $0 }
        var licenseParamaters = DownloadParameters()
        if settings.isPurchaseLicenseType {
            licenseParamaters.license = .purchase
        } else {
            licenseParamaters.license = .rental(duration: settings.rentalDuration, playDuration: settings.playDuration)
        }
        return licenseParamaters
    }

    func generateDownloadParameters(displayName: String? = nil) -> DownloadParameters {
        var downloadParameters = generateLicenseParameters()
        let bitrate = settings.withLock { $0.bitrate }
        downloadParameters.requestedBitrate = bitrate > 0 ? bitrate : nil
        downloadParameters.displayName = displayName
        return downloadParameters
    }

    // MARK: Downloading (the sample's doDownload → preload queue → download queue)

    func doDownload(forVideo video: PlaybackVideo, displayName: String? = nil, mediaSelections: MediaSelections? = nil) async {
        if await videoAlreadyProcessing(video) { return }
        let downloadParamaters = generateDownloadParameters(displayName: displayName)
        let videoDownload = VideoDownload(video: video, paramaters: downloadParamaters)
        // Preloading only applies to FairPlay-protected videos.
        if video.usesFairPlay {
            do {
                let offlineVideoToken = try await sharedManager.preloadFairPlayLicense(video, parameters: videoDownload.paramaters)
                print("Preloaded \(offlineVideoToken)")
            } catch {
                alerts.show(withTitle: "Video Preload Error (\(video.name))", andMessage: error.localizedDescription)
                return
            }
        }
        state.withLock { $0.videoDownloadQueue.append(videoDownload) }
        await downloadVideoFromQueue(mediaSelections: mediaSelections)
    }

    private func videoAlreadyProcessing(_ video: PlaybackVideo) async -> Bool {
        guard let offlineVideoTokens = try? await sharedManager.offlineVideoTokens else { return false }
        for offlineVideoToken in offlineVideoTokens {
            guard let testVideo = await sharedManager.videoObject(fromOfflineVideoToken: offlineVideoToken) else { continue }
            if testVideo.id == video.id, let status = try? await sharedManager.offlineVideoStatus(forToken: offlineVideoToken),
               status.downloadState != .licensePreloaded {
                alerts.show(withTitle: "Video Already Downloaded", andMessage: "The video \(video.name) is already downloaded (or downloading)")
                return true
            }
        }
        return false
    }

    private func downloadVideoFromQueue(mediaSelections: MediaSelections?) async {
        let next: VideoDownload? = state.withLock { state in
            if state.downloadInProgress || state.videoDownloadQueue.isEmpty { return nil }
            state.downloadInProgress = true
            return state.videoDownloadQueue.removeFirst()
        }
        guard let videoDownload = next else { return }
        do {
            _ = try await sharedManager.requestVideoDownload(videoDownload.video, mediaSelections: mediaSelections,
                                                             parameters: videoDownload.paramaters)
            notifications.post(.updateStatus)
        } catch {
            state.withLock { $0.downloadInProgress = false }
            alerts.show(withTitle: "Video Download Error (\(videoDownload.video.name))", andMessage: error.localizedDescription)
        }
    }

    // MARK: The downloads view's actions

    func pause(_ offlineVideoToken: OfflineVideoToken) async {
        do { try await sharedManager.pauseVideoDownload(offlineVideoToken) } catch {
            alerts.show(withTitle: "Pause Error", andMessage: error.localizedDescription)
        }
    }

    func resume(_ offlineVideoToken: OfflineVideoToken) async {
        do { try await sharedManager.resumeVideoDownload(offlineVideoToken) } catch {
            alerts.show(withTitle: "Resume Error", andMessage: error.localizedDescription)
        }
    }

    func cancel(_ offlineVideoToken: OfflineVideoToken) async {
        do { try await sharedManager.cancelVideoDownload(offlineVideoToken) } catch {
            alerts.show(withTitle: "Cancel Error", andMessage: error.localizedDescription)
        }
    }

    func delete(_ offlineVideoToken: OfflineVideoToken) async {
        do { try await sharedManager.deleteOfflineVideo(offlineVideoToken) } catch {
            alerts.show(withTitle: "Delete Error", andMessage: error.localizedDescription)
        }
        notifications.post(.updateStatus)
    }

    /// The sample retries a failed or cancelled download by deleting it and downloading again.
    func retry(_ offlineVideoToken: OfflineVideoToken, video: PlaybackVideo) async {
        await delete(offlineVideoToken)
        await doDownload(forVideo: video)
    }

    /// The sample's "play" (DownloadedVideoViewController): the offline video object, checked
    /// for `playableOffline`, given to the player; an expired license gets its own alert.
    func play(_ offlineVideoToken: OfflineVideoToken) async -> OfflinePlayback? {
        guard let video = await sharedManager.videoObject(fromOfflineVideoToken: offlineVideoToken), video.playableOffline else {
            alerts.show(withTitle: "Video Not Playable", andMessage: "The video needs to be downloaded again")
            return nil
        }
        do {
            return try await sharedManager.openPlayback(video)
        } catch {
            let nsError = error as NSError
            if nsError.code == 69303 {  // kBCOVOfflineVideoManagerErrorCodeExpiredLicense
                alerts.show(withTitle: "License Expired", andMessage: error.localizedDescription)
            } else {
                alerts.show(withTitle: "Playback Error", andMessage: error.localizedDescription)
            }
            return nil
        }
    }

    /// The sample's "renew license": a fresh video from the Playback API, the license parameters.
    func renewLicense(_ offlineVideoToken: OfflineVideoToken, freshVideo video: PlaybackVideo) async -> Bool {
        do {
            _ = try await sharedManager.renewFairPlayLicense(offlineVideoToken, video: video, parameters: generateLicenseParameters())
            notifications.post(.updateStatus)
            return true
        } catch {
            alerts.show(withTitle: "License Renewal Error", andMessage: error.localizedDescription)
            return false
        }
    }
}

// MARK: - OfflineVideoManagerDelegate

extension DownloadManager: OfflineVideoManagerDelegate {
    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didProgressTo progressPercent: TimeInterval, for mediaSelection: OfflineMediaSelection) {
        progress.withLock { $0[offlineVideoToken, default: [:]][mediaSelection] = progressPercent }
        notifications.post(.updateStatus)
    }

    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishMediaSelectionDownload mediaSelection: OfflineMediaSelection) {
        notifications.post(.mediaSelectionFinished(offlineVideoToken, mediaSelection))
    }

    func offlineVideoToken(_ offlineVideoToken: OfflineVideoToken, didFinishDownloadWithError error: (any Error)?) {
        if let error {
            print("Download finished with error: \(error.localizedDescription)")
        }
        state.withLock { $0.downloadInProgress = false }
        notifications.post(.downloadFinished(offlineVideoToken, error.map { ($0 as NSError).code }))
        Task { await downloadVideoFromQueue(mediaSelections: nil) }
    }

    func didDownloadStaticImages(withOfflineVideoToken offlineVideoToken: OfflineVideoToken) {
        notifications.post(.staticImages(offlineVideoToken))
    }

    func offlineVideoStorageDidChange() {
        notifications.post(.updateStatus)
    }
}

// MARK: - Stand-ins for UIKit and NotificationCenter

/// `UIAlertController.show(withTitle:andMessage:)`: what the user would have seen.
final class Alerts: Sendable {
    let shown = Locked<[(title: String, message: String)]>([])
    func show(withTitle title: String, andMessage message: String) { shown.withLock { $0.append((title, message)) } }
    var titles: [String] { shown.withLock { $0.map(\.title) } }
}

/// `NotificationCenter` posts the view controllers listen to.
final class Notifications: Sendable {
    enum Name: Sendable, Equatable {
        case updateStatus
        case mediaSelectionFinished(OfflineVideoToken, OfflineMediaSelection)
        case downloadFinished(OfflineVideoToken, Int?)
        case staticImages(OfflineVideoToken)
    }

    let stream: AsyncStream<Name>
    private let continuation: AsyncStream<Name>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream()
    }

    func post(_ name: Name) { continuation.yield(name) }
}
