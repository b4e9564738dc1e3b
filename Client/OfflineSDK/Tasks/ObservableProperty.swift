import Locking

/// A value that tells who watches it when it changes, in the manner of Quickplay's observable
/// task properties: add an observer with a handler of (old, new), remove it when done; or read
/// the changes as an async sequence.
///
/// ```swift
/// task.state.add(self) { old, new in print("\(old) → \(new)") }
/// task.state.remove(self)
/// for await percent in task.progress.values { bar.update(percent) }
/// ```
///
/// Handlers run one at a time, in the order of the changes, on no particular thread. An observer
/// is held weakly: one that goes away is dropped without `remove`. Setting an equal value is no change.
public final class ObservableProperty<Value: Sendable & Equatable>: Sendable {
    private struct Observer: Sendable {
        let owner: WeakObject
        let handler: @Sendable (_ old: Value, _ new: Value) -> Void
    }

    private let state: Locked<(value: Value, observers: [ObjectIdentifier: Observer])>
    private let streams = Subscribers<Value>()

    init(_ value: Value) {
        state = Locked((value, [:]))
    }

    /// The value now.
    public var value: Value { state.withLock { $0.value } }

    /// Calls `handler` with the old and new value on every change from now on, until
    /// ``remove(_:)`` or until `observer` is gone. Adding the same observer again replaces
    /// its handler.
    ///
    /// - Parameters:
    ///   - observer: Who watches: held weakly, and the key ``remove(_:)`` takes.
    ///   - handler: Called with the old and the new value on every change.
    public func add(_ observer: AnyObject, handler: @escaping @Sendable (_ old: Value, _ new: Value) -> Void) {
        state.withLock { $0.observers[ObjectIdentifier(observer)] = Observer(owner: WeakObject(observer), handler: handler) }
    }

    /// Stops calling `observer`'s handler.
    ///
    /// - Parameter observer: The observer given to ``add(_:handler:)``.
    public func remove(_ observer: AnyObject) {
        _ = state.withLock { $0.observers.removeValue(forKey: ObjectIdentifier(observer)) }
    }

    /// The value now, then every change, until the sequence is dropped.
    public var values: AsyncStream<Value> {
        // Under the value's lock, so a change made meanwhile comes after the value the sequence starts with.
        state.withLock { streams.subscribe(first: $0.value) }
    }

    /// Sets the value; on a change, tells the observers and the sequences. Returns whether it changed.
    /// Only one writer (the download manager's event handling) sets it, so changes are told in order.
    @discardableResult
    func set(_ new: Value) -> Bool {
        let told = state.withLock { state -> (old: Value, observers: [Observer])? in
            guard state.value != new else { return nil }
            let old = state.value
            state.value = new
            state.observers = state.observers.filter { $0.value.owner.object != nil }
            streams.yield(new)
            return (old, Array(state.observers.values))
        }
        guard let told else { return false }
        for observer in told.observers { observer.handler(told.old, new) }
        return true
    }

    /// Ends every sequence (the task is gone).
    func finish() { streams.finish() }
}

/// A weak reference to an observer, only ever compared with nil. Sendable because reading a
/// weak reference is thread-safe and the object itself is never touched.
struct WeakObject: @unchecked Sendable {
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
}
