import Foundation
import LicenseProtocol
import WireModels

/// A license preloaded before its download, and a download requested for a video whose license was preloaded: Brightcove's apps pass the
/// same parameter set (terms, bitrate, display name) to `preloadFairPlayLicense` and then to
/// `requestVideoDownload`, or none the second time ("may be nil"); both use the preloaded license.
extension OfflineDownloads {
    /// `preloadFairPlayLicense`, with the content id of the download task that will use it
    /// (`LicenseFetcher`; the same id may not name another video's key) and the key id the app
    /// expects (refused, before any license request, when the video's is another).
    func preloadLicense(_ video: PlaybackVideo, parameters: DownloadParameters, contentID: String?,
                        expectedKeyID: String?) async throws(OfflineVideoError) -> OfflineVideoToken {
        try seams.requireOwner()
        try ParameterRules.validateBitrate(parameters.requestedBitrate)
        let terms = try ParameterRules.validateNewLicense(parameters.license)
        guard video.canBeDownloaded else {
            throw OfflineVideoError(.unsupported, .notEligible, "Video \(video.id) is not eligible for offline playback")
        }
        let source = try planner.offlineSource(of: video)
        guard let fairPlay = source.fairPlay else {
            throw OfflineVideoError(.unsupported, .license, "Preloading a license is only for FairPlay videos; video \(video.id) is not one")
        }
        _ = try reserve(video, refusingIn: DownloadStateMachine.holdsLicense, "already has a license or a download", contentID: contentID)
        defer { unreserve(video, contentID: contentID) }
        let (_, master) = try await planner.master(of: video)
        guard let keyID = DownloadPlanner.fairPlayKeyID(master.sessionKeys) else {
            throw OfflineVideoError(.noKeyRequestURLForRendition, .license, "The master playlist of video \(video.id) has no skd:// session key")
        }
        if let expectedKeyID, expectedKeyID != keyID {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "Video \(video.id) is protected with key \(keyID), not \(expectedKeyID)")
        }
        let license = try await licenses.acquire(terms, fairPlay: fairPlay, contentKeyID: keyID, video: video)
        let token = UUID().uuidString.lowercased()
        let now = configuration.clock().timeIntervalSince1970
        let allowsCellular = seams.options().allowsCellularDownload
        let born = DownloadStateMachine.birth(.preload)
        let record = try storeCall(.download) { () throws -> DownloadRecord in
            var record = try DownloadRecord.new(token: token, video: video, state: born.state, parameters: parameters,
                                                requestedAt: now, allowsCellular: allowsCellular, sequence: try store.nextSequence())
            license.apply(to: &record)
            record.contentID = contentID
            try store.insert(record, tracks: [], segments: [])
            return record
        }
        await announceBirth(record, born)
        return token
    }

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
                if !PreloadedTerms.matches(expiration: task.expiration, playDuration: task.playbackExpiryDuration,
                                           asked: preload.license, held: held) {
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
    /// How far a task's rental end may be from the key's when the key was not fetched for a named
    /// end (preloaded through `preloadFairPlayLicense` by duration, or stored before ends were
    /// carried): the server counted the duration from its own time, after the request's round
    /// trip, so the same end lands seconds off; an end another minute or more away is other terms.
    static let rentalEndTolerance: TimeInterval = 60

    /// A task's terms: nil `expiration` is a purchase; a rental ends at `expiration` with the same
    /// play window. A key fetched for a task carries the end its request named (`asked`): it
    /// matches that end exactly; any other key, its rental end within `rentalEndTolerance`.
    static func matches(expiration: Date?, playDuration: TimeInterval?, asked: RequestedLicense?, held: LicenseTerms) -> Bool {
        guard let expiration else { return held.kind == .purchase && playDuration == nil }
        guard held.kind == .rental, playDuration == held.playDuration else { return false }
        if let named = asked?.rentalEnd { return named == expiration }
        guard let end = held.rentalEnd else { return false }
        return abs(end.timeIntervalSince(expiration)) <= rentalEndTolerance
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
