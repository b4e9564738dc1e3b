import Foundation
@testable import LicenseProtocol
import TestKit
import Testing

/// The fast path of the license request's two JSON objects (`PlainJSONObject`): it reads the
/// bodies clients send, and wherever it answers, `JSONDecoder` gives the same value; what it
/// declines goes to `JSONDecoder`, so no body is read differently than before.
@Suite("Plain JSON objects: the license path's fast reading")
struct PlainJSONObjectTests {
    static let body = #"{"publisher_id":"6415818918001","application_id":"","key_id":"kid-1","server_playback_context":"TVNQQwEAAAA="}"#
    static let payload = #"{"account_id":"6415818918001","content_key_id":"kid-1","created_at":1795881600123,"device_id":"device-1","kind":"acquire","license_id":null,"nonce":"AAECAwQFBgcICQoLDA0ODw==","version":1}"#

    /// What JSONDecoder makes of `text`, nil when it throws.
    static func decoded<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> T? { try? JSONDecoder().decode(type, from: Data(bytes)) }

    @Test("what clients send is read without JSONDecoder, to the same values")
    func clientsBodies() throws {
        let body = try #require(LicenseRequestBody.Wire(plain: Array(Self.body.utf8)))
        #expect(body == Self.decoded(LicenseRequestBody.Wire.self, Array(Self.body.utf8)))
        #expect(body.server_playback_context == "TVNQQwEAAAA=" && body.key_id == "kid-1")
        let payload = try #require(ServerPlaybackContext.Payload(plain: Array(Self.payload.utf8)))
        #expect(payload == Self.decoded(ServerPlaybackContext.Payload.self, Array(Self.payload.utf8)))
        #expect(payload.created_at == 1_795_881_600_123 && payload.license_id == nil && payload.kind == .acquire)

        // What this package's own client writes (JSONEncoder, sorted keys) takes the fast path too.
        let written = LicenseRequestBody(publisherID: "p", keyID: "k", serverPlaybackContext: Array(repeating: 7, count: 300)).encoded()
        #expect(LicenseRequestBody.Wire(plain: written) != nil)
        let context = ServerPlaybackContext(kind: .renew, accountID: "a", contentKeyID: "k", licenseID: "l-1", deviceID: "d",
                                            nonce: Array(repeating: 1, count: 16), createdAt: Date(timeIntervalSince1970: 1_795_881_600.5),
                                            clientKey: [])
        let plain = try #require(ServerPlaybackContext.Payload(plain: try context.payloadBytes()))
        #expect(plain.license_id == "l-1" && plain.kind == .renew && plain.created_at == 1_795_881_600_500)
    }

    @Test("whitespace between tokens, members in any order, optional members missing or null: still the fast path")
    func layout() {
        let texts = [
            " {\n\t\"server_playback_context\" : \"QUJD\" ,\r\n \"key_id\": null } \n",
            #"{"server_playback_context":"QUJD"}"#,
            #"{"unknown":123,"server_playback_context":"QUJD","other":null,"more":"x"}"#,
        ]
        for text in texts {
            let bytes = Array(text.utf8)
            let plain = LicenseRequestBody.Wire(plain: bytes)
            #expect(plain != nil, "\(text)")
            #expect(plain == Self.decoded(LicenseRequestBody.Wire.self, bytes), "\(text)")
        }
    }

