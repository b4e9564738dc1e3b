/// The streams handed to an object's subscribers: one `AsyncStream` each, kept by id behind a
/// lock and removed when its subscriber drops it (the way swift-configuration keeps its watchers).
///
/// An owner with state of its own (a value that a new subscriber starts with) may call
/// `subscribe` and `yield` while holding its own lock, so that the first element and the
/// changes after it arrive in order: this type takes its lock only for an instant and calls
/// nothing while it holds it, so the lock order is always the owner's, then this one.
///
/// ```swift
/// let subscribers = Subscribers<Event>()
/// for await event in subscribers.subscribe() { … }   // a subscriber
/// subscribers.yield(event)                            // the owner
/// ```
package final class Subscribers<Element: Sendable>: Sendable {
    private let state = Locked<(streams: [UInt64: AsyncStream<Element>.Continuation], next: UInt64)>(([:], 0))

    /// No subscriber yet.
    package init() {}

    /// A new subscriber's stream: `first` when given, then every element yielded from now on,
    /// until the subscriber drops the stream or `finish()`.
    package func subscribe(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded,
                           first: Element? = nil) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        if let first { continuation.yield(first) }
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            state.streams[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Hands `element` to every subscriber; it never waits for one to read.
    package func yield(_ element: Element) {
        for continuation in state.withLock({ Array($0.streams.values) }) { continuation.yield(element) }
    }

    /// Ends every subscriber's stream (the owner is gone).
    package func finish() {
        let streams = state.withLock { state in
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for continuation in streams { continuation.finish() }
    }
}
