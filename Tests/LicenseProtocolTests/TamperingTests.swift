import Crypto
import Foundation
import LicenseProtocol
import Testing

@Suite("LicenseProtocol: tampering, wrong keys, wrong certificates")
struct TamperingTests {
    @Test("any flipped byte in an SPC is refused")
    func spcBitFlips() throws {
        let request = try Keys.request()
        for index in request.spc.indices {
            var bytes = request.spc
            bytes[index] ^= 0x01
            #expect(throws: LicenseProtocolError.self, "byte \(index)") { try Keys.northwind.open(spc: bytes) }
        }
        #expect(throws: LicenseProtocolError.self) { try Keys.northwind.open(spc: Array(request.spc.dropLast())) }
        #expect(throws: LicenseProtocolError.self) { try Keys.northwind.open(spc: request.spc + [0]) }
        #expect(throws: LicenseProtocolError.self) { try Keys.northwind.open(spc: []) }
    }

    @Test("any flipped byte in a CKC is refused by the client")
    func ckcBitFlips() throws {
        let request = try Keys.request()
        let ckc = try Keys.exchange(request)
        for index in ckc.indices {
            var bytes = ckc
            bytes[index] ^= 0x80
            #expect(throws: LicenseProtocolError.self, "byte \(index)") { try request.open(bytes) }
        }
        #expect(throws: LicenseProtocolError.self) { try request.open(Array(ckc.dropLast())) }
        #expect(throws: LicenseProtocolError.self) { try request.open(ckc + [0]) }
    }

    @Test("an SPC sealed to another account's certificate is a certificate mismatch")
    func wrongCertificate() throws {
        let request = try Keys.request(identity: Keys.contoso)
        // The header names the certificate: "MSPC", version 1, then its 32-byte hash (docs/license-protocol.md).
        #expect(Array(request.spc[5..<37]) == Keys.contoso.certificate.hash)
        do {
            _ = try Keys.northwind.open(spc: request.spc)
            Issue.record("opened an SPC sealed to another certificate")
        } catch {
            #expect(error.code == .certificateMismatch)
        }
    }

    @Test("a CKC signed by another certificate, or answering another request, is refused")
    func wrongSigner() throws {
        let request = try Keys.request()
        let context = try Keys.northwind.open(spc: request.spc)
        let forged = try Keys.contoso.makeCKC(terms: Keys.terms(for: context), contentKey: Keys.contentKey, iv: Keys.iv, for: context)
        #expect(throws: LicenseProtocolError.self) { try request.open(forged) }
        let other = try Keys.request()
        let answer = try Keys.exchange(other)
        do {
            _ = try request.open(answer)
            Issue.record("opened a CKC made for another client key")
        } catch {
            #expect(error.code == .authenticationFailed)
        }
        var terms = Keys.terms(for: context)
        terms.requestNonce = Array(repeating: 0, count: 16)
        let replayed = try Keys.northwind.makeCKC(terms: terms, contentKey: Keys.contentKey, iv: Keys.iv, for: context)
        do {
            _ = try request.open(replayed)
            Issue.record("accepted a CKC for another nonce")
        } catch {
            #expect(error.code == .responseMismatch)
        }
    }

    @Test("the stored license opens only with its device key and refuses any flipped byte")
    func storedLicense() throws {
        let request = try Keys.request()
        let license = try request.open(try Keys.exchange(request))
        let deviceKey = SymmetricKey(size: .bits256)
        let stored = try license.sealed(deviceKey: deviceKey)
        let reopened = try License(sealed: stored, deviceKey: deviceKey)
        #expect(reopened.contentKey == Keys.contentKey)
        #expect(reopened.terms == license.terms)
        #expect(!stored.containsSubsequence(Keys.contentKey))
        #expect(throws: LicenseProtocolError.self) { try License(sealed: stored, deviceKey: SymmetricKey(size: .bits256)) }
        #expect(throws: LicenseProtocolError.self) { try license.sealed(deviceKey: SymmetricKey(size: .bits128)) }
        for index in stride(from: 0, to: stored.count, by: 7) {
            var bytes = stored
            bytes[index] ^= 0x04
            #expect(throws: LicenseProtocolError.self, "byte \(index)") { try License(sealed: bytes, deviceKey: deviceKey) }
        }
    }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<$0 + needle.count]) == needle }
    }
}
