import Crypto
import Foundation
import Locking
public import Logging
package import MicroHTTP
import WireModels

/// The backend's request handling, independent of any socket: catalog, database, URL
/// signing and the router. `MockBackendServer` puts it behind libmicrohttpd; route tests
/// call `handle(_:)` directly.
public final class MockBackendApp: Sendable {
    /// The catalog as served now (the file with the admin API's edits).
    public var catalog: Catalog { live.snapshot.catalog }
    /// The file's catalog with the admin API's edits, validated and kept in the store.
    let live: LiveCatalog
    /// The media assets: the fixtures', and the ones Dynamic Ingest made in the media folder.
    let assets: MediaAssets
    /// The clock every token check reads.
    public let clock: BackendClock
    let configuration: BackendConfiguration
    /// Everything kept: secrets, licenses, catalog edits, analytics events (SQLite or PostgreSQL).
    let store: any BackendStore
    /// The URLs handed out: with the base clients use to reach the server.
    let links: Links
    /// The same over HTTPS when the server serves plain HTTP and HTTPS on two ports.
    let secureLinks: Links?
    /// The content keys of the protected videos, by video id.
    var contentKeys: [String: ContentKey] { live.snapshot.contentKeys }
    let renderer: VideoRenderer
    let packager: HLSPackager
    let encryptor: SegmentEncryptor
    /// The assets' renditions as CMAF tracks, packaged on first use (HLS v7 and DASH).
    let cmaf: CMAFPackager
    let cache = ResponseCache()
    let certificates: ApplicationCertificates
    /// The store's licenses, devices and nonces.
    var licenses: any LicenseStorage { store }
    /// The analytics collector's events (`POST /tracker`), in the store.
    var tracker: any TrackerStorage { store }
    let restrictions: PlaybackRestrictions
    let logger: Logger
    /// The token the admin API asks for.
    public let adminToken: String
    /// The last requests answered.
    public let requestLog: RequestLog
    /// The fault rules in force: add, list and remove them from a test.
    public let faults: FaultInjector
    /// What signs OAuth access tokens (a setting every instance sharing the store reads).
    let oauthSecret: SymmetricKey
    private let router: Router<MockBackendApp>
    /// Runs ingest jobs (nil with `ingestWorkers` 0, or before `init` has started it).
    var ingestWorker: IngestWorker? { ingestWorkerSlot.withLock { $0 } }
    private let ingestWorkerSlot = Locked<IngestWorker?>(nil)

