import ArgumentParser
import Foundation

/// A duration written as a person writes it: `30d`, `48h`, `90m`, `45s`, or combined (`1d12h`);
/// a bare number is seconds.
struct DurationArgument: ExpressibleByArgument, Sendable, Equatable {
    let seconds: TimeInterval

    init(seconds: TimeInterval) { self.seconds = seconds }

    init?(argument: String) {
        guard let seconds = DurationArgument.parse(argument) else { return nil }
        self.seconds = seconds
    }

    static func parse(_ text: String) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard !trimmed.isEmpty else { return nil }
        if let plain = Double(trimmed) { return plain > 0 ? plain : nil }
        var total: TimeInterval = 0
        var number = ""
        for character in trimmed {
            if character.isNumber || character == "." {
                number.append(character)
                continue
            }
            let unit: TimeInterval
            switch character {
            case "d": unit = 86400
            case "h": unit = 3600
            case "m": unit = 60
            case "s": unit = 1
            default: return nil
            }
            guard let value = Double(number) else { return nil }
            total += value * unit
            number = ""
        }
        guard number.isEmpty, total > 0 else { return nil }
        return total
    }

    static var defaultCompletionKind: CompletionKind { .default }
}
