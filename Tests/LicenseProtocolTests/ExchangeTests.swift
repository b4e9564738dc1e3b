import Crypto
import Foundation
import LicenseProtocol
import Testing

/// Shared fixtures: one identity per account, made once (key generation is the slow part).
enum Keys {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let northwind = try! LicenseServerIdentity.generate(accountID: "6415818918001", now: now)
    static let contoso = try! LicenseServerIdentity.generate(accountID: "5434391461001", now: now)
    static let contentKey: [UInt8] = Array(0..<16)
    static let iv: [UInt8] = Array(16..<32)

    static func request(_ kind: LicenseRequestKind = .acquire, identity: LicenseServerIdentity = northwind,
                        licenseID: String? = nil) throws -> PendingLicenseRequest {
        try LicenseClient.makeRequest(kind, certificate: identity.certificate, accountID: "6415818918001",
                                      contentKeyID: "key-1", licenseID: licenseID, deviceID: "device-A", now: now)
    }

    static func terms(for context: ServerPlaybackContext, kind: LicenseKind = .rental) -> LicenseTerms {
        LicenseTerms(licenseID: "lic-1", kind: kind, accountID: context.accountID, videoID: "6415818918103",
                     contentKeyID: context.contentKeyID, deviceID: context.deviceID, issuedAt: now,
                     rentalEnd: now.addingTimeInterval(86400 * 30), playDuration: 86400, firstPlay: nil,
                     expiresAt: now.addingTimeInterval(86400 * 30), persistable: true, requestNonce: context.nonce)
    }

    /// A full exchange: the server opens the SPC and answers a CKC for it.
    static func exchange(_ request: PendingLicenseRequest, identity: LicenseServerIdentity = northwind) throws -> [UInt8] {
        let context = try identity.open(spc: request.spc)
        return try identity.makeCKC(terms: terms(for: context), contentKey: contentKey, iv: iv, for: context)
    }
}

@Suite("LicenseProtocol: SPC and CKC round trips")
struct ExchangeTests {
    @Test("the server reads back every member of the SPC the client made")
    func spcRoundTrip() throws {
        let request = try Keys.request(.renew, licenseID: "lic-9")
        let context = try Keys.northwind.open(spc: request.spc)
        #expect(context == request.context)
        #expect(context.kind == .renew)
        #expect(context.licenseID == "lic-9")
        #expect(context.deviceID == "device-A")
        #expect(context.nonce.count == 16)
        #expect(context.createdAt == Keys.now)
        #expect(context.clientKey.count == 65)
    }

    @Test("two SPCs for the same request differ: fresh client key, nonce and sealing key")
    func fresh() throws {
        let a = try Keys.request(), b = try Keys.request()
        #expect(a.spc != b.spc)
        #expect(a.context.nonce != b.context.nonce)
        #expect(a.context.clientKey != b.context.clientKey)
    }

    @Test("the client opens the CKC: terms as signed, content key and IV unwrapped")
    func ckcRoundTrip() throws {
        let request = try Keys.request()
        let license = try request.open(try Keys.exchange(request))
        #expect(license.contentKey == Keys.contentKey)
        #expect(license.iv == Keys.iv)
        #expect(license.terms == Keys.terms(for: request.context))
        #expect(license.terms.expiry(localFirstPlay: Keys.now) == Keys.now.addingTimeInterval(86400))
        let terms = try License.verifiedTerms(ofCKC: license.ckc, certificate: Keys.northwind.certificate)
        #expect(terms.licenseID == "lic-1")
    }

    @Test("the request body is the reference JSON with the SPC in base64")
    func body() throws {
        let request = try Keys.request()
        let json = try #require(try JSONSerialization.jsonObject(with: Data(request.body())) as? [String: String])
        #expect(Set(json.keys) == ["publisher_id", "application_id", "key_id", "server_playback_context"])
        #expect(json["server_playback_context"] == Data(request.spc).base64EncodedString())
        let parsed = try LicenseRequestBody(parsing: request.body())
        #expect(parsed.serverPlaybackContext == request.spc)
        #expect(parsed.keyID == "key-1")
    }

    @Test("a malformed body or a non-base64 SPC is told apart")
    func badBodies() {
        func code(_ body: String) -> LicenseProtocolError.Code? {
            #expect(throws: LicenseProtocolError.self) { try LicenseRequestBody(parsing: Array(body.utf8)) }?.code
        }
        #expect(code("nope") == .invalidRequestBody)
        #expect(code("{}") == .invalidRequestBody)
        #expect(code(#"{"server_playback_context":"***"}"#) == .invalidBase64)
        #expect(code(#"{"server_playback_context":""}"#) == .invalidBase64)
        let notJSON = #expect(throws: LicenseProtocolError.self) { try LicenseRequestBody(parsing: Array("nope".utf8)) }
        #expect(notJSON?.underlying is DecodingError)
    }

    @Test("the certificate is a P-256 X.509 certificate for 20 years; identities restore from storage")
    func certificate() throws {
        let identity = Keys.northwind
        #expect(identity.certificate.hash == Array(SHA256.hash(data: identity.certificate.derEncoded)))
        #expect(identity.certificate.notValidAfter > Keys.now.addingTimeInterval(19 * 365 * 86400))
        let restored = try LicenseServerIdentity(certificateDER: identity.certificate.derEncoded, privateKey: identity.privateKey)
        let request = try Keys.request()
        #expect(try restored.open(spc: request.spc) == request.context)
        #expect(throws: LicenseProtocolError.self) {
            try LicenseServerIdentity(certificateDER: identity.certificate.derEncoded, privateKey: Keys.contoso.privateKey)
        }
        #expect(throws: LicenseProtocolError.self) { try ApplicationCertificate(derEncoded: [0x30, 0x03, 0x02, 0x01, 0x01]) }
    }

    @Test("a client refuses bad arguments before sealing anything")
    func badArguments() {
        #expect(throws: LicenseProtocolError.self) {
            try LicenseClient.makeRequest(.acquire, certificate: Keys.northwind.certificate, accountID: "a", contentKeyID: "k", deviceID: "bad id/")
        }
        #expect(throws: LicenseProtocolError.self) {
            try LicenseClient.makeRequest(.renew, certificate: Keys.northwind.certificate, accountID: "a", contentKeyID: "k", deviceID: "d")
        }
    }
}

@Suite("LicenseProtocol: terms JSON")
struct TermsJSONTests {
    @Test("the CKC's hand-written terms JSON is what JSONEncoder writes, and decodes back", arguments: [false, true])
    func matchesEncoder(optionals: Bool) throws {
        var terms = LicenseTerms(licenseID: "lic-\"quoted\"\\", kind: .rental, accountID: "6415818918001", videoID: "v\u{1}",
                                 contentKeyID: "key-1", deviceID: "device-A", issuedAt: Keys.now, expiresAt: nil,
                                 persistable: false, requestNonce: Array(0..<16))
        if optionals {
            terms.rentalEnd = Keys.now.addingTimeInterval(86400)
            terms.playDuration = 3600.5
            terms.firstPlay = Keys.now.addingTimeInterval(60)
            terms.expiresAt = Keys.now.addingTimeInterval(3660)
            terms.persistable = true
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let viaEncoder = try JSONSerialization.jsonObject(with: encoder.encode(terms)) as? NSDictionary
        let direct = try JSONSerialization.jsonObject(with: Data(terms.jsonBytes())) as? NSDictionary
        #expect(viaEncoder == direct)
        #expect(try JSONDecoder().decode(LicenseTerms.self, from: Data(terms.jsonBytes())) == terms)
    }
}
