import Logging

/// swift-log's stream format (`2026-11-27T20:00:00+0000 info mock-backend: ms=0.4 [MicroHTTP] GET /… 200 1234`),
/// one line per event through `LogLineWriter`: formatted on the logging thread, written by the
/// writer's, so a request never waits on stderr.
struct TextLogHandler: LogHandler {
    let label: String
    let writer: LogLineWriter
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:] {
        didSet { prettyMetadata = Self.prettify(metadata) }
    }
    private var prettyMetadata: String?

    init(label: String, writer: LogLineWriter = .standardError) {
        self.label = label
        self.writer = writer
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let pretty = event.metadata.flatMap { $0.isEmpty ? nil : Self.prettify(metadata.merging($0, uniquingKeysWith: { $1 })) }
            ?? prettyMetadata
        var line = "\(LogTimestamp.local()) \(event.level)\(label.isEmpty ? "" : " ")\(label):\(pretty.map { " \($0)" } ?? "") [\(event.source)] \(event.message)\n"
        line.withUTF8 { writer.append($0) }
    }

    private static func prettify(_ metadata: Logger.Metadata) -> String? {
        metadata.isEmpty ? nil : metadata.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " ")
    }
}
