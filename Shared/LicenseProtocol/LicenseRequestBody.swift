import Foundation

/// The license request's JSON body, as the real key servers take it.
public struct LicenseRequestBody: Sendable, Equatable {
    /// `publisher_id` (ignored by the mock).
    public var publisherID: String
    /// `application_id` (ignored by the mock).
    public var applicationID: String
    /// `key_id`: empty, or the content key id.
    public var keyID: String
    /// `server_playback_context`: the SPC bytes (base64 on the wire).
    public var serverPlaybackContext: [UInt8]

    /// Creates a body.
    public init(publisherID: String = "", applicationID: String = "", keyID: String = "", serverPlaybackContext: [UInt8]) {
        self.publisherID = publisherID
        self.applicationID = applicationID
        self.keyID = keyID
        self.serverPlaybackContext = serverPlaybackContext
    }

    struct Wire: Codable, Equatable {
        var publisher_id: String?
        var application_id: String?
        var key_id: String?
        var server_playback_context: String
    }

    /// The JSON bytes.
    public func encoded() -> [UInt8] {
        let wire = Wire(publisher_id: publisherID, application_id: applicationID, key_id: keyID,
                        server_playback_context: Data(serverPlaybackContext).base64EncodedString())
        return (try? ProtocolJSON.encode(wire)) ?? []
    }

    /// Parses a body; the SPC must be standard base64 (whitespace and missing padding tolerated).
    /// Throws `invalidRequestBody` or `invalidBase64`.
    public init(parsing bytes: [UInt8]) throws(LicenseProtocolError) {
        let wire: Wire
        if let fast = Wire(plain: bytes) { wire = fast } else {
            do { wire = try JSONDecoder().decode(Wire.self, from: Data(bytes)) } catch {
                throw LicenseProtocolError(.invalidRequestBody, "the body is not a JSON object with a string server_playback_context", underlying: error)
            }
        }
        // Base64 is ASCII: filter bytes, not Characters (grapheme breaking is slow).
        func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
        var text = Array(wire.server_playback_context.utf8)
        if text.contains(where: isWhitespace) { text.removeAll(where: isWhitespace) }
        if text.count % 4 != 0 { text += Array(repeating: UInt8(ascii: "="), count: 4 - text.count % 4) }
        guard !text.isEmpty, let spc = Data(base64Encoded: Data(text)) else {
            throw LicenseProtocolError(.invalidBase64, "server_playback_context is not base64")
        }
        self.init(publisherID: wire.publisher_id ?? "", applicationID: wire.application_id ?? "",
                  keyID: wire.key_id ?? "", serverPlaybackContext: Array(spc))
    }
}

extension LicenseRequestBody.Wire {
    /// The body read without `JSONDecoder` (`PlainJSONObject`); nil when it needs `JSONDecoder`.
    init?(plain bytes: [UInt8]) {
        guard let object = PlainJSONObject(bytes), let spc = object.string("server_playback_context"),
              let publisher = object.optionalString("publisher_id"), let application = object.optionalString("application_id"),
              let key = object.optionalString("key_id")
        else { return nil }
        self.init(publisher_id: publisher, application_id: application, key_id: key, server_playback_context: spc)
    }
}
