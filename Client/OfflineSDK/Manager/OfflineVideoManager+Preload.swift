import Foundation
import LicenseProtocol

/// A download requested for a video whose license was preloaded: Brightcove's apps pass the
/// same parameter set (terms, bitrate, display name) to `preloadFairPlayLicense` and then to
/// `requestVideoDownload`, or none the second time ("may be nil"); both use the preloaded license.
extension OfflineVideoManager {
    /// Folds a preload's parameters into a request for its video: what the request leaves out
    /// (bitrate, display name) comes from the preload; license terms it names must be those the
    /// license was preloaded (or last renewed) with, the same `RequestedLicense`, else it is refused (`invalidLicenseParameters`): the preloaded license is
    /// never silently replaced, and is not silently kept under other terms either (change them
    /// with `renewFairPlayLicense`, or delete the preload). A task's request names its terms as
    /// a rental end (`expiration`) and play window, checked the same way.
    static func mergePreloaded(_ record: DownloadRecord, into request: inout DownloadSpec, video: PlaybackVideo) throws(OfflineVideoError) {
        let preload = (try? JSONDecoder().decode(DownloadParameters.self, from: record.parameters)) ?? DownloadParameters()
        if let held = StoredLicense.terms(of: record) {
            if let task = request.task {
                if !PreloadedTerms.matches(expiration: task.expiration, playDuration: task.playbackExpiryDuration, held: held) {
                    throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters,
                                            "Content \(task.contentID) holds a key \(PreloadedTerms.describe(held))"
                                                + (held.rentalEnd.map { " ending \($0)" } ?? "") + "; the request asks for "
                                                + (task.expiration.map { "a rental ending \($0)" } ?? "a purchase")
                                                + (task.playbackExpiryDuration.map { " with a \(Int($0)) s play window" } ?? "")
                                                + ": enqueue it with the key's terms, or renew the key (licenseFetcher.renewLicense) first")
                }
            } else if let asked = request.parameters.license, let terms = preload.license, asked != terms {
                throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters,
                                        "A license was preloaded for video \(video.id) as \(PreloadedTerms.describe(terms)); the request asks for "
                                            + PreloadedTerms.describe(asked)
                                            + ": request the download with the same terms or none, or change them with renewFairPlayLicense first")
            }
        }
        // The license is the preloaded one (not asked for again); its terms stay on record.
        request.parameters.license = preload.license
        if request.parameters.requestedBitrate == nil, let bitrate = preload.requestedBitrate {
            request.parameters.requestedBitrate = bitrate
            if case .lowestWithVideo = request.variant { request.variant = .atOrBelow(bitrate) }
        }
        if request.parameters.displayName == nil { request.parameters.displayName = preload.displayName }
    }
}

/// Whether the terms a task's request names are those of the key held.
enum PreloadedTerms {
    /// How far a task's rental end may be from the key's: the request's end was turned into a
    /// duration (whole seconds) when the key was fetched and the server counts it from its own
    /// time, after the request's round trip, so the same `expiration` lands seconds off (more on
    /// a slow network); an end another minute or more away is other terms.
    static let rentalEndTolerance: TimeInterval = 60

    /// A task's terms: nil `expiration` is a purchase; a rental ends at `expiration` (within
    /// `rentalEndTolerance`) with the same play window.
    static func matches(expiration: Date?, playDuration: TimeInterval?, held: LicenseTerms) -> Bool {
        guard let expiration else { return held.kind == .purchase && playDuration == nil }
        guard held.kind == .rental, let end = held.rentalEnd else { return false }
        return abs(end.timeIntervalSince(expiration)) <= rentalEndTolerance && playDuration == held.playDuration
    }

    static func describe(_ held: LicenseTerms) -> String {
        guard held.kind == .rental, let end = held.rentalEnd else { return "(purchase)" }
        return "(rental of \(Int(end.timeIntervalSince(held.issuedAt).rounded())) s"
            + (held.playDuration.map { ", play window \(Int($0)) s" } ?? "") + ")"
    }

    static func describe(_ asked: RequestedLicense) -> String {
        guard asked.kind == .rental else { return "a purchase" }
        return "a rental of \(Int(asked.rentalDuration ?? 0)) s" + (asked.playDuration.map { ", play window \(Int($0)) s" } ?? "")
    }
}
