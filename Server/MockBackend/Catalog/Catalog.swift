public import Foundation
import WireModels

/// An account: its policy keys, whether FairPlay is set up, its manifest-token lifetime.
public struct Account: Sendable {
    /// The account id.
    public var id: String
    /// A display name.
    public var name: String
    /// Whether FairPlay (certificate and licenses) is set up for the account.
    public var fairPlay: Bool
    /// Lifetime of manifest URLs' tokens, in seconds (60 s to 6 h).
    public var manifestTokenTTL: TimeInterval
    /// Policy key → whether it may search.
    public var policyKeys: [String: Bool]
    /// The kinds of source the account serves (all of them unless the catalog says otherwise).
    public var deliveryFormats: Set<DeliveryFormat> = Set(DeliveryFormat.allCases)
    /// How its CMAF sources address their media (one file per segment unless the catalog says otherwise).
    public var cmafAddressing: CMAFAddressing = .segments
}

/// Which rendition of a video a URL names.
enum RenditionKind: String, Sendable {
    /// H.264 (`asset.video`), HEVC (`asset.hevc`: CMAF sources only), audio, subtitles.
    case video, hevc, audio, subtitles
}

/// A rendition of a catalog video as it appears in URLs: its stable uuid and which
/// fixture rendition it serves.
struct RenditionRef: Sendable {
    var uuid: String
    var kind: RenditionKind
    /// Index into the asset's `video`, `audio` or `subtitles` array.
    var index: Int
}

/// A video as the catalog defines it, with its media asset resolved.
public struct CatalogVideo: Sendable {
    /// The video id.
    public var id: String
    /// The owning account id.
    public var accountID: String
    /// The stable uuid used in manifest and media URLs.
    public var uuid: String
    /// The reference id, if any.
    public var referenceID: String?
    /// Metadata as the Playback API shows it.
    public var name: String
    var description: String?
    var longDescription: String?
    /// How the media is protected.
    public var protection: Protection
    /// Whether the video may be downloaded for offline playback.
    public var offlineEnabled: Bool
    var asset: MediaAsset
    /// How many times the asset is played back to back (1 = once).
    public var repeatCount: Int
    var videoRenditions: [RenditionRef]
    /// The HEVC ladder of the CMAF sources (the same sizes as `videoRenditions` that the asset has in
    /// HEVC); empty when the asset has none or the account does not deliver HEVC.
    var hevcRenditions: [RenditionRef] = []
    var audioRenditions: [RenditionRef]
    var subtitleRenditions: [RenditionRef]
    /// The asset's subtitles offered as sideband text tracks (indices; empty: none).
    var sidebandSubtitles: [Int]
    /// The `kind` of each sideband track by language, as the catalog says (`captions` when it does not).
    var textTrackKinds: [String: String]
    var tags: [String]
    var customFields: [String: String]
    var economics: String
    var createdAt: Date
    var updatedAt: Date
    var publishedAt: Date
    /// The CMS API's state, schedule and the metadata it edits beyond the catalog file's.
    var state: VideoState = .active
    var startsAt: Date?
    var endsAt: Date?
    var cuePoints: [CuePoint] = []
    var link: Link?
    var adKeys: String?
    var remoteTextTracks: [RemoteTextTrack] = []

    /// Whether the video plays at `now` (it has media, so it is complete): `VideoAvailability`.
    func isPlayable(now: Date) -> Bool {
        VideoAvailability.isPlayable(state: state, complete: true, starts: startsAt, ends: endsAt, now: now)
    }

    /// Which build of the catalog made this value (the admin API's edits rebuild it): bodies
    /// cached from the video carry it in their keys, so an edit makes them miss.
    var generation = 0

    /// The `kind`s a text track may have (the CMS API's list).
    static let textTrackKinds = ["captions", "subtitles", "descriptions", "chapters", "metadata", "transcripts"]

    /// Total segments per rendition.
    var segmentCount: Int { asset.video[0].segments.count * repeatCount }
    /// The duration in milliseconds.
    public var durationMilliseconds: Int { Int((asset.duration * Double(repeatCount) * 1000).rounded()) }
    /// All renditions (video, audio, subtitles).
    var allRenditions: [RenditionRef] { videoRenditions + hevcRenditions + audioRenditions + subtitleRenditions }
    /// The video renditions of the CMAF sources: the H.264 ladder, then the HEVC one.
    var cmafVideoRenditions: [RenditionRef] { videoRenditions + hevcRenditions }
}