    /// Loads the catalog, opens (or creates) the data directory and database, and makes the
    /// content keys of protected videos. `baseURL` is what clients use to reach the server;
    /// `secureBaseURL`, when it also serves HTTPS on a second port, what they use for that one
    /// (answers to requests that came over TLS carry it).
    public init(configuration: BackendConfiguration, baseURL: String, secureBaseURL: String? = nil, clock: BackendClock = BackendClock(),
                logger: Logger = Logger(label: "mock-backend")) throws {
        if let token = configuration.adminToken, let problem = BackendConfiguration.adminTokenProblem(token) {
            throw BackendConfigurationError(problem)
        }
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        if let url = configuration.databaseURL {
            // One connection per HTTP thread, so no request waits for another's connection.
            store = try PostgresBackendStore(url: url, connections: configuration.threadCount, logger: logger)
        } else {
            store = try SQLiteBackendStore(directory: configuration.dataDirectory)
        }
        if configuration.resetAtStart {
            try store.forgetState()
            // The videos are forgotten: so are the media Dynamic Ingest made for them.
            let media = configuration.effectiveMediaDirectory
            for name in (try? FileManager.default.contentsOfDirectory(atPath: media.path)) ?? [] where MediaAssets.isIngested(name) {
                try? FileManager.default.removeItem(at: media.appendingPathComponent(name))
            }
        }
        let assets = MediaAssets(root: configuration.catalogFile.deletingLastPathComponent().appendingPathComponent("media"),
                                 ingestedRoot: configuration.effectiveMediaDirectory)
        self.assets = assets
        live = try LiveCatalog(file: configuration.catalogFile, assets: assets, store: store,
                               defaultManifestTokenTTL: configuration.defaultManifestTokenTTL, now: clock.now())
        let catalog = live.snapshot.catalog
        for (video, asset) in catalog.videosMissingMedia {
            logger.warning("video \(video): its ingested media (\(asset)) are not in \(configuration.effectiveMediaDirectory.path); it has no media until it is ingested again")
        }
        let secret = try store.setting("url_token_secret") { SecureBytes.random(32) }
        adminToken = try configuration.adminToken ?? String(decoding: store.setting("admin_token") {
            Array(Hex.lowercase(SecureBytes.random(24)).utf8)
        }, as: UTF8.self)
        oauthSecret = SymmetricKey(data: try store.setting("oauth_token_secret") { SecureBytes.random(32) })
        links = Links(base: PublicBaseURL.normalized(baseURL), secret: SymmetricKey(data: secret))
        secureLinks = secureBaseURL.map { Links(base: PublicBaseURL.normalized($0), secret: SymmetricKey(data: secret)) }
        certificates = try ApplicationCertificates(accountIDs: catalog.accounts.values.filter(\.fairPlay).map(\.id).sorted(),
                                                   store: store, now: clock.now())
        restrictions = try PlaybackRestrictions(store: store)
        renderer = VideoRenderer(mediaTokenTTL: configuration.mediaTokenTTL)
        packager = HLSPackager(plainSampleAESKeys: configuration.plainSampleAESKeysForTesting)
        // Media made once and kept as files in the data directory's cache, TS and CMAF alike.
        let mediaCache = MediaFileCache(directory: configuration.dataDirectory.appendingPathComponent("cache"))
        encryptor = SegmentEncryptor(cache: mediaCache)
        cmaf = CMAFPackager(cache: mediaCache)
        requestLog = RequestLog(capacity: configuration.requestLogSize)
        faults = FaultInjector(seed: configuration.faultSeed)
        for rule in configuration.faultRules {
            do throws(FaultRuleError) { _ = try faults.add(rule) } catch {
                throw FaultRuleError(error.code, "fault rule \(rule.id ?? ""): \(error.message)")
            }
        }
        var router = Router<MockBackendApp>()
        MockBackendApp.addPlaybackAPIRoutes(to: &router)
        MockBackendApp.addStaticURLRoutes(to: &router)
        MockBackendApp.addManifestRoutes(to: &router)
        MockBackendApp.addCMAFRoutes(to: &router)
        MockBackendApp.addProgressiveMP4Routes(to: &router)
        MockBackendApp.addThumbnailRoutes(to: &router)
        MockBackendApp.addLicenseRoutes(to: &router)
        MockBackendApp.addSampleAESTestKeyRoute(to: &router)
        AssetRoutes(live: live).add(to: &router)
        MockBackendApp.addAdminRoutes(to: &router)
        MockBackendApp.addAdminCatalogRoutes(to: &router)
        MockBackendApp.addAdminLicenseRoutes(to: &router)
        MockBackendApp.addAdminFaultRoutes(to: &router)
        MockBackendApp.addAdminRequestLogRoutes(to: &router)
        TrackerRoutes(tracker: store, clock: clock).add(to: &router)
        MockBackendApp.addDashboardRoutes(to: &router)
        MockBackendApp.addOAuthRoutes(to: &router)
        MockBackendApp.addCMSVideoRoutes(to: &router)
        MockBackendApp.addCMSFieldRoutes(to: &router)
        MockBackendApp.addCMSPlaylistRoutes(to: &router)
        MockBackendApp.addIngestProfileRoutes(to: &router)
        MockBackendApp.addIngestRoutes(to: &router)
        self.router = router
        // What instances sharing the store already agreed on: the clock, and the fault rules
        // unless this one starts with its own (then the others take those).
        try takeShared(.clock)
        if configuration.faultRules.isEmpty {
            try takeShared(.faults)
        } else {
            try publishFaultRules()
        }
        store.watchChanges { [weak self] topic in self?.sharedStateChanged(topic) }
        if configuration.ingestWorkers > 0 {
            let mediaDirectory = configuration.effectiveMediaDirectory
            try FileManager.default.createDirectory(at: mediaDirectory, withIntermediateDirectories: true)
            if store is SQLiteBackendStore {
                // One process owns SQLite: what a stopped run held goes back in the queue, its half-made folders go.
                try store.requeueInterruptedIngestJobs()
                for name in (try? FileManager.default.contentsOfDirectory(atPath: mediaDirectory.path)) ?? [] where name.hasPrefix(".partial-") {
                    try? FileManager.default.removeItem(at: mediaDirectory.appendingPathComponent(name))
                }
            }
            let worker = IngestWorker(app: self, mediaDirectory: mediaDirectory, logger: logger)
            ingestWorkerSlot.withLock { $0 = worker }
            worker.start()
        }
    }

