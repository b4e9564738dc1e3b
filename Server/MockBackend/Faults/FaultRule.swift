import Foundation

/// The kinds of route a fault rule can aim at.
public enum RouteClass: String, Codable, Sendable, CaseIterable {
    case playbackAPI = "playback_api"
    case masterPlaylist = "master_playlist"
    case mediaPlaylist = "media_playlist"
    case segment
    case aesKey = "aes_key"
    case license
    case certificate
    case image
    case subtitles
    /// The analytics collector, `POST /tracker`.
    case tracker

    /// What a request is, with the account, video (uuid) and rendition (uuid) its path names;
    /// nil for paths no rule can aim at (the admin API).
    static func classify(_ segments: [String]) -> (RouteClass, account: String?, video: String?, rendition: String?)? {
        func at(_ index: Int) -> String? { segments.indices.contains(index) ? segments[index] : nil }
        switch (at(0), at(1)) {
        case ("playback", _): return (.playbackAPI, at(3), nil, nil)
        case ("manifest", let version):
            // v2 (`/manifest/v2/hls/v7/{protection}/{codecs}/{account}/…`, DASH alike) has the codecs folder before the account.
            let first = version == "v2" ? 6 : 5
            if segments.last == "rendition.m3u8" {
                return (.mediaPlaylist, at(first), at(first + 1), at(first + 2))
            }
            return (.masterPlaylist, at(first), at(first + 1), nil)
        case ("media", _):
            let isText = segments.last?.hasSuffix(".vtt") ?? false
            // `/media/v2/cmaf/{scheme}/{account}/…` has one folder fewer than `/media/v1/hls/v5/{protection}/{account}/…`.
            let first = at(2) == "cmaf" ? 4 : 5
            return (isText ? .subtitles : .segment, at(first), at(first + 1), at(first + 2))
        case ("license", _):
            switch at(2) {
            case "aes128": return (.aesKey, at(3), at(4), nil)
            case "fairplay_app_cert": return (.certificate, at(3), nil, nil)
            case "fairplay": return (.license, at(3), at(4), nil)
            case "sample-aes-test-key": return (.aesKey, at(3), at(4), nil)
            default: return nil
            }
        // Posters and thumbnails (`/image/v1/{account}/{video}/…`), the thumbnail track's sprites
        // (`/image/v1/sprite/{account}/{video}/…`) and its WebVTT (`/thumbnail/v1/{account}/{video}/…`).
        case ("image", _): return at(2) == "sprite" ? (.image, at(3), at(4), nil) : (.image, at(2), at(3), nil)
        case ("thumbnail", _): return (.image, at(2), at(3), nil)
        case ("text", _): return (.subtitles, at(2), at(3), nil)
        case ("tracker", _): return (.tracker, nil, nil, nil)
        default: return nil
        }
    }
}

/// One fault rule: which requests it takes (all given conditions must hold) and what it does
/// to their answers. As JSON (the admin API, `--fault`, `--faults-file`):
///
/// ```json
/// {"id": "flaky-segments", "route": "segment", "video": "6415818918101", "probability": 0.1, "times": 20,
///  "status": 503, "retry_after": 2}
/// ```
public struct FaultRule: Codable, Sendable, Equatable {
    // Which requests.
    public var id: String?
    public var route: RouteClass?
    public var account: String?
    /// A video id, reference id (`ref:…`) or uuid.
    public var video: String?
    /// A rendition uuid or name (`416x234`, `audio:en`, `subtitles:fr`).
    public var rendition: String?
    /// A substring of the path (`*` matches any run of characters).
    public var path: String?
    /// The share of matching requests it takes (default 1).
    public var probability: Double?
    /// How many requests it takes at most; then it stays listed and idle.
    public var times: Int?

    // What it does.
    /// Fixed added latency, and up to this much more at random.
    public var latencyMs: Int?
    public var latencyJitterMs: Int?
    /// The body sent at most this many bytes per second.
    public var bytesPerSecond: Int?
    /// This error status (with the Playback API's error array) answered instead of the request,
    /// which is not carried out.
    public var status: Int?
    /// With a 503: the Retry-After header (seconds).
    public var retryAfter: Int?
    /// The full length is announced, then the connection is closed after this many body bytes
    /// (0: right after the headers).
    public var cutAfterBytes: Int?
    /// The connection is closed before any answer (the request was carried out; its answer is lost).
    public var drop: Bool?
    /// Headers, then nothing: the body never comes (until the client gives up).
    public var stall: Bool?
    /// This many body bytes flipped at random places.
    public var corruptBytes: Int?

