import Foundation
import MicroHTTP
import WireModels

/// The developer-facing admin API under `/_admin/v1`: health and the movable clock.
extension MockBackendApp {
    static func addAdminRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/health") { app, _, _ in
            APIResponse.json(["status": "ok", "videos": "\(app.catalog.videos.count)", "accounts": "\(app.catalog.accounts.count)"])
        }
        router.add(["GET"], "/_admin/v1/clock") { app, _, _ in
            app.clockResponse()
        }
        router.add(["POST"], "/_admin/v1/clock") { app, request, _ in
            struct Body: Decodable {
                var offsetSeconds: Double?
                enum CodingKeys: String, CodingKey { case offsetSeconds = "offset_seconds" }
            }
            guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)), let offset = body.offsetSeconds,
                  offset.isFinite, abs(offset) < 100 * 365 * 86400
            else {
                return APIResponse.error(400, PlaybackAPIErrorCode.badRequest, "INVALID_BODY",
                                         #"Send {"offset_seconds": N}: seconds to add to the system clock (negative moves it back)"#)
            }
            app.clock.offset = offset
            return app.clockResponse()
        }
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
