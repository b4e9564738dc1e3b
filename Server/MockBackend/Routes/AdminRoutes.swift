import Foundation
import MicroHTTP
import WireModels

/// The developer-facing admin API under `/_admin/v1`: health, the movable clock and the
/// accounts' playback-restriction keys.
extension MockBackendApp {
    static func addAdminRoutes(to router: inout Router<MockBackendApp>) {
        // For load balancers and orchestrators, without the admin token: alive (the process
        // answers), and ready (its store answers too; a 503 with the error array when not).
        router.add(["GET"], "/healthz") { _, _, _ in
            APIResponse.json(["status": "ok"])
        }
        router.add(["GET"], "/readyz") { app, _, _ in
            do { try app.store.checkReady() } catch {
                throw StoreAvailability.isUnavailable(error) ? StoreAvailability.unavailable(error)
                    : HTTPError(503, "SERVICE_UNAVAILABLE", "DATABASE_UNAVAILABLE", "The store does not answer: \(error)")
            }
            return APIResponse.json(["status": "ready", "store": app.storeKind])
        }
        router.add(["GET"], "/_admin/v1/health") { app, _, _ in
            APIResponse.json(["status": "ok", "videos": "\(app.catalog.videos.count)", "accounts": "\(app.catalog.accounts.count)"])
        }
        addAdminClockRoutes(to: &router)
        addAdminPlaybackKeyRoutes(to: &router)
    }

    // MARK: Clock

    private static func addAdminClockRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/clock") { app, _, _ in
            app.clockResponse()
        }
        router.add(["POST"], "/_admin/v1/clock") { app, request, _ in
            struct Body: Decodable {
                var offsetSeconds: Double?
                enum CodingKeys: String, CodingKey { case offsetSeconds = "offset_seconds" }
            }
            guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)), let offset = body.offsetSeconds else {
                throw CatalogEditError(.invalid, "INVALID_BODY", MockBackendApp.clockOffsetHint)
            }
            try app.setClockOffset(offset)
            return app.clockResponse()
        }
    }

    // MARK: Playback-restriction keys

    private static func addAdminPlaybackKeyRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/accounts/:account/playback-keys") { app, request, p in
            guard app.catalog.accounts[p["account"]] != nil else { throw HTTPError.notFound(request) }
            struct Keys: Encodable { var keys: [PlaybackRestrictions.RegisteredKey] }
            return APIResponse.json(Keys(keys: app.restrictions.list(accountID: p["account"])))
        }
        router.add(["POST"], "/_admin/v1/accounts/:account/playback-keys") { app, request, p in
            guard app.catalog.accounts[p["account"]] != nil else { throw HTTPError.notFound(request) }
            return try app.registerPlaybackKey(request.body, accountID: p["account"])
        }
        router.add(["DELETE"], "/_admin/v1/accounts/:account/playback-keys/:id") { app, request, p in
            guard app.catalog.accounts[p["account"]] != nil else { throw HTTPError.notFound(request) }
            guard try app.restrictions.remove(accountID: p["account"], id: p["id"]) else {
                throw HTTPError(404, PlaybackAPIErrorCode.notFound, "KEY_NOT_FOUND", "No key \(p["id"]) in account \(p["account"])")
            }
            return HTTPResponse(status: 204)
        }
    }

    /// Registers the RSA public key in `body` for the account's playback-restriction tokens.
    private func registerPlaybackKey(_ body: [UInt8], accountID: String) throws -> HTTPResponse {
        struct Body: Decodable {
            var id: String
            var publicKey: String
            enum CodingKeys: String, CodingKey { case id; case publicKey = "public_key" }
        }
        guard let body = try? JSONDecoder().decode(Body.self, from: Data(body)), (1...128).contains(body.id.count), !body.id.contains("/") else {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_BODY", #"Send {"id":"key id (kid)","public_key":"-----BEGIN PUBLIC KEY-----…"}"#)
        }
        do {
            let key = try restrictions.register(accountID: accountID, id: body.id, pem: body.publicKey, now: clock.now())
            return APIResponse.json(["id": key.id, "account_id": key.accountID, "created_at": WireDate.string(from: key.createdAt)], status: 201)
        } catch PlaybackRestrictions.RegistrationError.exists {
            throw HTTPError(409, "CONFLICT", "KEY_EXISTS", "Account \(accountID) already has a key \(body.id); DELETE it first")
        } catch PlaybackRestrictions.RegistrationError.invalidKey(let why) {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_KEY", "public_key must be an RSA public key (PEM, at least 2048 bits): \(why)")
        }
    }

    /// What `POST /clock` takes.
    private static let clockOffsetHint = #"Send {"offset_seconds": N}: seconds to add to the system clock (negative moves it back)"#

    /// Moves the clock to `offset` seconds from the system clock (the admin API and the
    /// dashboard both come here); under 100 years either way.
    func setClockOffset(_ offset: Double) throws(CatalogEditError) {
        guard offset.isFinite, abs(offset) < 100 * 365 * 86400 else {
            throw CatalogEditError(.invalid, "INVALID_BODY", "offset_seconds must be under 100 years (3153600000 s) either way")
        }
        clock.offset = offset
        try CatalogEditError.storage { try store.publish(.clock, value: Array(String(offset).utf8)) }
    }

    private func clockResponse() -> HTTPResponse {
        struct ClockState: Encodable {
            var now: Date
            var offsetSeconds: Double
            enum CodingKeys: String, CodingKey { case now; case offsetSeconds = "offset_seconds" }
        }
        return APIResponse.json(ClockState(now: clock.now(), offsetSeconds: clock.offset))
    }
}