/// A playlist as the catalog defines it.
public struct CatalogPlaylist: Sendable {
    var id: String
    var accountID: String
    var referenceID: String?
    var name: String
    var description: String?
    var type: String
    var videoIDs: [String]
    var createdAt: Date
    var updatedAt: Date
    /// A smart playlist's rule; nil for a manual (EXPLICIT) one.
    var smart: SmartPlaylist?
}

/// The whole catalog, validated and indexed for the lookups the routes make.
public struct Catalog: Sendable {
    /// Accounts by id.
    public private(set) var accounts: [String: Account] = [:]
    /// Videos by id.
    public private(set) var videos: [String: CatalogVideo] = [:]
    /// Video ids in catalog order.
    public private(set) var videoOrder: [String] = []
    private(set) var playlists: [String: CatalogPlaylist] = [:]
    private var policyKeyOwners: [String: String] = [:]      // key → account id
    private var videoByReference: [String: String] = [:]     // "acct/ref" → id
    private var playlistByReference: [String: String] = [:]  // "acct/ref" → id
    private var videoByUUID: [String: String] = [:]
    private var renditionByUUID: [String: (videoID: String, rendition: RenditionRef)] = [:]
    /// Videos without media yet (made through the CMS API, not ingested): id → account id.
    /// They are in the document, not in `videos`: nothing can be served for them.
    private var incompleteVideos: [String: String] = [:]
    /// Ingested videos whose media folder is gone (removed by hand, or a `--media-dir` this
    /// instance does not see): each is incomplete until it is ingested again, and the mock
    /// starts anyway, saying which (a catalog that names a missing fixture asset still fails).
    public private(set) var videosMissingMedia: [(videoID: String, asset: String)] = []

    /// Loads and validates a catalog file; media assets are read from `media/` beside it.
    public static func load(from file: URL, defaultManifestTokenTTL: TimeInterval = 6 * 3600) throws(CatalogError) -> Catalog {
        let assets = MediaAssets(root: file.deletingLastPathComponent().appendingPathComponent("media"))
        return try build(CatalogFile.read(from: file), assets: assets, defaultManifestTokenTTL: defaultManifestTokenTTL)
    }

    /// Validates a catalog and indexes it; `assets` gives the media each video names.
    static func build(_ raw: CatalogFile, assets: MediaAssets, defaultManifestTokenTTL: TimeInterval,
                      generation: Int = 0) throws(CatalogError) -> Catalog {
        var catalog = Catalog()
        for account in raw.accounts { try catalog.add(account, defaultManifestTokenTTL: defaultManifestTokenTTL) }
        for entry in raw.videos { try catalog.add(entry, assets: assets, generation: generation) }
        for entry in raw.playlists { try catalog.add(entry) }
        return catalog
    }