    deinit {
        ingestWorker?.stop(wait: false)
        store.close()
    }

    /// "sqlite" or "postgres", for readiness and the start-up line.
    var storeKind: String { store is PostgresBackendStore ? "postgres" : "sqlite" }

    /// Stops listening to other instances and closes the store's connections (at shutdown).
    func closeStore() {
        ingestWorker?.stop()
        store.close()
    }

    /// Reloads what another instance sharing the store changed.
    private func sharedStateChanged(_ topic: SharedTopic) {
        do { try takeShared(topic) } catch {
            logger.error("cannot take another instance's change of \(topic.rawValue): \(error)")
        }
    }

    /// Takes `topic` as the store holds it now (SQLite holds no clock or rules: nothing changes).
    private func takeShared(_ topic: SharedTopic) throws {
        switch topic {
        case .catalog:
            try live.reload(now: clock.now())
        case .clock:
            if let value = try store.sharedValue(.clock), let offset = Double(String(decoding: value, as: UTF8.self)) { clock.offset = offset }
        case .faults:
            if let rules = try store.sharedValue(.faults) { faults.replaceRules(with: try JSONDecoder().decode([FaultRule].self, from: Data(rules))) }
        case .playbackKeys:
            try restrictions.reload()
        }
    }

    /// The base URL in every link the backend hands out (over plain HTTP when it serves both).
    public var baseURL: String { links.base }
    /// The base URL in links answered over HTTPS when the server serves both on two ports.
    public var secureBaseURL: String? { secureLinks?.base }

    /// The links for an answer to `request`: the HTTPS ones when it came over TLS and the
    /// server serves both.
    func links(for request: HTTPRequest) -> Links {
        request.isSecure ? secureLinks ?? links : links
    }

    /// Answers one request. Never throws: whatever a handler throws becomes its error array
    /// here (`APIResponse.error(for:request:logger:)`).
    package func handle(_ request: HTTPRequest) -> HTTPResponse {
        var response: HTTPResponse
        var allowed: [String]?
        // A fault rule's error answers instead of the request, which is then not carried out.
        let fault = faults.decide(for: request, catalog: catalog)
        if let fault, fault.answersInstead {
            response = FaultInjector.refusal(fault.rule)
        } else {
            do {
                (response, allowed) = try route(request)
            } catch {
                response = APIResponse.error(for: error, request: request, logger: logger)
            }
        }
        // A later answer (a license) gets its headers and its fault once it is built.
        let methods = allowed.map(MockBackendApp.allowHeader) ?? "GET, HEAD, POST, OPTIONS"
        return response.mapped { response in
            var response = response
            APIResponse.addCORS(to: &response, allowedMethods: methods)
            if let fault { FaultInjector.apply(fault, to: &response) }
            return response
        }
    }