    @Test("what could be read two ways goes to JSONDecoder", arguments: [
        #"{"server_playback_context":"QU\u004aD"}"#,          // an escape
        #"{"server_playback_context":"QUJD\/"}"#,             // an escaped slash
        #"{"server_playback_context":"QUJDé"}"#,              // not ASCII
        #"{"server_playback_context":"QUJD","key_id":true}"#, // a boolean
        #"{"server_playback_context":"QUJD","x":{"y":1}}"#,  // a nested value
        #"{"server_playback_context":"QUJD","x":[1,2]}"#,    // an array
        #"{"server_playback_context":"QUJD","x":1.5}"#,      // a fraction
        #"{"server_playback_context":"QUJD","x":1e3}"#,      // an exponent
        #"{"server_playback_context":"QUJD","x":0123}"#,     // a leading zero
        #"{"server_playback_context":"QUJD","x":1234567890123456789}"#,  // 19 digits
        #"{"server_playback_context":"QUJD","server_playback_context":"REVG"}"#,  // a name twice
        #"{"server_playback_context":"QUJD",}"#,              // a trailing comma
        #"{"server_playback_context":"QUJD"} x"#,             // something after the object
        #"{"server_playback_context":"QUJD""#,                // no closing brace
        #"["QUJD"]"#,                                         // not an object
        "\u{FEFF}{\"server_playback_context\":\"QUJD\"}",     // a byte-order mark
        #"{"server_playback_context":nul}"#,                  // a broken null
        #"{"server_playback_context":null}"#,                 // the required member null
        #"{"server_playback_context":12}"#,                   // the required member a number
        #"{"key_id":"k"}"#,                                   // the required member missing
        "",
    ])
    func declined(_ text: String) {
        #expect(LicenseRequestBody.Wire(plain: Array(text.utf8)) == nil)
    }

    @Test("the payload's members: unknown kinds, fractions and members of the wrong type go to JSONDecoder; plain integers do not", arguments: [
        ("kind", #""purchase""#, false), ("version", "1.0", false), ("created_at", "\"12\"", false), ("license_id", "7", false),
        ("nonce", "null", false), ("version", "-0", true), ("created_at", "-12", true), ("version", "99999999999999999", true),
    ])
    func payloadMembers(_ name: String, _ value: String, _ readFast: Bool) throws {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(Self.payload.utf8)) as? [String: Any])
        object[name] = nil
        var text = String(decoding: try JSONSerialization.data(withJSONObject: object, options: .sortedKeys), as: UTF8.self)
        text.removeLast()
        text += #","\#(name)":\#(value)}"#
        let bytes = Array(text.utf8)
        let plain = ServerPlaybackContext.Payload(plain: bytes)
        let decoded = Self.decoded(ServerPlaybackContext.Payload.self, bytes)
        #expect((plain != nil) == readFast, "\(text)")
        // Where the fast path answers, its value is JSONDecoder's.
        if let plain { #expect(plain == decoded, "\(text)") }
    }

    @Test("damaged bodies and payloads: wherever the fast path answers, JSONDecoder answers the same")
    func damaged() {
        var generator = SplitMix(state: 2027)
        let pieces: [[UInt8]] = [#"""#, "\\", "{", "}", "[", ",", ":", " ", "\n", "null", "-", "0", "1", "9", ".", "e", "true", "é", "\u{0}", "\"x\":1"]
            .map { Array($0.utf8) }
        var answered = 0
        var disagreements: [String] = []
        for (index, original) in [Self.body, Self.payload].map({ Array($0.utf8) }).enumerated() {
            for _ in 0..<5_000 {
                var bytes = original
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let at = Int.random(in: 0...bytes.count, using: &generator)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0 where at < bytes.count: bytes.remove(at: at)
                    case 1: bytes.insert(contentsOf: pieces.randomElement(using: &generator)!, at: at)
                    default:
                        if at < bytes.count { bytes[at] = pieces.randomElement(using: &generator)![0] }
                    }
                }
                if index == 0, let plain = LicenseRequestBody.Wire(plain: bytes) {
                    answered += 1
                    if plain != Self.decoded(LicenseRequestBody.Wire.self, bytes) { disagreements.append(String(decoding: bytes, as: UTF8.self)) }
                }
                if index == 1, let plain = ServerPlaybackContext.Payload(plain: bytes) {
                    answered += 1
                    if plain != Self.decoded(ServerPlaybackContext.Payload.self, bytes) { disagreements.append(String(decoding: bytes, as: UTF8.self)) }
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        #expect(answered > 1_000, "the damage left too few bodies the fast path reads: \(answered)")
    }
}
