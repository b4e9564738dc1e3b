import Foundation
import Logging

/// One JSON object per line on stderr (through `LogLineWriter`): time, level, label, message and metadata.
struct JSONLogHandler: LogHandler {
    let label: String
    var writer: LogLineWriter = .standardError
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: String] = [
            "time": LogTimestamp.utc(),
            "level": event.level.rawValue,
            "label": label,
            "message": "\(event.message)",
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { object[key] = "\(value)" }
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        line.append(UInt8(ascii: "\n"))
        writer.append(line)
    }
}
