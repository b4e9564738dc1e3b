// The offline export of protected CMAF, timed (benchmarks/cmaf-clear.sh runs it beside ffmpeg):
//   CMAFClear make DIR PASSES   writes a cbcs package of video/960x540 + audio/en, the fixture played PASSES
//                               times (2-second segments): DIR/{video,audio}/init.mp4 and seg_NNNNN.m4s, and
//                               DIR/{video,audio}.mp4 (init + every segment, what ffmpeg reads).
//   CMAFClear clear DIR OUT     reads the package segment by segment, clears it (ProtectionRemoval) and joins
//                               both tracks into OUT (FragmentedMP4Join), interleaved; prints the wall time.
import CMAF
import Foundation

let key: [UInt8] = Array(0x10 ... 0x1F)
let keyID: [UInt8] = Array(0x00 ... 0x0F)
let iv: [UInt8] = Array(0xA0 ... 0xAF)
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("fixtures/media/bars")

func readFile(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

func make(_ dir: String, passes: Int) throws {
    var passSeconds: Double?
    for (name, rendition) in [("video", "video/960x540"), ("audio", "audio/en")] {
        let segments = try (0 ..< 6).map { try readFile(fixtures.appendingPathComponent(String(format: "\(rendition)/seg_%03d.ts", $0)).path) }
        let track = try TrackRemuxer.demux(segments: segments)
        let pass = track.fragments(origin: 118_800)
        let seconds = passSeconds ?? Double(pass.reduce(0) { $0 + $1.duration }) / Double(track.format.timescale)
        passSeconds = seconds
        let repeated = RepeatedTrack(pass: pass, passLength: UInt64((seconds * Double(track.format.timescale)).rounded()), passCount: passes)
        let encryptor = try FragmentEncryptor(format: track.format, scheme: .cbcs, key: key, keyID: keyID, iv: iv, ivSalt: 1)
        let folder = "\(dir)/\(name)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let initSegment = InitSegment.bytes(track.format, protection: encryptor.protection())
        try Data(initSegment).write(to: URL(fileURLWithPath: "\(folder)/init.mp4"))
        guard let whole = fopen("\(dir)/\(name).mp4", "wb") else { throw CocoaError(.fileWriteUnknown) }
        defer { fclose(whole) }
        _ = initSegment.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, whole) }
        var sample: UInt64 = 0
        for index in 0 ..< repeated.count {
            let fragment = repeated.fragment(index)
            let (encrypted, info) = try encryptor.encrypt(fragment, firstSample: sample)
            sample += UInt64(fragment.samples.count)
            let bytes = MediaSegment.bytes(encrypted, sequenceNumber: UInt32(index + 1), encryption: info)
            try Data(bytes).write(to: URL(fileURLWithPath: String(format: "\(folder)/seg_%05d.m4s", index)))
            _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, whole) }
        }
    }
}

func clear(_ dir: String, output: String) throws {
    let start = ContinuousClock.now
    var inits: [[UInt8]] = [], infos: [ProtectedTrackInfo?] = [], counts: [Int] = []
    for name in ["video", "audio"] {
        let (clearInit, info) = try ProtectionRemoval.clearInit(readFile("\(dir)/\(name)/init.mp4"))
        inits.append(clearInit)
        infos.append(info)
        counts.append(try FileManager.default.contentsOfDirectory(atPath: "\(dir)/\(name)").filter { $0.hasPrefix("seg_") }.count)
    }
    let ciphers = try infos.map { _ in try SampleCipher(key: key) }
    // The export lasts as long as its segments do: 2 s each here.
    var join = try FragmentedMP4Join(initSegments: inits, duration: UInt64(counts.max() ?? 0) * 2000, timescale: 1000)
    guard let file = fopen(output, "wb") else { throw CocoaError(.fileWriteUnknown) }
    defer { fclose(file) }
    _ = join.initSegment.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    var written = join.initSegment.count
    for index in 0 ..< (counts.max() ?? 0) {
        for (track, name) in ["video", "audio"].enumerated() where index < counts[track] {
            let input = try readFile(String(format: "\(dir)/\(name)/seg_%05d.m4s", index))
            let clear = try infos[track].map { try ProtectionRemoval.clearSegment(input, protection: $0, cipher: ciphers[track]) } ?? input
            let joined = try join.segment(clear, track: track)
            _ = joined.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
            written += joined.count
        }
    }
    let elapsed = ContinuousClock.now - start
    print("cleared and joined \(counts) segments, \(written) bytes, in \(elapsed)")
}

let arguments = CommandLine.arguments
switch arguments.count > 1 ? arguments[1] : "" {
case "make" where arguments.count == 4: try make(arguments[2], passes: Int(arguments[3]) ?? 1)
case "clear" where arguments.count == 4: try clear(arguments[2], output: arguments[3])
default: print("usage: CMAFClear make DIR PASSES | CMAFClear clear DIR OUT"); exit(2)
}