    /// Answers a request in-process, waiting for an answer that comes later: the way in for
    /// tests and tools without a socket (not for MHD's threads: `handle` is theirs).
    package func handleNow(_ request: HTTPRequest) -> HTTPResponse {
        handle(request).waitingForLaterAnswer()
    }

    /// Finds the request's handler and runs it. `allowed` is set when the path answers
    /// other methods than the one asked (an OPTIONS, a 405), for the CORS and `Allow` headers.
    private func route(_ request: HTTPRequest) throws -> (response: HTTPResponse, allowed: [String]?) {
        if request.method == "OPTIONS" {
            switch router.match(method: "OPTIONS", segments: request.pathSegments) {
            case .notFound:
                throw HTTPError.notFound(request)
            case .found(let handler, let parameters):
                return (try handler(self, request, parameters), nil)
            case .methodNotAllowed(let allowed):
                // A preflight or a plain OPTIONS: say what this resource answers to.
                var response = HTTPResponse(status: 204)
                response.headers.set("Allow", MockBackendApp.allowHeader(allowed))
                return (response, allowed)
            }
        }
        try checkAdminToken(request)
        try JSONBody.refuseNUL(in: request)
        switch router.match(method: request.method, segments: request.pathSegments) {
        case .found(let handler, let parameters):
            return (try handler(self, request, parameters), nil)
        case .methodNotAllowed(let allowed):
            var response = HTTPError(405, PlaybackAPIErrorCode.methodNotAllowed, nil,
                                     "\(request.method) is not allowed here; use \(allowed.joined(separator: ", "))").response
            response.headers.set("Allow", MockBackendApp.allowHeader(allowed))
            return (response, allowed)
        case .notFound:
            throw HTTPError.notFound(request)
        }
    }

    /// Refuses an admin request without the admin token with a 401; every other request passes.
    func checkAdminToken(_ request: HTTPRequest) throws(HTTPError) {
        guard request.pathSegments.first == "_admin" else { return }
        // An empty credential is no credential: never compared, whatever the token.
        let credentials = [PlaybackAuth.credential("Bearer", in: request.headers), request.headers["X-Admin-Token"]]
        guard let given = credentials.lazy.compactMap({ $0?.trimmingCharacters(in: .whitespaces) }).first(where: { !$0.isEmpty }) else {
            throw HTTPError(401, "UNAUTHORIZED", "ADMIN_TOKEN_REQUIRED",
                            "The admin API needs the admin token: send Authorization: Bearer TOKEN (mock-backend prints it at start)")
        }
        guard isAdminToken(given) else {
            throw HTTPError(401, "UNAUTHORIZED", "INVALID_ADMIN_TOKEN", "That is not this server's admin token")
        }
    }

    /// Whether `given` is the admin token, compared in constant time: the one check behind the
    /// admin API's header and the dashboard's sign-in. Empty is never the token.
    func isAdminToken(_ given: String) -> Bool {
        !given.isEmpty && SecureBytes.constantTimeEqual(Array(given.utf8), Array(adminToken.utf8))
    }

    /// Every route the app answers, one entry per method (GET's implied HEAD left out), in the
    /// order they were added; patterns are the router's (`:name` for a path parameter). The
    /// OpenAPI test holds them against docs/openapi.yaml.
    public var routePatterns: [(method: String, pattern: String)] { router.routeList }

    /// `GET, HEAD, …, OPTIONS` for a route's methods (the router lists HEAD wherever GET is):
    /// every method the route answers, the usual ones in the usual order, any other after them.
    static func allowHeader(_ methods: [String]) -> String {
        let order = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
        var all = Set(methods)
        all.insert("OPTIONS")
        return (order.filter(all.contains) + all.subtracting(order).sorted()).joined(separator: ", ")
    }
}
