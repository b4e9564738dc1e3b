import Foundation

/// One parser under fuzzing: a name (FUZZ_TARGET, the corpus folder) and what one input does.
///
/// A target returns normally for every input a parser may refuse; it traps only where the code
/// under test traps, or where an invariant the parser promises is broken (`FuzzCheck`).
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable (UnsafeBufferPointer<UInt8>) -> Void

    static let all: [FuzzTarget] = [
        PlaylistTargets.master, PlaylistTargets.media, TokenTarget.target, PlaybackJSONTarget.target,
        LicenseTargets.spc, LicenseTargets.ckc, LicenseTargets.crt, LicenseTargets.storedLicense,
        SampleAESTarget.target, CMAFTarget.target, RequestTargetTarget.target,
    ]

    /// The target FUZZ_TARGET names; exits with the list of names if it names none.
    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = all.first(where: { $0.name == name }) else {
            let names = all.map(\.name).joined(separator: " ")
            FileHandle.standardError.write(Data("FUZZ_TARGET must be one of: \(names) (got \"\(name)\")\n".utf8))
            exit(64)
        }
        return target
    }()
}

/// Invariants the fuzz targets check beyond "does not trap".
enum FuzzCheck {
    /// Traps with `message` when `condition` is false: libFuzzer then saves the input as a crash.
    static func expect(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() {
            FileHandle.standardError.write(Data("fuzz invariant broken: \(message())\n".utf8))
            abort()
        }
    }
}

/// Small helpers for carving structured inputs out of fuzz bytes.
struct FuzzInput {
    private(set) var bytes: ArraySlice<UInt8>

    init(_ buffer: UnsafeBufferPointer<UInt8>) { bytes = Array(buffer)[...] }

    /// The first byte (0 when empty), consumed.
    mutating func byte() -> UInt8 { bytes.popFirst() ?? 0 }

    /// A big-endian UInt16 (missing bytes read as 0), consumed.
    mutating func uint16() -> Int { Int(byte()) << 8 | Int(byte()) }

    /// Up to `count` bytes, consumed.
    mutating func take(_ count: Int) -> [UInt8] {
        let taken = Array(bytes.prefix(count))
        bytes = bytes.dropFirst(count)
        return taken
    }

    /// Everything left, consumed.
    mutating func rest() -> [UInt8] { take(bytes.count) }
}