    /// Adds an account and claims its policy keys.
    private mutating func add(_ account: CatalogFile.Account, defaultManifestTokenTTL: TimeInterval) throws(CatalogError) {
        guard accounts[account.id] == nil else { throw CatalogError(.invalidCatalog, "duplicate account id \(account.id)") }
        let ttl = TimeInterval(account.manifestTokenTTLSeconds ?? Int(defaultManifestTokenTTL))
        guard (60...21600).contains(ttl) else {
            throw CatalogError(.invalidCatalog, "account \(account.id): manifest_token_ttl_seconds must be between 60 and 21600")
        }
        var keys: [String: Bool] = [:]
        for key in account.policyKeys {
            // A key travels in the BCOV-Policy header: visible ASCII, no spaces.
            guard (1...256).contains(key.key.utf8.count), key.key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw CatalogError(.invalidCatalog, "account \(account.id): a policy key must be 1-256 visible ASCII characters (no spaces)")
            }
            if let owner = policyKeyOwners[key.key] {
                throw CatalogError(.invalidCatalog, "policy key \(key.key) is used by accounts \(owner) and \(account.id)")
            }
            policyKeyOwners[key.key] = account.id
            keys[key.key] = key.searchEnabled
        }
        accounts[account.id] = Account(id: account.id, name: account.name, fairPlay: account.fairplay,
                                       manifestTokenTTL: ttl, policyKeys: keys,
                                       deliveryFormats: try account.deliveryFormats.map { names throws(CatalogError) in
                                           try DeliveryFormat.parse(names, account: account.id)
                                       } ?? Set(DeliveryFormat.allCases),
                                       cmafAddressing: try account.cmafAddressing.map { name throws(CatalogError) in
                                           try CMAFAddressing.parse(name, account: account.id)
                                       } ?? .segments)
    }

    /// Adds a video of a known account, with its renditions and reference id.
    private mutating func add(_ entry: CatalogFile.Video, assets: MediaAssets, generation: Int) throws(CatalogError) {
        guard videos[entry.id] == nil else { throw CatalogError(.invalidCatalog, "duplicate video id \(entry.id)") }
        guard let account = accounts[entry.accountID] else {
            throw CatalogError(.invalidCatalog, "video \(entry.id) names unknown account \(entry.accountID)")
        }
        if entry.protection == .fairplay && !account.fairPlay {
            throw CatalogError(.invalidCatalog, "video \(entry.id) is FairPlay but account \(account.id) has no FairPlay")
        }
        guard let assetName = entry.asset else { return try addIncomplete(entry) }
        if MediaAssets.isIngested(assetName) && assets.directory(of: assetName) == nil {
            videosMissingMedia.append((entry.id, assetName))
            return try addIncomplete(entry)
        }
        guard incompleteVideos[entry.id] == nil else { throw CatalogError(.invalidCatalog, "duplicate video id \(entry.id)") }
        var video = try Self.makeVideo(entry, asset: try assets.asset(named: assetName), hevc: account.deliveryFormats.contains(.hevc))
        video.generation = generation
        videos[video.id] = video
        videoOrder.append(video.id)
        videoByUUID[video.uuid] = video.id
        for rendition in video.allRenditions { renditionByUUID[rendition.uuid] = (video.id, rendition) }
        if let ref = video.referenceID {
            guard videoByReference.updateValue(video.id, forKey: "\(video.accountID)/\(ref)") == nil else {
                throw CatalogError(.invalidCatalog, "duplicate reference id \(ref) in account \(video.accountID)")
            }
        }
    }

    /// Adds a video without media (nothing can be served for it).
    private mutating func addIncomplete(_ entry: CatalogFile.Video) throws(CatalogError) {
        guard incompleteVideos.updateValue(entry.accountID, forKey: entry.id) == nil else {
            throw CatalogError(.invalidCatalog, "duplicate video id \(entry.id)")
        }
        if let ref = entry.referenceID, videoByReference.updateValue(entry.id, forKey: "\(entry.accountID)/\(ref)") != nil {
            throw CatalogError(.invalidCatalog, "duplicate reference id \(ref) in account \(entry.accountID)")
        }
    }

    /// Adds a playlist of a known account whose videos are all in that account.
    private mutating func add(_ entry: CatalogFile.Playlist) throws(CatalogError) {
        guard accounts[entry.accountID] != nil else {
            throw CatalogError(.invalidCatalog, "playlist \(entry.id) names unknown account \(entry.accountID)")
        }
        for id in entry.videoIDs where videos[id]?.accountID != entry.accountID && incompleteVideos[id] != entry.accountID {
            throw CatalogError(.invalidCatalog, "playlist \(entry.id) names video \(id), which is not in account \(entry.accountID)")
        }
        let type = entry.type ?? "EXPLICIT"
        let smart = SmartPlaylist(type: type, search: entry.search, limit: entry.limit)
        guard type == "EXPLICIT" || smart != nil else {
            throw CatalogError(.invalidCatalog, "playlist \(entry.id): type \(type) is not EXPLICIT or a smart type, or its search is not a tag search (tags:a,b or +tags:a,b)")
        }
        var playlist = CatalogPlaylist(
            id: entry.id, accountID: entry.accountID, referenceID: entry.referenceID, name: entry.name,
            description: entry.description, type: entry.type ?? "EXPLICIT", videoIDs: entry.videoIDs,
            createdAt: try Self.date(entry.createdAt, "playlist \(entry.id) created_at"),
            updatedAt: try Self.date(entry.updatedAt, "playlist \(entry.id) updated_at"))
        playlist.smart = smart
        guard playlists.updateValue(playlist, forKey: playlist.id) == nil else {
            throw CatalogError(.invalidCatalog, "duplicate playlist id \(entry.id)")
        }
        if let ref = entry.referenceID { playlistByReference["\(entry.accountID)/\(ref)"] = entry.id }
    }

    private static func makeVideo(_ entry: CatalogFile.Video, asset: MediaAsset, hevc: Bool) throws(CatalogError) -> CatalogVideo {
        let repeatCount = entry.repeatCount ?? 1
        guard repeatCount >= 1 else { throw CatalogError(.invalidCatalog, "video \(entry.id): repeat must be at least 1") }
        let languages = entry.audioLanguages ?? asset.audio.map(\.language)
        var audio: [RenditionRef] = []
        for language in languages {
            guard let index = asset.audio.firstIndex(where: { $0.language == language }) else {
                throw CatalogError(.invalidCatalog, "video \(entry.id): asset \(asset.name) has no audio in '\(language)'")
            }
            audio.append(RenditionRef(uuid: StableID.uuid("rendition:\(entry.id):audio:\(language)"), kind: .audio, index: index))
        }
        let renditionNames = entry.renditions ?? asset.video.map(\.name)
        for name in renditionNames where !asset.video.contains(where: { $0.name == name }) {
            throw CatalogError(.invalidCatalog, "video \(entry.id): asset \(asset.name) has no video rendition '\(name)' (it has \(asset.video.map(\.name).joined(separator: ", ")))")
        }
        guard !renditionNames.isEmpty else { throw CatalogError(.invalidCatalog, "video \(entry.id): renditions must name at least one") }
        let video = asset.video.indices.filter { renditionNames.contains(asset.video[$0].name) }.map {
            RenditionRef(uuid: StableID.uuid("rendition:\(entry.id):video:\(asset.video[$0].name)"), kind: .video, index: $0)
        }
        let subtitleLanguages = entry.subtitleLanguages ?? asset.subtitles.map(\.language)
        for language in subtitleLanguages where !asset.subtitles.contains(where: { $0.language == language }) {
            throw CatalogError(.invalidCatalog, "video \(entry.id): asset \(asset.name) has no subtitles in '\(language)'")
        }
        let subtitleIndices = asset.subtitles.indices.filter { subtitleLanguages.contains(asset.subtitles[$0].language) }
        for (language, kind) in entry.textTrackKinds ?? [:] {
            guard subtitleIndices.contains(where: { asset.subtitles[$0].language == language }) else {
                throw CatalogError(.invalidCatalog, "video \(entry.id): text_track_kinds names '\(language)', which is not one of its subtitle languages")
            }
            guard CatalogVideo.textTrackKinds.contains(kind) else {
                throw CatalogError(.invalidCatalog, "video \(entry.id): text track kind '\(kind)' is not one of \(CatalogVideo.textTrackKinds.joined(separator: ", "))")
            }
        }
        let subtitles = (entry.subtitlesInManifest ?? false) ? subtitleIndices.map {
            RenditionRef(uuid: StableID.uuid("rendition:\(entry.id):subtitles:\(asset.subtitles[$0].language)"), kind: .subtitles, index: $0)
        } : []
        let window = entry.schedule?.window
        if let schedule = entry.schedule {
            for (text, date, what) in [(schedule.startsAt, window?.starts, "starts_at"), (schedule.endsAt, window?.ends, "ends_at")] where text != nil && date == nil {
                throw CatalogError(.invalidCatalog, "video \(entry.id) schedule.\(what): '\(text ?? "")' is not an ISO-8601 date")
            }
        }
        var made = CatalogVideo(
            id: entry.id, accountID: entry.accountID, uuid: StableID.uuid("video:\(entry.accountID):\(entry.id)"),
            referenceID: entry.referenceID, name: entry.name, description: entry.description,
            longDescription: entry.longDescription, protection: entry.protection, offlineEnabled: entry.offlineEnabled,
            asset: asset, repeatCount: repeatCount, videoRenditions: video, audioRenditions: audio,
            subtitleRenditions: subtitles,
            sidebandSubtitles: (entry.sidebandTextTracks ?? false)
                ? subtitleIndices.filter { entry.sidebandLanguages?.contains(asset.subtitles[$0].language) ?? true } : [],
            textTrackKinds: entry.textTrackKinds ?? [:],
            tags: entry.tags ?? [], customFields: entry.customFields ?? [:], economics: entry.economics ?? "AD_SUPPORTED",
            createdAt: try date(entry.createdAt, "video \(entry.id) created_at"),
            updatedAt: try date(entry.updatedAt, "video \(entry.id) updated_at"),
            publishedAt: try date(entry.publishedAt, "video \(entry.id) published_at"))
        if hevc {
            made.hevcRenditions = asset.hevc.indices.filter { renditionNames.contains(asset.hevc[$0].name) }.map {
                RenditionRef(uuid: StableID.uuid("rendition:\(entry.id):hevc:\(asset.hevc[$0].name)"), kind: .hevc, index: $0)
            }
        }
        made.state = entry.state ?? .active
        made.startsAt = window?.starts
        made.endsAt = window?.ends
        made.cuePoints = entry.cuePoints ?? []
        made.link = entry.link
        made.adKeys = entry.adKeys
        for (index, track) in (entry.remoteTextTracks ?? []).enumerated() {
            if let problem = track.problem { throw CatalogError(.invalidCatalog, "video \(entry.id) remote_text_tracks[\(index)].\(problem)") }
        }
        made.remoteTextTracks = entry.remoteTextTracks ?? []
        return made
    }

    private static func date(_ text: String, _ what: String) throws(CatalogError) -> Date {
        guard let date = WireDate.date(from: text) else { throw CatalogError(.invalidCatalog, "\(what): '\(text)' is not an ISO-8601 date") }
        return date
    }

    // MARK: Lookups

    /// The account a policy key belongs to, with whether the key may search.
    public func account(forPolicyKey key: String) -> (account: Account, searchEnabled: Bool)? {
        guard let owner = policyKeyOwners[key], let account = accounts[owner], let search = account.policyKeys[key] else { return nil }
        return (account, search)
    }

    /// A video by id or by `ref:{reference_id}` within an account.
    public func video(account: String, idOrReference: String) -> CatalogVideo? {
        if idOrReference.hasPrefix("ref:") {
            return videoByReference["\(account)/\(idOrReference.dropFirst(4))"].flatMap { videos[$0] }
        }
        return videos[idOrReference].flatMap { $0.accountID == account ? $0 : nil }
    }

    /// Whether `idOrReference` names a video of `account` that has no media yet (not complete).
    func hasIncompleteVideo(account: String, idOrReference: String) -> Bool {
        let id = idOrReference.hasPrefix("ref:") ? videoByReference["\(account)/\(idOrReference.dropFirst(4))"] : idOrReference
        return id.map { incompleteVideos[$0] == account } ?? false
    }

    /// A playlist by id or by `ref:{reference_id}` within an account.
    func playlist(account: String, idOrReference: String) -> CatalogPlaylist? {
        if idOrReference.hasPrefix("ref:") {
            return playlistByReference["\(account)/\(idOrReference.dropFirst(4))"].flatMap { playlists[$0] }
        }
        return playlists[idOrReference].flatMap { $0.accountID == account ? $0 : nil }
    }

    /// A video by the uuid in its manifest URLs.
    func video(uuid: String) -> CatalogVideo? { videoByUUID[uuid].flatMap { videos[$0] } }

    /// A rendition by uuid, checked to belong to `video`.
    func rendition(uuid: String, of video: CatalogVideo) -> RenditionRef? {
        guard let found = renditionByUUID[uuid], found.videoID == video.id else { return nil }
        return found.rendition
    }
}

extension CatalogVideo {
    /// A rendition's name for people and fault rules: `416x234`, `audio:en`, `subtitles:fr`.
    func renditionName(_ rendition: RenditionRef) -> String {
        switch rendition.kind {
        case .video: asset.video.indices.contains(rendition.index) ? asset.video[rendition.index].name : rendition.uuid
        case .hevc: asset.hevc.indices.contains(rendition.index) ? "hevc:" + asset.hevc[rendition.index].name : rendition.uuid
        case .audio: asset.audio.indices.contains(rendition.index) ? "audio:" + asset.audio[rendition.index].language : rendition.uuid
        case .subtitles: asset.subtitles.indices.contains(rendition.index) ? "subtitles:" + asset.subtitles[rendition.index].language : rendition.uuid
        }
    }
}
