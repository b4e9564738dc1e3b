import Foundation
import LicenseProtocol
import Testing

@Suite("LicenseProtocol: X-BC-CRT-CONFIG profiles")
struct LicenseProfileTests {
    static func header(_ json: String) -> String { Data(json.utf8).base64EncodedString() }
    static let end = Date(timeIntervalSince1970: 1_796_083_200)  // 2026-12-01T00:00:00Z

    @Test("purchase and rental in the reference shapes; playDuration as number or numeric string")
    func referenceShapes() throws {
        #expect(try LicenseProfile(headerValue: Self.header(#"{"profile":{"purchase":{}},"storeLicense":true}"#)).terms == .purchase)
        let rental = try LicenseProfile(headerValue: Self.header(
            #"{"profile":{"rental":{"absoluteExpiration":"2026-12-01T00:00:00Z","playDuration":86400000}},"storeLicense":true}"#))
        #expect(rental.terms == .rental(absoluteExpiration: Self.end, playDuration: 86400))
        let stringDuration = try LicenseProfile(headerValue: Self.header(
            #"{"profile":{"rental":{"absoluteExpiration":"2026-12-01T00:00:00Z","playDuration":"86400000"}},"storeLicense":true}"#))
        #expect(stringDuration.terms == rental.terms)
        let noDuration = try LicenseProfile(headerValue: Self.header(#"{"profile":{"rental":{"absoluteExpiration":"2026-12-01T00:00:00.000Z"}}}"#))
        #expect(noDuration.terms == .rental(absoluteExpiration: Self.end, playDuration: nil))
        #expect(noDuration.storeLicense)
    }

    @Test("headerValue round-trips")
    func roundTrip() throws {
        for profile in [LicenseProfile(.purchase), LicenseProfile(.rental(absoluteExpiration: Self.end, playDuration: 3600)),
                        LicenseProfile(.rental(absoluteExpiration: Self.end, playDuration: nil), storeLicense: false)] {
            #expect(try LicenseProfile(headerValue: profile.headerValue) == profile)
        }
    }

    @Test("a bitrate member is reported so renewals can refuse it")
    func bitrate() throws {
        let profile = try LicenseProfile(headerValue: Self.header(#"{"profile":{"purchase":{}},"bitrate":800000}"#))
        #expect(profile.bitrate == 800000)
    }

    @Test("malformed profiles are refused", arguments: [
        "not base64 at all!",
        Data("{".utf8).base64EncodedString(),
        Data("[1]".utf8).base64EncodedString(),
        Data(#"{"storeLicense":true}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"purchase":{},"rental":{"absoluteExpiration":"2026-12-01T00:00:00Z"}}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"purchase":true}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"rental":{}}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"rental":{"absoluteExpiration":"tomorrow"}}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"rental":{"absoluteExpiration":"2026-12-01T00:00:00Z","playDuration":0}}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"rental":{"absoluteExpiration":"2026-12-01T00:00:00Z","playDuration":-5}}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"rental":{"absoluteExpiration":"2026-12-01T00:00:00Z","playDuration":"soon"}}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"rental":{"absoluteExpiration":"2026-12-01T00:00:00Z","playDuration":true}}}"#.utf8).base64EncodedString(),
        Data(#"{"profile":{"purchase":{}},"storeLicense":"yes"}"#.utf8).base64EncodedString(),
    ])
    func malformed(value: String) {
        do {
            _ = try LicenseProfile(headerValue: value)
            Issue.record("accepted \(value)")
        } catch {
            #expect(error.code == .invalidRentalProfile)
        }
    }
}
