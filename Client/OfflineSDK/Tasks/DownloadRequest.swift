public import Foundation
import WireModels

/// What `DownloadManager.enqueue` downloads, in the manner of Quickplay's `DownloadRequest`:
/// a content id that names the task, the content (a Playback API video, or an HLS URL), a
/// title, a preferred bitrate, the app's metadata, and for FairPlay content the license's
/// expiry and play duration ("dual expiry") and its key id.
///
/// ```swift
/// let request = DownloadRequest(contentId: "episode-1", video: video, title: "Episode 1",
///                               preferredVideoBitrate: 500_000, expiration: Date() + 30 * 86400,
///                               playbackExpiryDuration: 48 * 3600)
/// ```
public struct DownloadRequest: Sendable, Equatable {
    /// Where the content comes from.
    public enum Content: Sendable, Equatable {
        /// A video from the Playback API (its license and certificate URLs come with it).
        case video(PlaybackVideo)
        /// An HLS master playlist at a URL; for FairPlay content, with where its license comes
        /// from (a plain URL cannot say it).
        case url(URL, fairPlay: FairPlaySource?)
    }

    /// Where the license of FairPlay content at a URL comes from: the license server (where
    /// SPCs go), the application certificate, and the account and video the server knows the
    /// content under (its licenses are bound to them, and the SDK checks that they are).
    public struct FairPlaySource: Sendable, Equatable {
        public var licenseURL: URL
        public var certificateURL: URL
        public var accountID: String
        public var videoID: String

        /// Creates a FairPlay source.
        ///
        /// - Parameters:
        ///   - licenseURL: The license server, where SPCs go.
        ///   - certificateURL: The application certificate.
        ///   - accountID: The account the license server knows the content under.
        ///   - videoID: The video the license server knows the content under.
        public init(licenseURL: URL, certificateURL: URL, accountID: String, videoID: String) {
            self.licenseURL = licenseURL
            self.certificateURL = certificateURL
            self.accountID = accountID
            self.videoID = videoID
        }
    }

    /// Names the task: one task per content id.
    public var contentId: String
    public var content: Content
    /// The name shown for the download (its display name in the other façade).
    public var title: String
    /// The largest video bitrate to take (bits per second); nil takes the lowest rendition.
    public var preferredVideoBitrate: Int?
    /// The app's own string, kept with the task.
    public var metadata: String?
    /// FairPlay: when the rental ends; nil is a purchase (never expires).
    public var expiration: Date?
    /// FairPlay: the play window, in seconds, that starts at the first playback ("dual
    /// expiry": the license then ends at the earlier of `expiration` and first play + this).
    public var playbackExpiryDuration: TimeInterval?
    /// FairPlay: the key the app expects (`skd://KEYID` or the key id alone); the content's must
    /// be the same.
    public var skd: String?
    /// Audio and subtitle languages to take; nil takes the configuration's preferred ones.
    public var mediaSelections: MediaSelections?

    /// A request for an HLS URL (`fairPlay` says where the license of protected content comes from).
    ///
    /// - Parameters:
    ///   - contentId: Names the task: one task per content id.
    ///   - contentUrl: The HLS master playlist (http or https).
    ///   - title: The name shown for the download.
    ///   - preferredVideoBitrate: The largest video bitrate to take, in bits per second; nil (the default)
    ///     takes the lowest rendition.
    ///   - metadata: The app's own string, kept with the task; nil by default.
    ///   - expiration: FairPlay: when the rental ends; nil (the default) is a purchase.
    ///   - playbackExpiryDuration: FairPlay: the play window in seconds from the first playback (needs an
    ///     `expiration`); nil by default.
    ///   - skd: FairPlay: the key the app expects (`skd://KEYID` or the key id alone); nil by default.
    ///   - fairPlay: For FairPlay content, where its license comes from; nil (the default) for clear content.
    ///   - mediaSelections: The audio and subtitle languages; nil (the default) takes the configuration's
    ///     preferred ones.
    public init(contentId: String, contentUrl: URL, title: String, preferredVideoBitrate: Int? = nil, metadata: String? = nil,
                expiration: Date? = nil, playbackExpiryDuration: TimeInterval? = nil, skd: String? = nil,
                fairPlay: FairPlaySource? = nil, mediaSelections: MediaSelections? = nil) {
        self.init(contentId: contentId, content: .url(contentUrl, fairPlay: fairPlay), title: title, preferredVideoBitrate: preferredVideoBitrate,
                  metadata: metadata, expiration: expiration, playbackExpiryDuration: playbackExpiryDuration, skd: skd,
                  mediaSelections: mediaSelections)
    }

