import Foundation

/// A Dynamic Ingest request (`POST …/ingest-requests`, reference §3.1) as the mock runs it:
/// validated when it arrives, stored with its job as JSON, read back by the worker.
struct IngestRequest: Codable, Sendable, Equatable {
    struct TextTrack: Codable, Sendable, Equatable {
        var url: String
        var srclang: String
        var kind: String
        var label: String?
        var isDefault: Bool

        enum CodingKeys: String, CodingKey { case url, srclang, kind, label, isDefault = "default" }
    }

    /// The source (http, https or file URL).
    var masterURL: String
    /// The profile's name (resolved when the request arrives).
    var profile: String
    var priority: String
    var captureImages: Bool
    var posterURL: String?
    var thumbnailURL: String?
    var textTracks: [TextTrack]
    /// The callback URLs, the first 10 given.
    var callbacks: [String]

    /// What a request may carry at most (reference §3.1, §3.4).
    static let maxBodyCharacters = 25_000
    static let maxCallbacks = 10
    static let maxTextTracks = 100

    /// Validates a request body for `account` with the documented errors: the body, the
    /// source and image URLs (`file://` only under `allowedDirectories`), the profile, the text
    /// tracks and the callbacks.
    static func parse(_ body: [UInt8], defaultProfile: IngestProfile, allowedDirectories: [URL]) throws(CMSError) -> IngestRequest {
        guard body.count <= maxBodyCharacters else {
            throw CMSError(422, "INPUT_SIZE_EXCEEDED", "The request body has \(body.count) bytes; at most \(maxBodyCharacters) are accepted")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw CMSError(400, "BAD_REQUEST", "Unable to parse request body.")
        }
        for key in ["images", "audio_tracks", "transcriptions", "forensic_watermarking"] where object[key] != nil {
            throw CMSError(422, "UNPROCESSABLE_ENTITY", "\(key) is not supported by the mock; send master.url with poster, thumbnail and text_tracks")
        }
        let master = try field(object, "master", as: [String: Any].self)
        if master?["use_archived_master"] as? Bool == true {
            if master?["url"] != nil { throw CMSError(400, "AMBIGUOUS_REQUEST", "master.url and master.use_archived_master cannot be sent together") }
            throw CMSError(400, "NO_SOURCE", "The mock keeps no archived master: send master.url")
        }
        guard let masterURL = try field(master ?? [:], "url", as: String.self, path: ".master.url") else {
            throw CMSError(400, "NO_SOURCE", "master.url is required: the mock ingests a source (adding only images or text tracks is not supported)")
        }
        try checkSource(masterURL, field: "master.url", allowedDirectories: allowedDirectories)
        let profile: IngestProfile
        if let name = try field(object, "profile", as: String.self) {
            guard let named = IngestProfile.named(name) else {
                throw CMSError(400, "PROFILE", "Unable to find profile by name. (\(name); the mock's are \(IngestProfile.standard.map(\.name).joined(separator: ", ")))")
            }
            profile = named
        } else {
            profile = defaultProfile
        }
        let priority = try field(object, "priority", as: String.self) ?? "normal"
        guard ["normal", "low"].contains(priority) else { throw CMSError(422, "UNPROCESSABLE_ENTITY", "priority must be normal or low, not \(priority)") }
        var images: [String: String] = [:]
        for label in ["poster", "thumbnail"] {
            guard let image = try field(object, label, as: [String: Any].self) else { continue }
            guard let url = try field(image, "url", as: String.self, path: ".\(label).url") else {
                throw CMSError(422, "UNPROCESSABLE_ENTITY", "\(label).url is required")
            }
            try checkSource(url, field: "\(label).url", allowedDirectories: allowedDirectories)
            images[label] = url
        }
        let capture = try field(object, "capture-images", as: Bool.self)
        if capture == true, !images.isEmpty {
            throw CMSError(422, "CONSTRAINT_VIOLATION", "capture-images cannot be true when a poster or thumbnail is supplied")
        }
        let tracks = try field(object, "text_tracks", as: [Any].self) ?? []
        guard tracks.count <= maxTextTracks else {
            throw CMSError(422, "EXCEED_MAXIMUM_VTT_SOURCES", "At most \(maxTextTracks) text tracks per request")
        }
        var textTracks: [TextTrack] = []
        for (index, item) in tracks.enumerated() {
            guard let track = item as? [String: Any] else { throw CMSError(422, "TYPE_VIOLATION", ".text_tracks[\(index)] must be of type Object") }
            let path = ".text_tracks[\(index)]"
            guard let url = try field(track, "url", as: String.self, path: "\(path).url"),
                  let srclang = try field(track, "srclang", as: String.self, path: "\(path).srclang"), !srclang.isEmpty else {
                throw CMSError(422, "UNPROCESSABLE_ENTITY", "\(path): url and srclang are required")
            }
            guard srclang.range(of: #"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"#, options: .regularExpression) != nil else {
                throw CMSError(422, "UNPROCESSABLE_ENTITY", "\(path).srclang '\(srclang)' is not a BCP-47 language tag")
            }
            guard !textTracks.contains(where: { $0.srclang == srclang }) else {
                throw CMSError(422, "UNPROCESSABLE_ENTITY", "\(path): a second text track in '\(srclang)' (the mock keeps one per language)")
            }
            let kind = try field(track, "kind", as: String.self, path: "\(path).kind") ?? "captions"
            guard CatalogVideo.textTrackKinds.contains(kind) else {
                throw CMSError(422, "INVALID_VTT_KIND", "\(path).kind '\(kind)' is not one of \(CatalogVideo.textTrackKinds.joined(separator: ", "))")
            }
            try checkSource(url, field: "\(path).url", allowedDirectories: allowedDirectories)
            textTracks.append(TextTrack(url: url, srclang: srclang, kind: kind, label: try field(track, "label", as: String.self, path: "\(path).label"),
                                        isDefault: try field(track, "default", as: Bool.self, path: "\(path).default") ?? false))
        }
        let callbackList = try field(object, "callbacks", as: [Any].self) ?? []
        var callbacks: [String] = []
        for (index, item) in callbackList.prefix(maxCallbacks).enumerated() {
            guard let url = item as? String, let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
                  parsed.host?.isEmpty == false else {
                throw CMSError(400, "BAD_CALLBACKS", "callbacks[\(index)] is not an http(s) URL")
            }
            guard !url.hasSuffix("/") else { throw CMSError(400, "BAD_CALLBACKS", "callbacks[\(index)] ends in '/': \(url)") }
            callbacks.append(url)
        }
        return IngestRequest(masterURL: masterURL, profile: profile.name, priority: priority, captureImages: capture ?? images.isEmpty,
                             posterURL: images["poster"], thumbnailURL: images["thumbnail"], textTracks: textTracks, callbacks: callbacks)
    }

