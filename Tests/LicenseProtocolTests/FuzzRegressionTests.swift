import Foundation
@testable import LicenseProtocol
import Testing

/// Inputs the fuzz targets (Fuzz/, `make fuzz`) trapped on, or turned up while they were
/// written; each stays here with the behaviour that replaced the trap.
@Suite("Fuzzing regressions: LicenseProtocol")
struct LicenseProtocolFuzzRegressionTests {
    @Test("the X-BC-CRT-CONFIG the crt target crashed the backend with now parses (WireDate overflow)")
    func crtLongFraction() throws {
        // The crash input, after the target's mode byte '1' (JSON, base64-encoded by the target).
        let json = #"{"profile":{"rental":{"absoluteExpiration":"1025-12-01T00:00:00.1231536000000003+22:00","playD=uration":"3600001"}},"bitrate":1000000}"#
        let profile = try LicenseProfile(headerValue: Data(json.utf8).base64EncodedString())
        guard case let .rental(end, playDuration) = profile.terms else {
            Issue.record("not a rental: \(profile.terms)")
            return
        }
        #expect(abs(end.timeIntervalSince1970 - (-29_792_527_200 + 0.1231536)) < 0.000_1)  // 1025-11-30T02:00:00.1231536Z
        #expect(playDuration == nil)
        #expect(profile.bitrate == 1_000_000)
    }

    static func terms(_ member: String, _ value: String) -> Data {
        var members = [
            #""version":1"#, #""kind":"rental""#, #""license_id":"lic-1""#, #""account_id":"6415818918001""#,
            #""video_id":"6415818918104""#, #""content_key_id":"key-1""#, #""device_id":"device-A""#,
            #""issued_at":1790000000000"#, #""rental_end":1792592000000"#, #""play_duration":21600000"#,
            #""expires_at":1792592000000"#, #""persistable":true"#, #""request_nonce":"AAECAwQFBgcICQoLDA0ODw==""#,
        ].filter { !$0.hasPrefix("\"\(member)\"") }
        members.append("\"\(member)\":\(value)")
        return Data(("{" + members.joined(separator: ",") + "}").utf8)
    }

    @Test("terms with a time or play duration beyond ±8.64e15 ms are refused: writing them again trapped", arguments: [
        "issued_at", "rental_end", "first_play", "expires_at", "play_duration",
    ])
    func termsOutOfRange(member: String) throws {
        for value in ["9223372036854775807", "-9223372036854775808", "8640000000000001"] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(LicenseTerms.self, from: Self.terms(member, value)) }
        }
        // At the limit the terms decode, and encode (as the SDK stores them) and sign (as a CKC) again.
        let terms = try JSONDecoder().decode(LicenseTerms.self, from: Self.terms(member, "8640000000000000"))
        #expect(try JSONDecoder().decode(LicenseTerms.self, from: JSONEncoder().encode(terms)) == terms)
        #expect(try JSONDecoder().decode(LicenseTerms.self, from: Data(terms.jsonBytes())) == terms)
    }

    @Test("an SPC payload whose created_at is beyond ±8.64e15 ms is refused: the backend trapped formatting it")
    func spcCreatedAtOutOfRange() throws {
        let clientKey = Array(repeating: UInt8(4), count: 65)
        func payload(_ createdAt: String) -> [UInt8] {
            Array(#"{"account_id":"6415818918001","content_key_id":"key-1","created_at":\#(createdAt),"device_id":"device-A","kind":"acquire","nonce":"AAECAwQFBgcICQoLDA0ODw==","version":1}"#.utf8)
        }
        for value in ["9223372036854775807", "-9223372036854775808", "-8640000000000001"] {
            #expect(throws: LicenseProtocolError.self) { try ServerPlaybackContext(payload: payload(value), clientKey: clientKey) }
        }
        let context = try ServerPlaybackContext(payload: payload("-8640000000000000"), clientKey: clientKey)
        #expect(Milliseconds.from(context.createdAt) == -8_640_000_000_000_000)
    }
}
