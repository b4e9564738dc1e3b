import Foundation
import Testing
import WireModels

@Suite("Wire timestamps")
struct WireDateTests {
    @Test("formatting always writes milliseconds and Z", arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1_709_294_400.123, "2024-03-01T12:00:00.123Z"),
        (951_782_400, "2000-02-29T00:00:00.000Z"),
        (4_102_444_799.9996, "2100-01-01T00:00:00.000Z"),
        (-1.5, "1969-12-31T23:59:58.500Z"),
    ])
    func formatting(seconds: Double, expected: String) {
        #expect(WireDate.string(from: Date(timeIntervalSince1970: seconds)) == expected)
    }

    @Test("parsing accepts fractions of any length, offsets, and no fraction", arguments: [
        ("2024-03-01T12:00:00Z", 1_709_294_400.0),
        ("2024-03-01T12:00:00.123Z", 1_709_294_400.123),
        ("2024-03-01T12:00:00.5Z", 1_709_294_400.5),
        ("2024-03-01T12:00:00.123456Z", 1_709_294_400.123456),
        ("2024-03-01T14:00:00+02:00", 1_709_294_400.0),
        ("2024-03-01T07:30:00-0430", 1_709_294_400.0),
    ])
    func parsing(text: String, seconds: Double) {
        #expect(WireDate.date(from: text) == Date(timeIntervalSince1970: seconds))
    }

    @Test("parsing rejects what is not a timestamp", arguments: [
        "", "2024-03-01", "2024-03-01T12:00:00", "2024-13-01T12:00:00Z", "2024-03-01T12:00:00.Z",
        "2024-03-01 12:00:00Z", "2024-03-01T12:00:00Zjunk",
    ])
    func rejects(text: String) {
        #expect(WireDate.date(from: text) == nil)
    }
}
