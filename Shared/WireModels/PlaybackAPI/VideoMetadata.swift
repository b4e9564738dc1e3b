/// An image rendition in `poster_sources` / `thumbnail_sources`; width and height are omitted when nil.
public struct ImageSource: Codable, Sendable, Equatable {
    /// Image URL.
    public var src: String
    /// Width in pixels, if known.
    public var width: Int?
    /// Height in pixels, if known.
    public var height: Int?

    /// Creates an image source.
    public init(src: String, width: Int? = nil, height: Int? = nil) {
        self.src = src
        self.width = width
        self.height = height
    }
}

/// A video's related link (`{"text": …, "url": …}`).
public struct Link: Codable, Sendable, Equatable {
    /// Link text.
    public var text: String
    /// Link target.
    public var url: String

    /// Creates a link.
    public init(text: String, url: String) {
        self.text = text
        self.url = url
    }
}

/// A cue point on a video's timeline.
public struct CuePoint: Codable, Sendable, Equatable {
    /// The cue point id.
    public var id: String
    /// Its name.
    public var name: String
    /// `AD`, `CODE`, …
    public var type: String
    /// Position in **seconds** from the start.
    public var time: Double
    /// Free-form metadata, or nil (encoded as `null`).
    public var metadata: String?
    /// Whether playback must stop at the cue point.
    public var forceStop: Bool

    /// Creates a cue point.
    public init(id: String, name: String, type: String, time: Double, metadata: String? = nil, forceStop: Bool = false) {
        self.id = id
        self.name = name
        self.type = type
        self.time = time
        self.metadata = metadata
        self.forceStop = forceStop
    }

    enum CodingKeys: String, CodingKey {
        case id, name, type, time, metadata
        case forceStop = "force_stop"
    }

    /// Decodes a cue point; an absent `force_stop` reads as false.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        type = try container.decode(String.self, forKey: .type)
        time = try container.decode(Double.self, forKey: .time)
        metadata = try container.decodeIfPresent(String.self, forKey: .metadata)
        forceStop = try container.decodeIfPresent(Bool.self, forKey: .forceStop) ?? false
    }

    /// Encodes every key, writing `null` for nil metadata.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(type, forKey: .type)
        try container.encode(time, forKey: .time)
        try container.encodeOrNull(metadata, forKey: .metadata)
        try container.encode(forceStop, forKey: .forceStop)
    }
}
