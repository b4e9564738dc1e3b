import Foundation
import MicroHTTP
import WireModels
import LicenseProtocol

/// The admin API's view of the license server: licenses (listed, shown with their history,
/// revoked) and the devices that hold users' slots (listed, removed).
///
/// A revoked license stays listed; its next renewal or first play is refused with 403
/// `ACCESS_DENIED` / `LICENSE_REVOKED` (docs/license-protocol.md). A removed device frees its
/// slot: the user's next license on another device counts one device fewer.
extension MockBackendApp {
    /// A license as the admin API shows it.
    struct AdminLicense: Encodable {
        var id, accountID, videoID, keyID, deviceID: String
        var userID: String?
        var kind: String
        var issuedAt: Date
        var rentalEnd: Date?
        var playDuration: Double?
        var firstPlay: Date?
        var expiresAt: Date?
        var persistable: Bool
        var releasedAt: Date?
        var revokedAt: Date?
        var state: String
        var history: [Event]?

        struct Event: Encodable {
            var event: String
            var at: Date
            var kind: String?
            var expiresAt: Date?
            var firstPlay: Date?
            enum CodingKeys: String, CodingKey {
                case event, at, kind
                case expiresAt = "expires_at", firstPlay = "first_play"
            }
        }

        enum CodingKeys: String, CodingKey {
            case id, kind, persistable, state, history
            case accountID = "account_id", videoID = "video_id", keyID = "key_id", deviceID = "device_id", userID = "user_id"
            case issuedAt = "issued_at", rentalEnd = "rental_end", playDuration = "play_duration", firstPlay = "first_play"
            case expiresAt = "expires_at", releasedAt = "released_at", revokedAt = "revoked_at"
        }

        init(_ record: LicenseRecord, now: Date, history: [LicenseEvent]? = nil) {
            let t = record.terms
            id = t.licenseID
            accountID = t.accountID
            videoID = t.videoID
            keyID = t.contentKeyID
            deviceID = t.deviceID
            userID = record.userID
            kind = t.kind.rawValue
            issuedAt = t.issuedAt
            rentalEnd = t.rentalEnd
            playDuration = t.playDuration
            firstPlay = t.firstPlay
            expiresAt = t.expiresAt
            persistable = t.persistable
            releasedAt = record.releasedAt
            revokedAt = record.revokedAt
            state = record.state(at: now)
            self.history = history?.map { Event(event: $0.event, at: $0.at, kind: $0.kind, expiresAt: $0.expiresAt, firstPlay: $0.firstPlay) }
        }
    }

    static func addAdminLicenseRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/licenses") { app, request, _ in
            let state = try request.choiceParameter("state", ["active", "expired", "released", "revoked"], subcode: "INVALID_STATE")
            let limit = try request.listingLimit()
            let filter = LicenseFilter(accountID: request.queryValue("account"), videoID: request.queryValue("video"),
                                                    userID: request.queryValue("user"), deviceID: request.queryValue("device"),
                                                    state: state)
            let now = app.clock.now()
            let records = try CatalogEditError.storage { try app.licenses.licenses(filter, now: now, limit: limit) }
            return APIResponse.json(["licenses": records.map { AdminLicense($0, now: now) }])
        }
        router.add(["GET"], "/_admin/v1/licenses/:license") { app, _, p in
            guard let record = try CatalogEditError.storage({ try app.licenses.license(id: p["license"]) }) else {
                throw CatalogEditError(.notFound, "LICENSE_NOT_FOUND", "No license \(p["license"])")
            }
            let history = try CatalogEditError.storage { try app.licenses.events(licenseID: p["license"]) }
            return APIResponse.json(AdminLicense(record, now: app.clock.now(), history: history))
        }
        router.add(["POST"], "/_admin/v1/licenses/:license/revoke") { app, _, p in
            APIResponse.json(try app.revokeLicense(id: p["license"]))
        }
        router.add(["GET"], "/_admin/v1/accounts/:account/devices") { app, request, p in
            try app.requireAccount(p["account"])
            struct Device: Encodable {
                var accountID, userID, deviceID: String
                var registeredAt: Date
                enum CodingKeys: String, CodingKey {
                    case accountID = "account_id", userID = "user_id", deviceID = "device_id", registeredAt = "registered_at"
                }
            }
            let devices = try CatalogEditError.storage { try app.licenses.registeredDevices(accountID: p["account"], userID: request.queryValue("user")) }
            return APIResponse.json(["devices": devices.map {
                Device(accountID: $0.accountID, userID: $0.userID, deviceID: $0.deviceID, registeredAt: $0.registeredAt)
            }])
        }
        router.add(["DELETE"], "/_admin/v1/accounts/:account/devices/:device") { app, request, p in
            try app.requireAccount(p["account"])
            let user = request.queryValue("user")
            let removed = try CatalogEditError.storage {
                try app.licenses.removeDevice(accountID: p["account"], deviceID: p["device"], userID: user)
            }
            guard removed > 0 else {
                throw CatalogEditError(.notFound, "DEVICE_NOT_FOUND",
                                       "No device \(p["device"]) registered in account \(p["account"])" + (user.map { " for user \($0)" } ?? ""))
            }
            return HTTPResponse(status: 204)
        }
    }

    /// Revokes a license (the admin API and the dashboard both come here): it stays listed,
    /// its next renewal or first play is refused. A 404 `LICENSE_NOT_FOUND` when there is none.
    func revokeLicense(id: String) throws(CatalogEditError) -> AdminLicense {
        let now = clock.now()
        guard let record = try CatalogEditError.storage({ try licenses.revoke(id: id, now: now) }) else {
            throw CatalogEditError(.notFound, "LICENSE_NOT_FOUND", "No license \(id)")
        }
        let history = try CatalogEditError.storage { try licenses.events(licenseID: id) }
        return AdminLicense(record, now: now, history: history)
    }

    private func requireAccount(_ id: String) throws(CatalogEditError) {
        guard catalog.accounts[id] != nil else { throw CatalogEditError(.notFound, "ACCOUNT_NOT_FOUND", "No account \(id)") }
    }
}
