import Foundation
import Locking

/// Delivers events in order: to the delegate, then to every `events()` subscriber. One
/// dispatcher task reads an internal stream, so delivery never blocks the manager and
/// events never overtake each other.
final class EventHub: Sendable {
    private let input: AsyncStream<Item>.Continuation
    private let targets: Targets

    /// The delegate (held weakly, as Brightcove's manager does) and the subscribers.
    final class Targets: Sendable {
        let weakDelegate = Locked(WeakDelegate())
        let subscribers = Subscribers<OfflineVideoEvent>()

        var delegate: (any OfflineVideoManagerDelegate)? { weakDelegate.withLock { $0.value } }

        func deliver(_ event: OfflineVideoEvent) {
            if let delegate { event.deliver(to: delegate) }
            subscribers.yield(event)
        }
    }

    /// An event, or a mark whose continuation resumes once every event before it was delivered.
    private enum Item: Sendable {
        case event(OfflineVideoEvent)
        case delivered(CheckedContinuation<Void, Never>)
    }

    init() {
        let (stream, input) = AsyncStream.makeStream(of: Item.self, bufferingPolicy: .unbounded)
        self.input = input
        let targets = Targets()
        self.targets = targets
        Task.detached {
            for await item in stream {
                switch item {
                case .event(let event): targets.deliver(event)
                case .delivered(let continuation): continuation.resume()
                }
            }
            targets.subscribers.finish()
        }
    }

    deinit { input.finish() }

    var delegate: (any OfflineVideoManagerDelegate)? {
        get { targets.delegate }
        set { targets.weakDelegate.withLock { $0 = WeakDelegate(newValue) } }
    }

    /// Queues `event` for delivery, after every event emitted before it.
    func emit(_ event: OfflineVideoEvent) { input.yield(.event(event)) }

    /// Queues `event` and returns once the delegate has handled it and every subscriber has it.
    func emitAndWait(_ event: OfflineVideoEvent) async {
        input.yield(.event(event))
        await withCheckedContinuation { continuation in
            if case .terminated = input.yield(.delivered(continuation)) { continuation.resume() }
        }
    }

    /// A new subscriber's stream: every event emitted from now on.
    func subscribe() -> AsyncStream<OfflineVideoEvent> { targets.subscribers.subscribe() }
}

/// A weak reference to the delegate. Sendable because the delegate protocol is.
struct WeakDelegate: Sendable {
    weak var value: (any OfflineVideoManagerDelegate)?
    init(_ value: (any OfflineVideoManagerDelegate)? = nil) { self.value = value }
}
