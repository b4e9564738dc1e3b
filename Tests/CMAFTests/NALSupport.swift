import Foundation
@testable import CMAF
import SampleAES
import TestKit
import Testing

/// The committed media fixtures under fixtures/media/bars, found from this file's location.
enum MediaFixtures {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("fixtures/media/bars")
    }

    static let renditions = ["video/416x234", "video/640x360", "video/960x540"]

    /// Every video segment of every rendition: "video/416x234/seg_000.ts", ….
    static let videoSegments: [String] = renditions.flatMap { rendition in (0 ..< 6).map { "\(rendition)/seg_00\($0).ts" } }

    static func path(_ name: String) -> String { root.appendingPathComponent(name).path }

    static func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: root.appendingPathComponent(name))) }
}

/// The code of the CMAFError `body` throws; nil when it throws nothing (or another error,
/// which is then recorded as an issue).
func cmafErrorCode(_ body: () throws -> Void) -> CMAFError.Code? {
    do {
        try body()
    } catch let error as CMAFError {
        return error.code
    } catch {
        Issue.record("not a CMAFError: \(error)")
    }
    return nil
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Video samples taken out of a transport stream segment with the SampleAES package's TS
/// and PES readers: one access unit per PES packet, its NAL units split at start codes.
enum TransportStreamVideo {
    /// The NAL units (stored bytes, no start codes) of each H.264 access unit of `segment`.
    static func accessUnits(_ segment: [UInt8]) throws -> [[[UInt8]]] {
        let packets = try TransportStream.packets(of: segment)
        guard let pat = packets.first(where: { $0.pid == 0 && $0.payloadUnitStart }) else { throw TestFailure("no PAT") }
        let pmtPIDs = Set(try ProgramSection(in: pat, expectedTableID: 0x00).programMapPIDs)
        guard let pmtPacket = packets.first(where: { pmtPIDs.contains($0.pid) && $0.payloadUnitStart }) else { throw TestFailure("no PMT") }
        let map = try ProgramMap(ProgramSection(in: pmtPacket, expectedTableID: 0x02).bytes)
        guard let video = map.streams.first(where: { $0.streamType == StreamType.h264 }) else { throw TestFailure("no H.264 stream") }
        return try PESUnit.units(pid: video.pid, in: packets).map { unit in
            let pes = unit.bytes(in: packets)
            let header = try PESHeader(pes, pid: video.pid)
            return AnnexB.units(Array(pes[header.length...]))
        }
    }

    /// The access units of `segment` in MP4 form (4-byte lengths before the NAL units).
    static func samples(_ segment: [UInt8]) throws -> [[UInt8]] { try accessUnits(segment).map(AnnexB.lengthPrefixed) }
}

/// Annex B byte streams, test side.
enum AnnexB {
    /// The NAL units of `stream`, split at 3- and 4-byte start codes (SampleAES's splitter).
    static func units(_ stream: [UInt8]) -> [[UInt8]] {
        H264SampleEncryption.nalUnits(stream).map { Array(stream[$0.start ..< $0.end]) }
    }

    /// `units` in MP4 form: each with its length as 4 big-endian bytes before it.
    static func lengthPrefixed(_ units: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for unit in units {
            let n = UInt32(unit.count)
            out += [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + unit
        }
        return out
    }

    /// An Annex B stream of `units` with 4-byte start codes.
    static func stream(_ units: [[UInt8]]) -> [UInt8] { units.flatMap { [0, 0, 0, 1] + $0 } }

    /// The number of stored bytes holding the first `rbspBytes` RBSP bytes of `nal`,
    /// counted the plain way: walk the stored bytes, skipping each 03 after two zeros.
    static func storedCount(_ nal: [UInt8], rbspBytes: Int) -> Int {
        var zeros = 0, produced = 0, index = 0
        while produced < rbspBytes, index < nal.count {
            let byte = nal[index]
            index += 1
            if zeros >= 2, byte == 3 { zeros = 0; continue }
            produced += 1
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return index
    }
}

/// One syntax structure as ffmpeg's trace_headers bitstream filter printed it: its name
/// ("Slice Header") and its fields with their bit positions (in the RBSP, from the NAL
/// header's first bit), bit strings and values.
struct TracedStructure {
    struct Field {
        var position: Int
        var name: String
        var bits: String
        var value: Int
    }

    var name: String
    var fields: [Field] = []

    /// One past the last bit the structure's fields cover.
    var endBit: Int { fields.last.map { $0.position + $0.bits.count } ?? 0 }

    func value(_ name: String) -> Int? { fields.first { $0.name == name }?.value }
}

/// Runs `ffmpeg -bsf:v trace_headers` and reads its log.
enum HeaderTrace {
    /// Every structure traced for the video stream of `file`, in stream order.
    static func structures(of file: String) async throws -> [TracedStructure] {
        let output = try await Run.process("/usr/bin/ffmpeg", [
            "-nostdin", "-nostats", "-hide_banner", "-v", "info", "-i", file, "-map", "0:v:0", "-c", "copy",
            "-bsf:v", "trace_headers", "-f", "null", "-",
        ])
        guard output.exitCode == 0 else { throw TestFailure("ffmpeg trace_headers failed: \(output.stderrText.suffix(2000))") }
        return parse(output.stderrText)
    }

    /// The structures in a trace_headers log: a line "[trace_headers @ 0x…] Name" opens
    /// one, lines "[trace_headers @ 0x…] <bit> <field> <bits> = <value>" are its fields.
    static func parse(_ log: String) -> [TracedStructure] {
        var structures: [TracedStructure] = []
        var current: TracedStructure?
        for line in log.split(separator: "\n") {
            guard line.hasPrefix("[trace_headers @"), let close = line.firstIndex(of: "]") else { continue }
            let body = line[line.index(after: close)...].trimmingCharacters(in: .whitespaces)
            let words = body.split(separator: " ", omittingEmptySubsequences: true)
            if words.count >= 5, let position = Int(words[0]), words[words.count - 2] == "=",
               let value = Int(words[words.count - 1]), words[words.count - 3].allSatisfy({ $0 == "0" || $0 == "1" }) {
                current?.fields.append(.init(position: position, name: String(words[1]), bits: String(words[words.count - 3]), value: value))
            } else {
                if let done = current { structures.append(done) }
                current = TracedStructure(name: body)
            }
        }
        if let done = current { structures.append(done) }
        return structures
    }
}

/// Encoders and tools, run the way the other test targets run them.
enum Tools {
    /// Runs ffmpeg with `arguments` (quiet, no stdin), failing the test when it fails.
    static func ffmpeg(_ arguments: [String]) async throws {
        let output = try await Run.process("/usr/bin/ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-y"] + arguments)
        guard output.exitCode == 0 else { throw TestFailure("ffmpeg \(arguments.joined(separator: " ")): \(output.stderrText)") }
    }

    /// An x265 stream of a 320x180 test pattern, 25 fps, `seconds` long, GOP 25 with two
    /// B-frames, one thread (deterministic), written as raw Annex B to `file`.
    /// `extra` x265 parameters come after the defaults (a later one wins: "pools=1" gives
    /// wavefront coding a thread pool); `pixelFormat` picks 4:4:4, 10-bit, monochrome….
    static func x265(_ file: URL, seconds: Int = 2, extra: String = "", pixelFormat: String = "yuv420p") async throws {
        try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=\(seconds)", "-pix_fmt", pixelFormat, "-c:v", "libx265",
                          "-x265-params", "pools=none:frame-threads=1:log-level=error" + (extra.isEmpty ? "" : ":" + extra),
                          "-tag:v", "hvc1", "-g", "25", "-bf", "2", "-f", "hevc", file.path])
    }

    /// An x264 stream of a 320x180 test pattern, 25 fps, 1 s, with `options` (ffmpeg
    /// arguments for libx264), written as raw Annex B to `file`.
    static func x264(_ file: URL, _ options: [String]) async throws {
        try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=1", "-c:v", "libx264", "-threads", "1"]
            + options + ["-f", "h264", file.path])
    }

    /// `openssl enc` of `input` with `cipher` (-aes-128-cbc, -aes-128-ctr), no padding.
    static func openssl(_ cipher: String, key: [UInt8], iv: [UInt8], decrypt: Bool = false, _ input: [UInt8]) async throws -> [UInt8] {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let inFile = scratch.url.appendingPathComponent("in"), outFile = scratch.url.appendingPathComponent("out")
        try Data(input).write(to: inFile)
        let output = try await Run.process("/usr/bin/openssl", ["enc", cipher, decrypt ? "-d" : "-e", "-nopad", "-K", hex(key), "-iv", hex(iv),
                                                                "-in", inFile.path, "-out", outFile.path])
        guard output.exitCode == 0 else { throw TestFailure("openssl \(cipher): \(output.stderrText)") }
        return Array(try Data(contentsOf: outFile))
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
