import Dispatch
import Foundation
import Logging
import MockBackend

/// SIGINT and SIGTERM stop the server gracefully: no new connections, requests in flight
/// finished, then exit 0. A second signal exits at once.
enum Signals {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []  // kept alive; touched only on the main thread

    static func stopOnTermination(server: MockBackendServer, logger: Logger) {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
            source.setEventHandler {
                logger.notice("stopping: finishing requests in flight")
                for other in [SIGINT, SIGTERM] { signal(other, SIG_DFL) }
                DispatchQueue.global().async {
                    server.shutdown(gracePeriod: .seconds(10))
                    logger.notice("stopped")
                    LogLineWriter.standardError.flush()
                    exit(0)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
