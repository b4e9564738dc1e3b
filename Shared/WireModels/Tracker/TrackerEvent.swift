public import Foundation

/// One analytics event as `POST /tracker` takes it (the body is a JSON array of these):
///
/// ```json
/// {"id": "0b6f…", "event": "play_started", "video_id": "6415818918101", "account_id": "6415818918001",
///  "time": "2026-11-25T17:00:00.000Z", "position": 12.5, "device_id": "…", "token": "…", "session": "…",
///  "details": {"bitrate": 1000000}}
/// ```
///
/// `id` is made by the client and unique per event: the collector stores an id once, so a batch
/// sent again after a lost answer adds nothing. `time` is ISO 8601 (the Playback API's form).
public struct TrackerEvent: Codable, Sendable, Equatable {
    /// The client's unique id of the event (1-128 characters).
    public var id: String
    /// What happened: lower-case letters, digits and `_`, starting with a letter (at most 64).
    public var event: String
    /// The video it is about.
    public var videoID: String
    /// The video's account.
    public var accountID: String
    /// When it happened on the client.
    public var time: Date
    /// Where playback stood, in seconds (playback events).
    public var position: Double?
    /// The client device.
    public var deviceID: String?
    /// The client's name for the downloaded video (the SDK's offline video token).
    public var token: String?
    /// The playback session the event belongs to.
    public var session: String?
    /// Anything else, as the client likes.
    public var details: [String: JSONValue]?

    /// An event.
    public init(id: String, event: String, videoID: String, accountID: String, time: Date, position: Double? = nil,
                deviceID: String? = nil, token: String? = nil, session: String? = nil, details: [String: JSONValue]? = nil) {
        self.id = id
        self.event = event
        self.videoID = videoID
        self.accountID = accountID
        self.time = time
        self.position = position
        self.deviceID = deviceID
        self.token = token
        self.session = session
        self.details = details
    }

    enum CodingKeys: String, CodingKey {
        case id, event, time, position, token, session, details
        case videoID = "video_id", accountID = "account_id", deviceID = "device_id"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        event = try container.decode(String.self, forKey: .event)
        videoID = try container.decode(String.self, forKey: .videoID)
        accountID = try container.decode(String.self, forKey: .accountID)
        time = try container.decodeWireDate(forKey: .time)
        position = try container.decodeIfPresent(Double.self, forKey: .position)
        deviceID = try container.decodeIfPresent(String.self, forKey: .deviceID)
        token = try container.decodeIfPresent(String.self, forKey: .token)
        session = try container.decodeIfPresent(String.self, forKey: .session)
        details = try container.decodeIfPresent([String: JSONValue].self, forKey: .details)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(event, forKey: .event)
        try container.encode(videoID, forKey: .videoID)
        try container.encode(accountID, forKey: .accountID)
        try container.encodeWireDate(time, forKey: .time)
        try container.encodeIfPresent(position, forKey: .position)
        try container.encodeIfPresent(deviceID, forKey: .deviceID)
        try container.encodeIfPresent(token, forKey: .token)
        try container.encodeIfPresent(session, forKey: .session)
        try container.encodeIfPresent(details, forKey: .details)
    }

    /// What is wrong with the event for the collector, in words; nil when it is acceptable.
    public var problem: String? {
        func text(_ value: String?, _ name: String, required: Bool) -> String? {
            guard let value else { return required ? "\(name) is required" : nil }
            return (1...128).contains(value.unicodeScalars.count) ? nil : "\(name) must be 1-128 characters"
        }
        if let problem = text(id, "id", required: true) ?? text(videoID, "video_id", required: true)
            ?? text(accountID, "account_id", required: true) ?? text(deviceID, "device_id", required: false)
            ?? text(token, "token", required: false) ?? text(session, "session", required: false) {
            return problem
        }
        let name = Array(event.utf8)
        let isName = (1...64).contains(name.count) && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(name[0])
            && name.allSatisfy { ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "_") }
        if !isName { return "event must be lower-case letters, digits and _, starting with a letter (at most 64)" }
        if let position, !(position.isFinite && position >= 0) { return "position must be a number of seconds, at least 0" }
        return nil
    }

    /// The most events one `POST /tracker` takes.
    public static let maximumBatch = 500
}

/// The collector's answer to a batch: how many events it was sent, and how many of them it
/// had not stored before (the others were duplicates of ids it already had).
public struct TrackerReceipt: Codable, Sendable, Equatable {
    /// Events in the batch.
    public var received: Int
    /// Events stored now for the first time.
    public var new: Int
    /// Events whose id was already stored (or came twice in the batch).
    public var duplicates: Int

    /// A receipt.
    public init(received: Int, new: Int) {
        self.received = received
        self.new = new
        duplicates = received - new
    }
}
