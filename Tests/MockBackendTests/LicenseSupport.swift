import Foundation
import LicenseProtocol
import MicroHTTP
import Testing
import WireModels
@testable import MockBackend

/// A license client for route tests: builds real SPCs with LicenseProtocol's client side and
/// posts them to `MockBackendApp.handle`.
struct LicenseTestClient {
    let app: MockBackendApp
    let certificate: ApplicationCertificate
    let keyRequestURL: String
    let keyID: String
    let videoID: String

    init(_ app: MockBackendApp, videoID: String = Fixture.fairPlayVideo) throws {
        self.app = app
        self.videoID = videoID
        let source = try #require(try app.video(videoID).sources.first?.fairPlay)
        let certificateResponse = try app.get(url: try #require(source.certificateURL))
        try #require(certificateResponse.status == 200)
        certificate = try ApplicationCertificate(derEncoded: try certificateResponse.bytes())
        keyRequestURL = try #require(source.keyRequestURL)
        keyID = try #require(pathSegments(ofURL: keyRequestURL).last)
    }

    /// The headers of an offline request with `profile`.
    static func offline(_ profile: LicenseProfile) -> [(String, String)] {
        [("X-BOLT-OFFLINE-LICENSE", "true"), ("X-BC-CRT-CONFIG", profile.headerValue)]
    }

    func makeRequest(_ kind: LicenseRequestKind = .acquire, licenseID: String? = nil, device: String = "device-1",
                     certificate: ApplicationCertificate? = nil, keyID: String? = nil, now: Date? = nil) throws -> PendingLicenseRequest {
        try LicenseClient.makeRequest(kind, certificate: certificate ?? self.certificate, accountID: Fixture.northwind,
                                      contentKeyID: keyID ?? self.keyID, licenseID: licenseID, deviceID: device,
                                      now: now ?? app.clock.now())
    }

    /// Posts to the key request URL of a freshly fetched video, so its URL token is valid
    /// whatever the backend clock says.
    func post(_ body: [UInt8], headers: [(String, String)] = []) throws -> HTTPResponse {
        let url = try #require(try app.video(videoID).sources.first?.fairPlay?.keyRequestURL)
        return try app.request("POST", try app.target(of: url), headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    /// Sends a new SPC of `kind`; returns the request and the answer.
    @discardableResult
    func send(_ kind: LicenseRequestKind = .acquire, licenseID: String? = nil, device: String = "device-1",
              headers: [(String, String)] = LicenseTestClient.offline(LicenseProfile(.purchase)),
              token: String? = nil) throws -> (request: PendingLicenseRequest, response: HTTPResponse) {
        let request = try makeRequest(kind, licenseID: licenseID, device: device)
        var all = headers
        if let token { all.append(("BCOV-Auth", token)) }
        return (request, try post(request.body(), headers: all))
    }

    /// Sends and opens the CKC, requiring a 200.
    func license(_ kind: LicenseRequestKind = .acquire, licenseID: String? = nil, device: String = "device-1",
                 headers: [(String, String)] = LicenseTestClient.offline(LicenseProfile(.purchase)), token: String? = nil,
                 sourceLocation: SourceLocation = #_sourceLocation) throws -> License {
        let (request, response) = try send(kind, licenseID: licenseID, device: device, headers: headers, token: token)
        try #require(response.status == 200, "\(response.status) \(response.debugText)", sourceLocation: sourceLocation)
        #expect(response.headers["Content-Type"] == "application/octet-stream", sourceLocation: sourceLocation)
        return try request.open(try response.bytes())
    }
}
