import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C: the first one runs `first` (pause what is downloading, say how to go on); a second
/// one quits at once.
final class Interrupt {
    private let source: any DispatchSourceSignal

    init(first: @escaping @Sendable () async -> Void) {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let count = Counter()
        source.setEventHandler {
            if count.next() == 1 {
                Task { await first() }
            } else {
                warn("\nQuitting.")
                exit(ExitStatus.interrupted)
            }
        }
        source.resume()
        self.source = source
    }

    deinit {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }

    private final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func next() -> Int { value.add(1, ordering: .relaxed).newValue }
    }
}
