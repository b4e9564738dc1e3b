import CurlTransfer
import Foundation
import LicenseProtocol
@testable import OfflineSDK
import Testing
import WireModels

/// What a ported app reads of an error: `localizedDescription` in its alerts, `(error as NSError).code`
/// and `.domain` in its branches (the sample's expired-license alert matches the code).
@Suite("Errors as an app reads them")
struct ErrorReportingTests {
    static let codes: [(OfflineVideoError.Code, Int)] = [
        (.invalidParameter, 69300), (.unsupported, 69301), (.downloadFailure, 69302), (.expiredLicense, 69303),
        (.invalidLicense, 69304), (.storageFailure, 69305), (.applicationCertificateRequestFailed, 69401),
        (.contentKeyRequestFailed, 69402), (.contentKeyGenerationFailed, 69403), (.noKeyRequestURLForRendition, 69404),
    ]

    @Test("every OfflineVideoError code: the message as localizedDescription, the reference's number as NSError.code, one domain")
    func offlineVideoErrorCodes() {
        for (code, number) in Self.codes {
            let error: any Error = OfflineVideoError(code, .other, "Message for \(number)")
            let ns = error as NSError
            #expect(error.localizedDescription == "Message for \(number)")
            #expect(ns.code == number)
            #expect(ns.domain == "OfflineSDK.OfflineVideoManager")
            #expect(ns.domain == OfflineVideoError.errorDomain)
            #expect(ns.localizedDescription == "Message for \(number)")
            #expect(ns.userInfo[OfflineVideoError.reasonUserInfoKey] as? String == "other")
        }
    }

    @Test("an expired license has a next step; the sample's code branch (69303) is taken")
    func expiredLicenseSuggestion() {
        let error: any Error = OfflineVideoError(.expiredLicense, .licenseExpired, "The rental ended")
        let ns = error as NSError
        var alert = "none"
        if ns.code == 69303 { alert = "expired: \(error.localizedDescription)" }
        #expect(alert == "expired: The rental ended")
        #expect((error as? any LocalizedError)?.recoverySuggestion?.contains("renewFairPlayLicense") == true)
        #expect(ns.localizedRecoverySuggestion?.contains("renewFairPlayLicense") == true)
        let final: any Error = OfflineVideoError(.unsupported, .notEligible, "Not offline-enabled")
        #expect((final as NSError).localizedRecoverySuggestion == nil, "a final refusal offers no next step")
    }

    @Test("the HTTP status and the underlying error reach userInfo")
    func userInfo() {
        let underlying = TransferError(.timedOut, "no answer in 30 s")
        let ns = OfflineVideoError(.contentKeyRequestFailed, .network, "License server unreachable", httpStatus: 503,
                                   underlying: underlying) as NSError
        #expect(ns.userInfo[OfflineVideoError.httpStatusUserInfoKey] as? Int == 503)
        let inner = ns.userInfo[NSUnderlyingErrorKey] as? NSError
        #expect(inner?.domain == "CurlTransfer.TransferError")
        #expect(inner?.code == 4)
        #expect(inner?.localizedDescription == "no answer in 30 s")
    }

    @Test("the SDK's other public errors: message, stable domain, stable number per kind")
    func otherErrors() {
        let transfer: [(TransferError.Code, Int)] = [
            (.invalidURL, 1), (.couldNotResolveHost, 2), (.couldNotConnect, 3), (.timedOut, 4), (.cancelled, 5),
            (.connectionLost, 6), (.tooManyRedirects, 7), (.lengthMismatch, 8), (.contentMismatch, 9), (.writeFailed, 10),
            (.diskFull, 11), (.untrustedCertificate, 12), (.tlsFailed, 13), (.http(404), 404), (.other(56), 1056),
        ]
        for (code, number) in transfer {
            let error: any Error = TransferError(code, "transfer \(code)")
            #expect(error.localizedDescription == "transfer \(code)")
            #expect((error as NSError).code == number)
            #expect((error as NSError).domain == "CurlTransfer.TransferError")
        }
        #expect((TransferError(.untrustedCertificate, "x") as NSError).localizedRecoverySuggestion?.contains("trustedCAFile") == true)

        let service: [(PlaybackServiceError.Code, Int)] = [(.transport, 1), (.http, 2), (.decoding, 3), (.invalidArgument, 4)]
        for (code, number) in service {
            let error: any Error = PlaybackServiceError(code: code, status: nil, errors: [], message: "service \(code)")
            #expect(error.localizedDescription == "service \(code)")
            #expect((error as NSError).code == number)
            #expect((error as NSError).domain == "OfflineSDK.PlaybackService")
        }
        let refused: any Error = PlaybackServiceError(code: .http, status: 404, errors: [APIError(errorCode: "RESOURCE_NOT_FOUND")],
                                                      message: "Video 1 was not found")
        #expect(refused.localizedDescription == "Video 1 was not found (RESOURCE_NOT_FOUND)")
        #expect((refused as NSError).userInfo["OfflineSDKHTTPStatus"] as? Int == 404)

        let license: [(LicenseProtocolError.Code, Int)] = [
            (.malformed, 1), (.authenticationFailed, 2), (.certificateMismatch, 3), (.invalidCertificate, 4),
            (.invalidPayload, 5), (.responseMismatch, 6), (.invalidRentalProfile, 7), (.invalidRequestBody, 8), (.invalidBase64, 9),
        ]
        for (code, number) in license {
            let error: any Error = LicenseProtocolError(code, "license \(code)")
            #expect(error.localizedDescription == "license \(code)")
            #expect((error as NSError).code == number)
            #expect((error as NSError).domain == "LicenseProtocol.LicenseProtocolError")
        }
        let tokens: [(URLTokenError.Code, Int)] = [(.malformed, 1), (.expired, 2), (.forged, 3)]
        for (code, number) in tokens {
            let error: any Error = URLTokenError(code, "token \(code)")
            #expect(error.localizedDescription == "token \(code)")
            #expect((error as NSError).code == number)
            #expect((error as NSError).domain == "WireModels.URLTokenError")
        }
        let parse: any Error = HLSParseError(line: 3, message: "EXTINF is not followed by a URI line")
        #expect(parse.localizedDescription == "line 3: EXTINF is not followed by a URI line")
        #expect((parse as NSError).domain == "WireModels.HLSParseError" && (parse as NSError).code == 1)
        #expect((parse as NSError).userInfo["line"] as? Int == 3)
    }
}
