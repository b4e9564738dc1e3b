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
        let state = Locked<(delegate: WeakDelegate, subscribers: [UInt64: AsyncStream<OfflineVideoEvent>.Continuation], next: UInt64)>(
            (WeakDelegate(), [:], 0))

        var delegate: (any OfflineVideoManagerDelegate)? { state.withLock { $0.delegate.value } }

        func deliver(_ event: OfflineVideoEvent) {
            let (delegate, subscribers) = state.withLock { ($0.delegate.value, Array($0.subscribers.values)) }
            if let delegate { event.deliver(to: delegate) }
            for subscriber in subscribers { subscriber.yield(event) }
        }

        func finish() {
            let subscribers = state.withLock { state in
                defer { state.subscribers = [:] }
                return Array(state.subscribers.values)
            }
            for subscriber in subscribers { subscriber.finish() }
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
            targets.finish()
        }
    }

    deinit { input.finish() }

    var delegate: (any OfflineVideoManagerDelegate)? {
        get { targets.delegate }
        set { targets.state.withLock { $0.delegate = WeakDelegate(newValue) } }
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
    func subscribe() -> AsyncStream<OfflineVideoEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: OfflineVideoEvent.self, bufferingPolicy: .unbounded)
        let id = targets.state.withLock { state -> UInt64 in
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak targets] _ in
            _ = targets?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }
}

/// A weak reference to the delegate. Sendable because the delegate protocol is.
struct WeakDelegate: Sendable {
    weak var value: (any OfflineVideoManagerDelegate)?
    init(_ value: (any OfflineVideoManagerDelegate)? = nil) { self.value = value }
}
