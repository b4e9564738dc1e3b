import Foundation
import MicroHTTP
import WireModels

/// The analytics collector: `POST /tracker` takes a batch of client events (a JSON array of
/// `TrackerEvent`) and stores each id once; the admin API lists them
/// (`GET /_admin/v1/tracker/events`) and forgets them (`DELETE`, and `POST /_admin/v1/reset`).
/// Fault rules aim at it as route `tracker`. It reads the store's events and the clock, nothing else.
struct TrackerRoutes: Sendable {
    /// Where the events are kept.
    let tracker: any TrackerStorage
    /// When an event arrived.
    let clock: BackendClock

    func add(to router: inout Router<MockBackendApp>) {
        router.add(["POST"], "/tracker") { _, request, _ in
            let events = try TrackerRoutesParsing.batch(request.body)
            let new = try CatalogEditError.storage { try tracker.record(events, receivedAt: clock.now()) }
            return APIResponse.json(TrackerReceipt(received: events.count, new: new))
        }
        router.add(["GET"], "/_admin/v1/tracker/events") { _, request, _ in
            let limit = try request.listingLimit()
            let filter = TrackerFilter(accountID: request.queryValue("account"), videoID: request.queryValue("video"),
                                       event: request.queryValue("event"), token: request.queryValue("token"),
                                       session: request.queryValue("session"))
            let (events, total) = try CatalogEditError.storage { try tracker.events(filter, limit: limit) }
            struct Listing: Encodable { var events: [RecordedTrackerEvent]; var total: Int }
            return APIResponse.json(Listing(events: events, total: total))
        }
        router.add(["DELETE"], "/_admin/v1/tracker/events") { _, _, _ in
            try CatalogEditError.storage { try tracker.clearTrackerEvents() }
            return HTTPResponse(status: 204)
        }
    }
}

/// Reading a `POST /tracker` body: every refusal a 400 naming the event and field to fix.
enum TrackerRoutesParsing {
    static let example = #"[{"id":"6c1f…","event":"play_started","video_id":"6415818918101","account_id":"6415818918001","time":"2026-11-25T17:00:00.000Z","position":0}]"#

    /// The events of a batch: 1 to `TrackerEvent.maximumBatch` of them, each valid.
    static func batch(_ body: [UInt8]) throws(HTTPError) -> [TrackerEvent] {
        guard !body.isEmpty, (try? JSONSerialization.jsonObject(with: Data(body))) is [Any] else {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_BODY", "Send a JSON array of events, e.g. \(example)")
        }
        if let member = JSONBody.nullMember(in: body) {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_EVENT", "event \(member) may not be null: leave it out")
        }
        let events: [TrackerEvent]
        do {
            events = try WireJSON.decoder().decode([TrackerEvent].self, from: Data(body))
        } catch let error as DecodingError {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_EVENT", "event " + JSONBody.describe(error))
        } catch {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_EVENT", "\(error)")
        }
        guard (1...TrackerEvent.maximumBatch).contains(events.count) else {
            throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_BODY",
                            "Send 1 to \(TrackerEvent.maximumBatch) events in a batch, not \(events.count)")
        }
        for (index, event) in events.enumerated() {
            if let problem = event.problem {
                throw HTTPError(400, PlaybackAPIErrorCode.badRequest, "INVALID_EVENT", "event [\(index)]: \(problem)")
            }
        }
        return events
    }
}
