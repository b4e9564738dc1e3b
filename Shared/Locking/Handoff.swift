/// A happens-before edge ThreadSanitizer can see, for values handed from one thread to another
/// through a path it cannot: a continuation resumed on a thread the Swift runtime does not own
/// (curl's engine thread) may be picked up by the awaiting task without any synchronization
/// the sanitizer knows of, so everything the giving thread wrote looked racy to it.
///
/// The giving thread calls `publish()` after its last write and before it hands the value
/// over; the receiving side calls `receive()` before its first read. Both take one process-wide
/// pthread mutex for an instant: the edge is real (the unlock comes before the lock), and cheap
/// next to the network request each hand-over ends.
public enum Handoff {
    /// A count of hand-overs: a real memory location written under the lock (an empty value
    /// has no address of its own, which the sanitizer's Swift access checks then mistook for
    /// an unguarded one).
    private static let fence = Locked(0)

    /// On the giving thread, after the last write to what is handed over.
    @inline(__always)
    public static func publish() { fence.withLock { $0 &+= 1 } }

    /// On the receiving side, before the first read of what was handed over.
    @inline(__always)
    public static func receive() { fence.withLock { _ = $0 } }
}