    /// A field of `object` as `T`, nil when absent or null; another type is 422 `TYPE_VIOLATION`.
    private static func field<T>(_ object: [String: Any], _ key: String, as type: T.Type, path: String? = nil) throws(CMSError) -> T? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let typed = value as? T else {
            let name = T.self == String.self ? "String" : T.self == Bool.self ? "Boolean" : T.self == [Any].self ? "Array" : "Object"
            throw CMSError(422, "TYPE_VIOLATION", "\(path ?? ".\(key)") must be of type \(name)")
        }
        return typed
    }

    /// Refuses a source the mock will not read: not a URL (`MALFORMED_SOURCE_URL`), another
    /// scheme than http, https and file, or a file outside every `--ingest-allow-dir`
    /// (`BAD_PROTOCOL_SOURCE_URL`, saying which flag to set).
    static func checkSource(_ text: String, field: String, allowedDirectories: [URL]) throws(CMSError) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw CMSError(422, "MALFORMED_SOURCE_URL", "\(field) '\(text)' is not a URL")
        }
        switch scheme {
        case "http", "https":
            guard url.host?.isEmpty == false else { throw CMSError(422, "MALFORMED_SOURCE_URL", "\(field) '\(text)' has no host") }
        case "file":
            guard url.host == nil || url.host == "" || url.host == "localhost" else {
                throw CMSError(422, "MALFORMED_SOURCE_URL", "\(field) '\(text)': a file URL names a local path (file:///path)")
            }
            guard !allowedDirectories.isEmpty else {
                throw CMSError(422, "BAD_PROTOCOL_SOURCE_URL",
                               "\(field): file:// sources are off; start mock-backend with --ingest-allow-dir DIR to ingest files under DIR")
            }
            guard allowedPath(url.path, allowedDirectories: allowedDirectories) != nil else {
                throw CMSError(422, "BAD_PROTOCOL_SOURCE_URL",
                               "\(field): \(url.path) is not under an --ingest-allow-dir folder (\(allowedDirectories.map(\.path).joined(separator: ", "))); add its folder with --ingest-allow-dir")
            }
        default:
            throw CMSError(422, "BAD_PROTOCOL_SOURCE_URL", "\(field): the mock reads http://, https:// and file:// sources, not \(scheme)://")
        }
    }

    /// `path` with its symbolic links resolved, when it lies inside one of `allowedDirectories`
    /// (also resolved); nil otherwise. `..` and links cannot lead out.
    static func allowedPath(_ path: String, allowedDirectories: [URL]) -> String? {
        let resolved = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        for directory in allowedDirectories {
            let root = directory.standardizedFileURL.resolvingSymlinksInPath().path
            if resolved.hasPrefix(root.hasSuffix("/") ? root : root + "/") { return resolved }
        }
        return nil
    }
}
