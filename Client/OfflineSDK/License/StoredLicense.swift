import Crypto
import Foundation
import LicenseProtocol

/// What the store keeps of a license: the sealed form (CKC + client key wrapped with the
/// device key; never the clear content key) and its signed terms, readable without the key.
struct StoredLicense: Sendable {
    var sealed: Data
    var terms: LicenseTerms

    init(_ license: License, deviceKey: SymmetricKey) throws(OfflineVideoError) {
        do {
            sealed = Data(try license.sealed(deviceKey: deviceKey))
        } catch {
            throw OfflineVideoError(.contentKeyGenerationFailed, .license, "Cannot seal the license for storage: \(error)")
        }
        terms = license.terms
    }

    /// Copies the license into a download record.
    func apply(to record: inout DownloadRecord) {
        record.license = sealed
        record.licenseTerms = try? JSONEncoder().encode(terms)
        record.licenseRequestedAt = terms.issuedAt.timeIntervalSince1970
        record.licenseExpiresAt = terms.expiresAt?.timeIntervalSince1970
    }

    /// The signed terms stored with a record, if it holds a license.
    static func terms(of record: DownloadRecord) -> LicenseTerms? {
        guard record.license != nil, let data = record.licenseTerms else { return nil }
        return try? JSONDecoder().decode(LicenseTerms.self, from: data)
    }
}
