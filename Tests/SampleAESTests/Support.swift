import Foundation
@testable import SampleAES

/// The fixture segments under fixtures/media/bars, found from this file's location.
enum Fixtures {
    static var media: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("fixtures/media/bars")
    }

    /// "video/416x234/seg_000.ts", … for every video rendition and audio language.
    static let segments: [String] = {
        var names: [String] = []
        for directory in ["video/416x234", "video/640x360", "video/960x540", "audio/en", "audio/fr", "audio/es"] {
            for index in 0 ..< 6 { names.append("\(directory)/seg_00\(index).ts") }
        }
        return names
    }()

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: media.appendingPathComponent(name)))
    }

    static let key: [UInt8] = Array(0 ..< 16).map { UInt8($0 * 7 + 3) }
    static let iv: [UInt8] = Array(0 ..< 16).map { UInt8(0xA0 + $0) }
}

/// A test-side reading of a transport stream, written independently of the encryptor's
/// re-packetizer: packets per PID, PES packets reassembled from payload_unit_start.
struct Demuxed {
    struct Packet {
        var pid: Int
        var start: Bool
        var counter: Int
        var hasPayload: Bool
        var payload: [UInt8]
    }

    var packets: [Packet] = []
    /// PES packets per PID, in order, whole (header included).
    var pes: [Int: [[UInt8]]] = [:]

    init(_ bytes: [UInt8]) {
        for offset in stride(from: 0, to: bytes.count, by: 188) {
            let p = Array(bytes[offset ..< offset + 188])
            let control = (p[3] >> 4) & 3
            var start = 4
            if control & 2 != 0 { start = 5 + Int(p[4]) }
            let payload = control & 1 != 0 && start < 188 ? Array(p[start...]) : []
            packets.append(Packet(pid: Int(p[1] & 0x1F) << 8 | Int(p[2]), start: p[1] & 0x40 != 0,
                                  counter: Int(p[3] & 0x0F), hasPayload: control & 1 != 0, payload: payload))
        }
        for packet in packets where packet.pid >= 0x100 && packet.pid != 0x1000 && !packet.payload.isEmpty {
            if packet.start { pes[packet.pid, default: []].append(packet.payload) }
            else if var list = pes[packet.pid], !list.isEmpty {
                list[list.count - 1] += packet.payload
                pes[packet.pid] = list
            }
        }
    }

    /// The elementary stream bytes of every PES of `pid`.
    func elementaryStreams(_ pid: Int) -> [[UInt8]] {
        (pes[pid] ?? []).map { Array($0[(9 + Int($0[8]))...]) }
    }

    /// The PMT section (table_id through CRC) from the first packet of PID 0x1000.
    var pmtSection: [UInt8]? {
        guard let packet = packets.first(where: { $0.pid == 0x1000 && $0.start }) else { return nil }
        let start = 1 + Int(packet.payload[0])
        let length = 3 + (Int(packet.payload[start + 1] & 0x0F) << 8 | Int(packet.payload[start + 2]))
        return Array(packet.payload[start ..< start + length])
    }
}
