import Foundation
import MicroHTTP
import WireModels

/// The admin API's tools for tests: fault rules (`/_admin/v1/faults`) and the request log
/// (`/_admin/v1/requests`, live at `/_admin/v1/requests/stream`).
extension MockBackendApp {
    static func addAdminFaultRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/faults") { app, _, _ in
            struct Listing: Encodable { var seed: UInt64; var rules: [FaultInjector.Installed] }
            return APIResponse.json(Listing(seed: app.configuration.faultSeed, rules: app.faults.rules))
        }
        router.add(["POST"], "/_admin/v1/faults") { app, request, _ in
            // One rule, or an array of rules (all or none are added).
            let decoder = JSONDecoder()
            let rules: [FaultRule]
            if let one = try? decoder.decode(FaultRule.self, from: Data(request.body)) {
                rules = [one]
            } else if let many = try? decoder.decode([FaultRule].self, from: Data(request.body)) {
                rules = many
            } else {
                return APIResponse.error(400, PlaybackAPIErrorCode.badRequest, "INVALID_BODY",
                                         #"Send a rule (or an array of rules), e.g. {"route":"segment","probability":0.1,"status":503}; see docs/openapi.yaml"#)
            }
            if let problem = rules.lazy.compactMap(\.problem).first {
                return APIResponse.error(400, PlaybackAPIErrorCode.badRequest, "INVALID_RULE", problem)
            }
            var added: [FaultInjector.Installed] = []
            for rule in rules {
                do throws(FaultRuleError) { added.append(try app.faults.add(rule)) } catch {
                    for rule in added { _ = app.faults.remove(id: rule.rule.id ?? "") }
                    return APIResponse.error(409, "CONFLICT", "RULE_EXISTS", error.message)
                }
            }
            struct Added: Encodable { var rules: [FaultInjector.Installed] }
            return APIResponse.json(Added(rules: added), status: 201)
        }
        router.add(["DELETE"], "/_admin/v1/faults") { app, _, _ in
            app.faults.removeAll()
            return HTTPResponse(status: 204)
        }
        router.add(["DELETE"], "/_admin/v1/faults/:id") { app, _, p in
            guard app.faults.remove(id: p["id"]) else {
                return APIResponse.error(404, PlaybackAPIErrorCode.notFound, "RULE_NOT_FOUND", "No fault rule \(p["id"])")
            }
            return HTTPResponse(status: 204)
        }
    }

    static func addAdminRequestLogRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/requests") { app, request, _ in
            let filter: RequestLog.Filter
            switch requestFilter(request) {
            case .success(let parsed): filter = parsed
            case .failure(let refusal): return refusal.response
            }
            let limit = request.queryValue("limit").flatMap(Int.init) ?? app.requestLog.capacity
            guard limit >= 0 else {
                return APIResponse.error(400, PlaybackAPIErrorCode.badRequest, "INVALID_LIMIT", "limit must be a whole number, at least 0")
            }
            struct Listing: Encodable { var requests: [RequestLog.Entry]; var capacity: Int }
            return APIResponse.json(Listing(requests: app.requestLog.entries(filter, limit: limit), capacity: app.requestLog.capacity))
        }
        router.add(["DELETE"], "/_admin/v1/requests") { app, _, _ in
            app.requestLog.clear()
            return HTTPResponse(status: 204)
        }
        router.add(["GET"], "/_admin/v1/requests/stream") { app, request, _ in
            switch requestFilter(request) {
            case .failure(let refusal): return refusal.response
            case .success(let filter):
                var headers = HTTPHeaders([("Content-Type", "text/event-stream"), ("Cache-Control", "no-store")])
                headers.add("X-Accel-Buffering", "no")
                guard let stream = app.requestLog.follow(filter) else {
                    return APIResponse.error(503, "SERVICE_UNAVAILABLE", nil, "the backend is shutting down")
                }
                return HTTPResponse(status: 200, headers: headers, body: .stream(stream))
            }
        }
    }

    /// `path_prefix`, `status` and `after` of a request-log query.
    private static func requestFilter(_ request: HTTPRequest) -> Result<RequestLog.Filter, ErrorResponse> {
        var filter = RequestLog.Filter(pathPrefix: request.queryValue("path_prefix"))
        if let status = request.queryValue("status") {
            guard let value = Int(status), (100...599).contains(value) else {
                return .failure(ErrorResponse(400, PlaybackAPIErrorCode.badRequest, "INVALID_STATUS", "status must be an HTTP status, 100-599"))
            }
            filter.status = value
        }
        if let after = request.queryValue("after") {
            guard let value = Int(after), value >= 0 else {
                return .failure(ErrorResponse(400, PlaybackAPIErrorCode.badRequest, "INVALID_AFTER", "after must be a request id (a whole number)"))
            }
            filter.after = value
        }
        return .success(filter)
    }
}
