import Foundation
import LicenseProtocol
import MockBackend
import Testing
import TestKit
import WireModels

/// The certificate and license endpoints over real HTTP: curl posts SPCs built with
/// LicenseProtocol's client side, openssl reads the certificate.
@Suite("Live license server (curl, openssl)")
struct LiveLicenseTests {
    @Test("openssl accepts the application certificate; curl gets a CKC the client opens; replays and big bodies are refused")
    func liveExchange() async throws {
        try await withLiveServer { server in
            let video = try await server.fetchVideo(Fixture.fairPlayVideo)
            let fairPlay = try #require(video.sources.first?.fairPlay)
            let certificateURL = try #require(fairPlay.certificateURL)
            let keyRequestURL = try #require(fairPlay.keyRequestURL)

            let certificateResponse = try await Curl.fetch(certificateURL)
            #expect(certificateResponse.status == 200)
            #expect(certificateResponse.header("Content-Type") == "application/pkix-cert")
            let scratch = try TemporaryDirectory()
            defer { scratch.remove() }
            let certificateFile = scratch.url.appendingPathComponent("app.cer")
            try Data(certificateResponse.body).write(to: certificateFile)
            let openssl = try await Run.process("/usr/bin/openssl", ["x509", "-inform", "DER", "-noout", "-text", "-in", certificateFile.path])
            #expect(openssl.exitCode == 0, "\(openssl.stderrText)")
            #expect(openssl.stdoutText.contains("Mock FairPlay Application Certificate \(Fixture.northwind)"))
            #expect(openssl.stdoutText.contains("ecdsa-with-SHA256"))
            #expect(openssl.stdoutText.contains("prime256v1") || openssl.stdoutText.contains("P-256"))

            let certificate = try ApplicationCertificate(derEncoded: certificateResponse.body)
            let keyID = try #require(pathSegments(ofURL: keyRequestURL).last)
            let request = try LicenseClient.makeRequest(.acquire, certificate: certificate, accountID: Fixture.northwind,
                                                        contentKeyID: keyID, deviceID: "live-device")
            let bodyFile = scratch.url.appendingPathComponent("body.json")
            try Data(request.body()).write(to: bodyFile)
            let rental = LicenseProfile(.rental(absoluteExpiration: Date().addingTimeInterval(7 * 86400), playDuration: 3600))
            let options = ["-X", "POST", "-H", "Content-Type: application/json", "-H", "Accept: application/octet-stream",
                           "-H", "X-BOLT-OFFLINE-LICENSE: true", "-H", "X-BC-CRT-CONFIG: \(rental.headerValue)",
                           "--data-binary", "@\(bodyFile.path)"]
            let answer = try await Curl.fetch(keyRequestURL, options)
            try #require(answer.status == 200, "\(answer.text)")
            #expect(answer.header("Content-Type") == "application/octet-stream")
            let license = try request.open(answer.body)
            #expect(license.terms.kind == .rental)
            #expect(license.terms.playDuration == 3600)
            #expect(license.contentKey.count == 16)

            let replay = try await Curl.fetch(keyRequestURL, options)
            #expect(replay.status == 403)
            #expect(try replay.apiErrors().first?.errorSubcode == "SPC_REPLAYED")

            let bigFile = scratch.url.appendingPathComponent("big.json")
            try Data(repeating: UInt8(ascii: " "), count: 70 * 1024).write(to: bigFile)
            let big = try await Curl.fetch(keyRequestURL, ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@\(bigFile.path)"])
            #expect(big.status == 413)
            #expect(try big.apiErrors().first?.errorCode == "REQUEST_TOO_LARGE")

            let contoso = try await Curl.fetch("\(server.baseURL)/license/v1/fairplay_app_cert/\(Fixture.contoso)")
            #expect(contoso.status == 422)
        }
    }
}