    /// A rule: which requests (every argument before `latencyMs`) and what it does to them.
    ///
    /// ```swift
    /// try server.app.faults.add(FaultRule(route: .segment, probability: 0.1, cutAfterBytes: 4_000))
    /// ```
    public init(id: String? = nil, route: RouteClass? = nil, account: String? = nil, video: String? = nil,
                rendition: String? = nil, path: String? = nil, probability: Double? = nil, times: Int? = nil,
                latencyMs: Int? = nil, latencyJitterMs: Int? = nil, bytesPerSecond: Int? = nil, status: Int? = nil,
                retryAfter: Int? = nil, cutAfterBytes: Int? = nil, drop: Bool? = nil, stall: Bool? = nil,
                corruptBytes: Int? = nil) {
        self.id = id
        self.route = route
        self.account = account
        self.video = video
        self.rendition = rendition
        self.path = path
        self.probability = probability
        self.times = times
        self.latencyMs = latencyMs
        self.latencyJitterMs = latencyJitterMs
        self.bytesPerSecond = bytesPerSecond
        self.status = status
        self.retryAfter = retryAfter
        self.cutAfterBytes = cutAfterBytes
        self.drop = drop
        self.stall = stall
        self.corruptBytes = corruptBytes
    }

    enum CodingKeys: String, CodingKey {
        case id, route, account, video, rendition, path, probability, times, status, drop, stall
        case latencyMs = "latency_ms", latencyJitterMs = "latency_jitter_ms", bytesPerSecond = "bytes_per_second"
        case retryAfter = "retry_after", cutAfterBytes = "cut_after_bytes", corruptBytes = "corrupt_bytes"
    }

    /// Why the rule cannot be used, or nil.
    public var problem: String? {
        if let probability, !(0...1).contains(probability) { return "probability must be between 0 and 1" }
        if let times, times < 1 { return "times must be at least 1" }
        if let latencyMs, !(0...600_000).contains(latencyMs) { return "latency_ms must be 0-600000" }
        if let latencyJitterMs, !(0...600_000).contains(latencyJitterMs) { return "latency_jitter_ms must be 0-600000" }
        if let bytesPerSecond, bytesPerSecond < 1 { return "bytes_per_second must be at least 1" }
        if let status, !(400...599).contains(status) { return "status must be a 4xx or 5xx" }
        if let retryAfter, retryAfter < 0 { return "retry_after must not be negative" }
        if let cutAfterBytes, cutAfterBytes < 0 { return "cut_after_bytes must not be negative" }
        if let corruptBytes, corruptBytes < 1 { return "corrupt_bytes must be at least 1" }
        if let id, id.isEmpty || id.count > 64 || id.contains("/") { return "id must be 1-64 characters without /" }
        if effects.isEmpty {
            return "a rule needs an effect: latency_ms, bytes_per_second, status, cut_after_bytes, drop, stall or corrupt_bytes"
        }
        return nil
    }

    /// Whether `path` (with its classification) is one this rule aims at; `videoIDs` are the
    /// id, reference and uuid of the video the path names, `renditionNames` the uuid and names
    /// of its rendition.
    func matches(path: String, route: RouteClass, account: String?, videoIDs: Set<String>, renditionNames: Set<String>) -> Bool {
        if let wanted = self.route, wanted != route { return false }
        if let wanted = self.account, wanted != account { return false }
        if let wanted = video, !videoIDs.contains(wanted) { return false }
        if let wanted = rendition, !renditionNames.contains(wanted) { return false }
        if let pattern = self.path, !FaultRule.path(path, contains: pattern) { return false }
        return true
    }

    /// Whether `path` contains `pattern`, where `*` in the pattern matches any run of characters.
    static func path(_ path: String, contains pattern: String) -> Bool {
        let pieces = pattern.split(separator: "*", omittingEmptySubsequences: true)
        var rest = path[...]
        for piece in pieces {
            guard let found = rest.range(of: piece) else { return false }
            rest = rest[found.upperBound...]
        }
        return true
    }
}
