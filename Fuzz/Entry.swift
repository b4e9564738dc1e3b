import Foundation

// Two builds of one executable:
//
// - `-sanitize=fuzzer,address -DFUZZING` (scripts/fuzz.sh): libFuzzer's driver runs
//   `LLVMFuzzerTestOneInput` below with the target named by FUZZ_TARGET. SwiftPM links every
//   executable with `main` aliased to `FuzzTargets_main`, so libFuzzer's own `main` is never
//   linked in: `FuzzTargets_main` hands the command line to `LLVMFuzzerRunDriver` instead.
// - a plain build (what CI builds): a replayer, `FuzzTargets TARGET FILE…`, that runs saved
//   inputs (crashes, corpus files) through the same code without the sanitizers.
//
// Both answer `--make-seeds TARGET DIR [FILE…]` (valid SPCs, CKCs and stored licenses for the
// fixed identity in LicenseFixtures; SAMPLE-AES segments from clear ones) and `--list`.

/// The libFuzzer entry point: one input through the target FUZZ_TARGET names (read once).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.selected.run(UnsafeBufferPointer(start: data, count: size))
    return 0
}

#if FUZZING
@_extern(c, "LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

@_cdecl("FuzzTargets_main")
func fuzzTargetsMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    if let status = Tools.run(CommandLine.arguments) { return status }
    _ = FuzzTarget.selected  // fail before libFuzzer starts if FUZZ_TARGET is wrong
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
}
#else
@main
enum Replay {
    static func main() {
        if let status = Tools.run(CommandLine.arguments) { exit(status) }
        var arguments = Array(CommandLine.arguments.dropFirst())
        if ProcessInfo.processInfo.environment["FUZZ_TARGET"] == nil, let first = arguments.first {
            setenv("FUZZ_TARGET", first, 1)
            arguments.removeFirst()
        }
        guard !arguments.isEmpty else {
            FileHandle.standardError.write(Data("usage: FuzzTargets TARGET FILE… (or FUZZ_TARGET=TARGET FuzzTargets FILE…)\n".utf8))
            exit(64)
        }
        let target = FuzzTarget.selected
        for path in arguments {
            guard let bytes = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(66)
            }
            Array(bytes).withUnsafeBufferPointer { target.run($0) }
            print("\(target.name): \(path) ok")
        }
    }
}
#endif

/// The commands both builds share.
enum Tools {
    /// Runs `--list` or `--make-seeds TARGET DIR [FILE…]` and returns the exit status, or nil for anything else.
    static func run(_ arguments: [String]) -> CInt? {
        guard arguments.count >= 2 else { return nil }
        switch arguments[1] {
        case "--list":
            for target in FuzzTarget.all { print(target.name) }
            return 0
        case "--make-seeds":
            guard arguments.count >= 4 else {
                FileHandle.standardError.write(Data("usage: FuzzTargets --make-seeds TARGET DIR [FILE…]\n".utf8))
                return 64
            }
            do {
                let inputs = arguments.dropFirst(4).map { URL(fileURLWithPath: $0) }
                let count = try Seeds.write(target: arguments[2], to: URL(fileURLWithPath: arguments[3]), inputs: inputs)
                print("wrote \(count) seeds for \(arguments[2]) to \(arguments[3])")
                return 0
            } catch {
                FileHandle.standardError.write(Data("cannot make seeds: \(error)\n".utf8))
                return 1
            }
        default:
            return nil
        }
    }
}
