import Foundation
import LicenseProtocol
import SampleAES
import Crypto

/// Valid inputs for the license targets, made with LicenseProtocol's own client and server
/// code and the fixed identity (`FuzzTargets --make-seeds spc Fuzz/corpus/spc`), and SAMPLE-AES
/// segments encrypted from clear ones (`--make-seeds sample-aes DIR clear.ts…`). The other
/// seeds are cut from the fixtures and the tests' resources and strings.
enum Seeds {
    struct UnknownTarget: Error, CustomStringConvertible {
        let name: String
        var description: String { "no seed maker for \(name) (only spc, ckc, stored-license, sample-aes)" }
    }

    static func write(target: String, to folder: URL, inputs: [URL]) throws -> Int {
        let seeds: [(String, [UInt8])]
        switch target {
        case "spc": seeds = try spcSeeds()
        case "ckc": seeds = try ckcSeeds()
        case "stored-license": seeds = try storedLicenseSeeds()
        case "sample-aes":
            seeds = try inputs.map { url in
                let clear = try Data(contentsOf: url)
                let name = url.lastPathComponent.replacingOccurrences(of: "clear-", with: "")
                return ("encrypted-\(name)", try SampleAES.encrypt(segment: Array(clear), key: SampleAESTarget.key, iv: SampleAESTarget.iv))
            }
        default: throw UnknownTarget(name: target)
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, bytes) in seeds {
            try Data(bytes).write(to: folder.appendingPathComponent("seed-\(name)"))
        }
        return seeds.count
    }

    private static let identity = LicenseFixtures.identity
    private static let kinds: [(LicenseRequestKind, String?)] = [(.acquire, nil), (.renew, "lic-1"), (.firstPlay, "lic-1"), (.release, "lic-1")]

    private static func request(_ kind: LicenseRequestKind, licenseID: String?) throws -> PendingLicenseRequest {
        try LicenseClient.makeRequest(kind, certificate: identity.certificate, accountID: LicenseFixtures.accountID,
                                      contentKeyID: "key-1", licenseID: licenseID, deviceID: "device-A", now: LicenseFixtures.now)
    }

    private static func answer(_ request: PendingLicenseRequest, kind: LicenseKind) throws -> [UInt8] {
        let context = try identity.open(spc: request.spc)
        let terms = try JSONDecoder().decode(LicenseTerms.self, from: Data(LicenseFixtures.termsJSON(kind: kind, nonce: context.nonce)))
        return try identity.makeCKC(terms: terms, contentKey: Array(0..<16), iv: Array(16..<32), for: context)
    }

    /// '0' raw SPCs of every kind, '1' their payload JSON, '2' license request bodies.
    private static func spcSeeds() throws -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for (kind, licenseID) in kinds {
            let pending = try request(kind, licenseID: licenseID)
            seeds.append(("raw-\(kind.rawValue)", Array("0".utf8) + pending.spc))
            let context = pending.context
            var payload = #"{"account_id":"\#(context.accountID)","content_key_id":"\#(context.contentKeyID)","#
                + #""created_at":\#(Int64(context.createdAt.timeIntervalSince1970 * 1000)),"device_id":"\#(context.deviceID)","#
                + #""kind":"\#(kind.rawValue)","#
            if let licenseID { payload += #""license_id":"\#(licenseID)","# }
            payload += #""nonce":"\#(Data(context.nonce).base64EncodedString())","version":1}"#
            seeds.append(("payload-\(kind.rawValue)", Array("1".utf8) + Array(payload.utf8)))
            seeds.append(("body-\(kind.rawValue)", Array("2".utf8) + pending.body(publisherID: "pub", applicationID: "app")))
        }
        return seeds
    }

    /// '0' CKCs the server signed (for requests of earlier runs: they verify, they do not
    /// unwrap), '1' terms JSON of each license kind.
    private static func ckcSeeds() throws -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for kind in LicenseKind.allCases {
            seeds.append(("raw-\(kind.rawValue)", Array("0".utf8) + (try answer(request(.acquire, licenseID: nil), kind: kind))))
            seeds.append(("terms-\(kind.rawValue)", Array("1".utf8) + LicenseFixtures.termsJSON(kind: kind, nonce: Array(0..<16))))
        }
        return seeds
    }

    /// '0' licenses as the SDK stores them, '1' CKCs, '2' terms JSON, '3' certificate and terms.
    private static func storedLicenseSeeds() throws -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        let clientPublic = Array(LicenseFixtures.clientKey.publicKey.x963Representation)
        for kind in LicenseKind.allCases {
            let pending = try request(.acquire, licenseID: nil)
            let license = try pending.open(try answer(pending, kind: kind))
            seeds.append(("raw-\(kind.rawValue)", Array("0".utf8) + (try license.sealed(deviceKey: LicenseFixtures.deviceKey))))
            let terms = LicenseFixtures.termsJSON(kind: kind, nonce: Array(0..<16))
            seeds.append(("ckc-\(kind.rawValue)", Array("1".utf8)
                + LicenseFixtures.ckc(terms: terms, keyAndIV: Array(0..<32), clientPublic: clientPublic)))
            seeds.append(("terms-\(kind.rawValue)", Array("2".utf8) + terms))
        }
        let certificate = LicenseFixtures.certificateDER
        seeds.append(("certificate", Array("3".utf8) + [UInt8(certificate.count >> 8), UInt8(certificate.count & 0xFF)]
            + certificate + LicenseFixtures.termsJSON(kind: .rental, nonce: Array(0..<16))))
        return seeds
    }
}
