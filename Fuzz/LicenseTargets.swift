import Crypto
import Foundation
import LicenseProtocol

/// The license exchange's readers: SPCs (the backend, from the network), CKCs (the SDK, from the
/// network), X-BC-CRT-CONFIG headers (the backend) and stored licenses (the SDK, from disk).
///
/// The first byte of an input picks a mode (the seeds use ASCII digits): raw bytes straight
/// into the reader, or plaintext that LicenseFixtures seals, wraps and signs first, so the
/// fuzzer reaches the JSON and layout checks behind the cryptography.
enum LicenseTargets {
    /// `spc`: '0' raw SPC, '1' SPC payload JSON (sealed here), '2' license request body.
    static let spc = FuzzTarget(name: "spc") { buffer in
        var input = FuzzInput(buffer)
        let mode = input.byte() % 3
        let bytes = input.rest()
        let spc: [UInt8]
        switch mode {
        case 0: spc = bytes
        case 1: spc = LicenseFixtures.spc(payload: bytes)
        default:
            guard let body = try? LicenseRequestBody(parsing: bytes) else { return }
            _ = try? LicenseRequestBody(parsing: body.encoded())
            spc = body.serverPlaybackContext
        }
        guard let context = try? LicenseFixtures.identity.open(spc: spc) else { return }
        FuzzCheck.expect(context.nonce.count == 16 && ServerPlaybackContext.isValidDeviceID(context.deviceID),
                         "an SPC with an invalid payload opened")
        // What the backend does next: answer with a CKC for these terms.
        let terms = LicenseTerms(
            licenseID: context.licenseID ?? "lic-1", kind: .rental, accountID: context.accountID, videoID: "6415818918104",
            contentKeyID: context.contentKeyID, deviceID: context.deviceID, issuedAt: context.createdAt,
            expiresAt: context.createdAt.addingTimeInterval(86400), persistable: true, requestNonce: context.nonce)
        _ = try? LicenseFixtures.identity.makeCKC(terms: terms, contentKey: Array(0..<16), iv: Array(16..<32), for: context)
    }

    /// The request a CKC answers, made once per process (its client key is random, so '0' raw
    /// CKCs verify but do not unwrap; '1' terms are wrapped for it here and do).
    static let pending = try! LicenseClient.makeRequest(  // fuzzing code: a broken fixture shows on the first input
        .acquire, certificate: LicenseFixtures.certificate, accountID: LicenseFixtures.accountID,
        contentKeyID: "key-1", deviceID: "device-A", now: LicenseFixtures.now)

    /// `ckc`: '0' raw CKC, '1' terms JSON (wrapped and signed here), both opened as the SDK does.
    static let ckc = FuzzTarget(name: "ckc") { buffer in
        var input = FuzzInput(buffer)
        let mode = input.byte() % 2
        let bytes = input.rest()
        let ckc = mode == 0 ? bytes
            : LicenseFixtures.ckc(terms: bytes, keyAndIV: Array(0..<32), clientPublic: pending.context.clientKey)
        if let terms = try? License.verifiedTerms(ofCKC: ckc, certificate: LicenseFixtures.certificate) {
            useTerms(terms)
        }
        if let license = try? pending.open(ckc) { useLicense(license) }
    }

    /// `crt`: '0' the header value as text, '1' the JSON (base64-encoded here).
    static let crt = FuzzTarget(name: "crt") { buffer in
        var input = FuzzInput(buffer)
        let mode = input.byte() % 2
        let bytes = input.rest()
        let header = mode == 0 ? String(decoding: bytes, as: UTF8.self) : Data(bytes).base64EncodedString()
        guard let profile = try? LicenseProfile(headerValue: header) else { return }
        _ = try? LicenseProfile(headerValue: profile.headerValue)
    }

    /// `stored-license`: '0' raw stored license; '1' a CKC, '2' terms JSON (in a CKC for the fixed
    /// client key), '3' a 2-byte length, certificate DER, then terms JSON: sealed here with the
    /// fixed device key.
    static let storedLicense = FuzzTarget(name: "stored-license") { buffer in
        var input = FuzzInput(buffer)
        let mode = input.byte() % 4
        let clientKey = Array(LicenseFixtures.clientKey.rawRepresentation)
        let clientPublic = Array(LicenseFixtures.clientKey.publicKey.x963Representation)
        let sealed: [UInt8]
        switch mode {
        case 0:
            sealed = input.rest()
        case 1:
            sealed = LicenseFixtures.storedLicense(certificate: LicenseFixtures.certificateDER, ckc: input.rest(), clientKey: clientKey)
        case 2:
            let ckc = LicenseFixtures.ckc(terms: input.rest(), keyAndIV: Array(0..<32), clientPublic: clientPublic)
            sealed = LicenseFixtures.storedLicense(certificate: LicenseFixtures.certificateDER, ckc: ckc, clientKey: clientKey)
        default:
            let certificate = input.take(input.uint16())
            let ckc = LicenseFixtures.ckc(terms: input.rest(), keyAndIV: Array(0..<32), clientPublic: clientPublic)
            sealed = LicenseFixtures.storedLicense(certificate: certificate, ckc: ckc, clientKey: clientKey)
        }
        guard let license = try? License(sealed: sealed, deviceKey: LicenseFixtures.deviceKey) else { return }
        useLicense(license)
    }

    /// What the SDK does with a verified license: seal it for the store, keep its terms as
    /// JSON, read both back, and work out its expiry.
    private static func useLicense(_ license: License) {
        useTerms(license.terms)
        let resealed: [UInt8]
        do { resealed = try license.sealed(deviceKey: LicenseFixtures.deviceKey) } catch {
            FuzzCheck.expect(false, "an opened license does not seal: \(error)")
            return
        }
        do {
            let reopened = try License(sealed: resealed, deviceKey: LicenseFixtures.deviceKey)
            FuzzCheck.expect(reopened.terms == license.terms && reopened.contentKey == license.contentKey,
                             "a resealed license opens with other terms or another key")
        } catch {
            FuzzCheck.expect(false, "a resealed license does not open: \(error)")
        }
    }

    private static func useTerms(_ terms: LicenseTerms) {
        _ = terms.isExpired(at: LicenseFixtures.now)
        _ = terms.verdict(at: LicenseFixtures.now, localFirstPlay: LicenseFixtures.now)
        _ = terms.jsonBytes()
        guard let stored = try? JSONEncoder().encode(terms) else { return }
        _ = try? JSONDecoder().decode(LicenseTerms.self, from: stored)
    }
}
