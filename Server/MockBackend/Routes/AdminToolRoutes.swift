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
            if let member = JSONBody.nullMember(in: request.body) {
                throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_RULE", "rule \(member) may not be null: leave it out")
            }
            if let one = try? decoder.decode(FaultRule.self, from: Data(request.body)) {
                rules = [one]
            } else if let many = try? decoder.decode([FaultRule].self, from: Data(request.body)) {
                rules = many
            } else {
                throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_BODY",
                                #"Send a rule (or an array of rules), e.g. {"route":"segment","probability":0.1,"status":503}; see docs/openapi.yaml"#)
            }
            struct Added: Encodable { var rules: [FaultInjector.Installed] }
            return APIResponse.json(Added(rules: try app.addFaultRules(rules)), status: 201)
        }
        router.add(["DELETE"], "/_admin/v1/faults") { app, _, _ in
            app.faults.removeAll()
            try app.publishFaultRules()
            return HTTPResponse(status: 204)
        }
        router.add(["DELETE"], "/_admin/v1/faults/:id") { app, _, p in
            try app.removeFaultRule(id: p["id"])
            return HTTPResponse(status: 204)
        }
    }

    /// Adds fault rules, all or none (the admin API and the dashboard both come here): a rule
    /// that is not valid is a 400 `INVALID_RULE`, an id in use a 409 `RULE_EXISTS`.
    func addFaultRules(_ rules: [FaultRule]) throws(CatalogEditError) -> [FaultInjector.Installed] {
        if let problem = rules.lazy.compactMap(\.problem).first { throw CatalogEditError(.invalid, "INVALID_RULE", problem) }
        var added: [FaultInjector.Installed] = []
        for rule in rules {
            do throws(FaultRuleError) { added.append(try faults.add(rule)) } catch {
                for rule in added { _ = faults.remove(id: rule.rule.id ?? "") }
                throw error.code == .duplicateID ? CatalogEditError(.conflict, "RULE_EXISTS", error.message, underlying: error)
                    : CatalogEditError(.invalid, "INVALID_RULE", error.message, underlying: error)
            }
        }
        try publishFaultRules()
        return added
    }

    /// Tells the other instances sharing the store the rules in force now (they take them whole).
    func publishFaultRules() throws(CatalogEditError) {
        let rules = faults.rules.map(\.rule)
        try CatalogEditError.storage { try store.publish(.faults, value: Array(try JSONEncoder().encode(rules))) }
    }

    /// Removes one fault rule; a 404 `RULE_NOT_FOUND` when there is none with that id.
    func removeFaultRule(id: String) throws(CatalogEditError) {
        guard faults.remove(id: id) else { throw CatalogEditError(.notFound, "RULE_NOT_FOUND", "No fault rule \(id)") }
        try publishFaultRules()
    }

    static func addAdminRequestLogRoutes(to router: inout Router<MockBackendApp>) {
        router.add(["GET"], "/_admin/v1/requests") { app, request, _ in
            let filter = try requestFilter(request)
            let limit = try request.integerParameter("limit", in: 0...Int.max, default: app.requestLog.capacity, subcode: "INVALID_LIMIT")
            struct Listing: Encodable { var requests: [RequestLog.Entry]; var capacity: Int }
            return APIResponse.json(Listing(requests: app.requestLog.entries(filter, limit: limit), capacity: app.requestLog.capacity))
        }
        router.add(["DELETE"], "/_admin/v1/requests") { app, _, _ in
            app.requestLog.clear()
            return HTTPResponse(status: 204)
        }
        router.add(["GET"], "/_admin/v1/requests/stream") { app, request, _ in
            try app.requestLogStream(requestFilter(request))
        }
    }

    /// The request log live as server-sent events: `/_admin/v1/requests/stream` and the
    /// dashboard's `/_dashboard/requests/stream` both answer with this.
    func requestLogStream(_ filter: RequestLog.Filter) throws(HTTPError) -> HTTPResponse {
        var headers = HTTPHeaders([("Content-Type", "text/event-stream"), ("Cache-Control", "no-store")])
        headers.add("X-Accel-Buffering", "no")
        guard let stream = requestLog.follow(filter) else {
            throw HTTPError(503, "SERVICE_UNAVAILABLE", nil, "the backend is shutting down")
        }
        return HTTPResponse(status: 200, headers: headers, body: .stream(stream))
    }

    /// `path_prefix`, `status` and `after` of a request-log query.
    static func requestFilter(_ request: HTTPRequest) throws(HTTPError) -> RequestLog.Filter {
        RequestLog.Filter(pathPrefix: request.queryValue("path_prefix"),
                          status: try request.integerParameter("status", in: 100...599, subcode: "INVALID_STATUS"),
                          after: try request.integerParameter("after", in: 0...Int.max, subcode: "INVALID_AFTER"))
    }
}
