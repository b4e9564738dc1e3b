/// Values captured from a matched route pattern (`:name` segments and a trailing `*name`).
package struct RouteParameters: Sendable {
    // A handful of pairs: a linear search beats hashing every name on every request.
    private var values: [(name: String, value: String)] = []

    /// Creates parameters from captured values.
    package init(_ values: [String: String] = [:]) { self.values = values.map { (name: $0.key, value: $0.value) } }

    /// The captured value for `name`, or "" when the pattern has no such parameter.
    package subscript(name: String) -> String { values.first { $0.name == name }?.value ?? "" }

    fileprivate mutating func set(_ name: String, _ value: String) {
        if let index = values.firstIndex(where: { $0.name == name }) { values[index].value = value } else { values.append((name, value)) }
    }
}

/// Maps a method and decoded path segments to a handler. Patterns are "/"-separated:
/// literal segments, `:name` for one segment, and a final `*name` for the rest (joined by "/").
/// Handlers receive a `Context` (typically the application object) at dispatch time, so
/// a router can be built before the object that owns it exists.
///
/// Handlers may throw: whoever dispatches a `.found` match catches and turns the error into
/// a response, in one place for every route.
package struct Router<Context>: Sendable {
    /// A route's handler.
    package typealias Handler = @Sendable (Context, HTTPRequest, RouteParameters) throws -> HTTPResponse

    /// The result of looking a request up.
    package enum Match: Sendable {
        /// A route matched.
        case found(Handler, RouteParameters)
        /// The path matched routes, none of them for this method; the methods that would work.
        case methodNotAllowed(allowed: [String])
        /// Nothing matched the path.
        case notFound
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
        case rest(String)
    }

    private struct Route: Sendable {
        var methods: Set<String>
        var segments: [Segment]
        var handler: Handler
        var pattern: String
    }

    private var routes: [Route] = []

    /// Every route as added, one entry per method (without the HEAD that GET implies), in order.
    package var routeList: [(method: String, pattern: String)] {
        routes.flatMap { route in
            route.methods.filter { $0 != "HEAD" || !route.methods.contains("GET") }.sorted().map { (method: $0, pattern: route.pattern) }
        }
    }

    /// Creates an empty router.
    package init() {}

    /// Adds a route. A route for GET also answers HEAD.
    package mutating func add(_ methods: [String], _ pattern: String, _ handler: @escaping Handler) {
        var methodSet = Set(methods)
        if methodSet.contains("GET") { methodSet.insert("HEAD") }
        let segments: [Segment] = pattern.split(separator: "/").map { part in
            if part.hasPrefix(":") { return .parameter(String(part.dropFirst())) }
            if part.hasPrefix("*") { return .rest(String(part.dropFirst())) }
            return .literal(String(part))
        }
        routes.append(Route(methods: methodSet, segments: segments, handler: handler, pattern: pattern))
    }

    /// Finds the route for `method` and `segments`; the first route added wins.
    package func match(method: String, segments: [String]) -> Match {
        var allowed: Set<String> = []
        for route in routes {
            guard let parameters = Router.match(route.segments, segments) else { continue }
            if route.methods.contains(method) { return .found(route.handler, parameters) }
            allowed.formUnion(route.methods)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed.sorted())
    }

    private static func match(_ pattern: [Segment], _ path: [String]) -> RouteParameters? {
        var parameters = RouteParameters()
        var index = 0
        for segment in pattern {
            switch segment {
            case .literal(let literal):
                guard index < path.count, path[index] == literal else { return nil }
            case .parameter(let name):
                guard index < path.count else { return nil }
                parameters.set(name, path[index])
            case .rest(let name):
                guard index < path.count else { return nil }
                parameters.set(name, path[index...].joined(separator: "/"))
                return parameters
            }
            index += 1
        }
        return index == path.count ? parameters : nil
    }
}