    /// A request for a video found with ``PlaybackService``.
    ///
    /// - Parameters:
    ///   - contentId: Names the task: one task per content id.
    ///   - video: The video, found with ``PlaybackService``.
    ///   - title: The name shown for the download; nil (the default) takes the video's name.
    ///   - preferredVideoBitrate: The largest video bitrate to take, in bits per second; nil (the default)
    ///     takes the lowest rendition.
    ///   - metadata: The app's own string, kept with the task; nil by default.
    ///   - expiration: FairPlay: when the rental ends; nil (the default) is a purchase.
    ///   - playbackExpiryDuration: FairPlay: the play window in seconds from the first playback (needs an
    ///     `expiration`); nil by default.
    ///   - skd: FairPlay: the key the app expects (`skd://KEYID` or the key id alone); nil by default.
    ///   - mediaSelections: The audio and subtitle languages; nil (the default) takes the configuration's
    ///     preferred ones.
    public init(contentId: String, video: PlaybackVideo, title: String? = nil, preferredVideoBitrate: Int? = nil, metadata: String? = nil,
                expiration: Date? = nil, playbackExpiryDuration: TimeInterval? = nil, skd: String? = nil,
                mediaSelections: MediaSelections? = nil) {
        self.init(contentId: contentId, content: .video(video), title: title ?? video.name, preferredVideoBitrate: preferredVideoBitrate,
                  metadata: metadata, expiration: expiration, playbackExpiryDuration: playbackExpiryDuration, skd: skd,
                  mediaSelections: mediaSelections)
    }

    init(contentId: String, content: Content, title: String, preferredVideoBitrate: Int?, metadata: String?,
         expiration: Date?, playbackExpiryDuration: TimeInterval?, skd: String?, mediaSelections: MediaSelections?) {
        self.contentId = contentId
        self.content = content
        self.title = title
        self.preferredVideoBitrate = preferredVideoBitrate
        self.metadata = metadata
        self.expiration = expiration
        self.playbackExpiryDuration = playbackExpiryDuration
        self.skd = skd
        self.mediaSelections = mediaSelections
    }

    // MARK: Translation to the shared request path

    /// The content as a video object: the Playback API's, or one made for the URL (the license
    /// server's ids for FairPlay content, else the content id; offline-enabled; the URL as its
    /// only HLS source).
    func video(now: Date) throws(OfflineVideoError) -> PlaybackVideo {
        switch content {
        case .video(let video):
            return video
        case .url(let url, let fairPlay):
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
                throw OfflineVideoError(.invalidParameter, .invalidParameter, "The content URL must be http or https: \(url)")
            }
            let keySystem = fairPlay.map {
                [KeySystem.fairPlay: KeySystem(keyRequestURL: $0.licenseURL.absoluteString, certificateURL: $0.certificateURL.absoluteString)]
            }
            let source = VideoSource(src: url.absoluteString, keySystems: keySystem)
            let video = Video(id: fairPlay?.videoID ?? contentId, accountID: fairPlay?.accountID ?? "", name: title, duration: 0, createdAt: now, updatedAt: now, publishedAt: now,
                              offlineEnabled: true, sources: [source])
            do {
                return try PlaybackVideo(json: Array(try WireJSON.encoder(sortedKeys: true).encode(video)))
            } catch {
                throw OfflineVideoError(.invalidParameter, .invalidParameter, "Cannot describe the content at \(url): \(error)", underlying: error)
            }
        }
    }

    /// The license terms: a rental ending at `expiration` (with the play window), else a
    /// purchase. `invalidLicenseParameters` for an expiry already past or a play window without an expiry.
    func license(now: Date) throws(OfflineVideoError) -> RequestedLicense {
        guard let expiration else {
            if playbackExpiryDuration != nil {
                throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters,
                                        "A playback expiry duration needs an expiration (dual expiry is for rentals)")
            }
            return .purchase
        }
        let duration = expiration.timeIntervalSince(now).rounded(.down)
        guard duration >= 1 else {
            throw OfflineVideoError(.invalidParameter, .invalidLicenseParameters, "The expiration \(expiration) is not in the future")
        }
        var terms = RequestedLicense.rental(duration: duration, playDuration: playbackExpiryDuration)
        terms.rentalEnd = expiration  // carried as named: matched again exactly (`PreloadedTerms`)
        return terms
    }

    /// The key id `skd` names (`skd://KEYID` or `KEYID`); nil when none is given.
    var keyID: String? {
        guard let skd, !skd.isEmpty else { return nil }
        return LicenseFetcher.keyID(skd)
    }

    /// Checks what every use of a request needs: a content id and a title.
    func validate() throws(OfflineVideoError) {
        if contentId.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "A download request needs a content id")
        }
        if title.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw OfflineVideoError(.invalidParameter, .invalidParameter, "A download request needs a title")
        }
    }
}
