import SampleAES

/// Multiplexes a video rendition's clear MPEG-TS segments with an audio rendition's into one
/// transport stream, segment pair by segment pair: the video's PAT, one PMT listing the video
/// and the audio streams (the audio moved to PIDs the video does not use), and the elementary
/// stream packets of both interleaved by decoding time. Continuity counters are renumbered per
/// PID over the whole output, so the result reads as one continuous stream. Works on the packet
/// bytes in place (no per-packet objects): exports run at disk speed.
struct TransportStreamMux {
    private var counters = [UInt8](repeating: 0, count: 0x2000)
    private var audioPIDs: [Int: Int] = [:]

    /// The output for one segment of video and the audio segment covering the same time.
    mutating func mux(video: [UInt8], audio: [UInt8]) throws(SampleAESError) -> [UInt8] {
        let videoTables = try Tables(video)
        let audioTables = try Tables(audio)
        // Audio PIDs: the audio's own, moved above the video's when they collide (they usually
        // do: muxers number the first stream of each file 0x100).
        let taken = Set(videoTables.map.streams.map(\.pid) + [0, videoTables.pmtPID])
        var next = (taken.max() ?? 0x100) + 1
        for stream in audioTables.map.streams where audioPIDs[stream.pid] == nil {
            if taken.contains(stream.pid) || audioPIDs.values.contains(stream.pid) {
                while taken.contains(next) || audioPIDs.values.contains(next) { next += 1 }
                audioPIDs[stream.pid] = next
            } else {
                audioPIDs[stream.pid] = stream.pid
            }
        }
        var map = videoTables.map
        for var stream in audioTables.map.streams {
            let pid = audioPIDs[stream.pid] ?? stream.pid
            stream.pidBytes = [stream.pidBytes[0] & 0xE0 | UInt8(pid >> 8), UInt8(pid & 0xFF)]
            map.streams.append(stream)
        }

        let videoPackets = Self.timedPackets(video, streams: Set(videoTables.map.streams.map(\.pid)))
        let audioPackets = Self.timedPackets(audio, streams: Set(audioTables.map.streams.map(\.pid)))
        // Every output packet written once, straight into the output's storage.
        let size = TransportPacket.size
        return [UInt8](unsafeUninitializedCapacity: (2 + videoPackets.count + audioPackets.count) * size) { out, written in
            let target = out.baseAddress!
            write(section: videoTables.patSection, pid: 0, to: target)
            write(section: map.section, pid: videoTables.pmtPID, to: target + size)
            var next = target + 2 * size
            video.withUnsafeBufferPointer { video in
                audio.withUnsafeBufferPointer { audio in
                    var v = 0, a = 0
                    while v < videoPackets.count || a < audioPackets.count {
                        let takeVideo = a == audioPackets.count || (v < videoPackets.count && videoPackets[v].time <= audioPackets[a].time)
                        if takeVideo {
                            copy(packet: video.baseAddress! + videoPackets[v].offset, pid: videoPackets[v].pid, to: next)
                            v += 1
                        } else {
                            let pid = audioPackets[a].pid
                            copy(packet: audio.baseAddress! + audioPackets[a].offset, pid: audioPIDs[pid] ?? pid, to: next)
                            a += 1
                        }
                        next += size
                    }
                }
            }
            written = next - target
        }
    }

    /// A segment's PAT section, its PMT's PID and the PMT taken apart.
    private struct Tables {
        var patSection: [UInt8]
        var pmtPID: Int
        var map: ProgramMap

        init(_ segment: [UInt8]) throws(SampleAESError) {
            let packets = try TransportStream.packets(of: Array(segment.prefix(16 * TransportPacket.size)))
            guard let pat = packets.first(where: { $0.pid == 0 && $0.payloadUnitStart }) else {
                throw SampleAESError(.malformedProgramTable, "the segment has no PAT in its first packets")
            }
            let patSection = try ProgramSection(in: pat, expectedTableID: 0x00)
            guard let pmtPID = patSection.programMapPIDs.first,
                  let pmt = packets.first(where: { $0.pid == pmtPID && $0.payloadUnitStart }) else {
                throw SampleAESError(.malformedProgramTable, "the segment has no PMT in its first packets")
            }
            self.patSection = patSection.bytes
            self.pmtPID = pmtPID
            map = try ProgramMap(try ProgramSection(in: pmt, expectedTableID: 0x02).bytes)
        }
    }

    /// The elementary-stream packets of `segment` (PIDs in `streams`), each with the decoding
    /// time of the PES it belongs to (DTS, else PTS; 0 before the first).
    private static func timedPackets(_ segment: [UInt8], streams: Set<Int>) -> [(offset: Int, pid: Int, time: UInt64)] {
        var result: [(offset: Int, pid: Int, time: UInt64)] = []
        result.reserveCapacity(segment.count / TransportPacket.size)
        // Few streams: their PIDs and current times side by side, searched linearly.
        let pids = Array(streams)
        var current = [UInt64](repeating: 0, count: pids.count)
        segment.withUnsafeBufferPointer { bytes in
            var offset = 0
            while offset + TransportPacket.size <= bytes.count {
                defer { offset += TransportPacket.size }
                let pid = Int(bytes[offset + 1] & 0x1F) << 8 | Int(bytes[offset + 2])
                guard let slot = pids.firstIndex(of: pid) else { continue }
                if bytes[offset + 1] & 0x40 != 0, let time = pesTime(bytes, packet: offset) { current[slot] = time }
                result.append((offset, pid, current[slot]))
            }
        }
        return result
    }

    /// The DTS (else PTS) of the PES header starting in the packet at `packet`, if any.
    private static func pesTime(_ bytes: UnsafeBufferPointer<UInt8>, packet: Int) -> UInt64? {
        let control = (bytes[packet + 3] >> 4) & 0x03
        guard control & 0x01 != 0 else { return nil }
        let start = packet + (control & 0x02 != 0 ? 5 + Int(bytes[packet + 4]) : 4)
        let end = packet + TransportPacket.size
        guard start + 14 <= end, bytes[start] == 0, bytes[start + 1] == 0, bytes[start + 2] == 1 else { return nil }
        let flags = bytes[start + 7] >> 6
        func timestamp(at index: Int) -> UInt64 {
            UInt64(bytes[index] & 0x0E) << 29 | UInt64(bytes[index + 1]) << 22 | UInt64(bytes[index + 2] & 0xFE) << 14
                | UInt64(bytes[index + 3]) << 7 | UInt64(bytes[index + 4] >> 1)
        }
        switch flags {
        case 0b11 where start + 19 <= end: return timestamp(at: start + 14)
        case 0b10, 0b11: return timestamp(at: start + 9)
        default: return nil
        }
    }

    /// The decoding time (DTS, else PTS) of the first PES that carries one, in 90 kHz units.
    static func firstTimestamp(_ segment: [UInt8]) -> UInt64? {
        segment.withUnsafeBufferPointer { bytes in
            var offset = 0
            while offset + TransportPacket.size <= bytes.count {
                if bytes[offset + 1] & 0x40 != 0, let time = pesTime(bytes, packet: offset) { return time }
                offset += TransportPacket.size
            }
            return nil
        }
    }

    /// Moves every PTS, DTS and PCR of `segment` by `offset` 90 kHz ticks (modulo 2^33), in
    /// place: parts of a video joined at an `EXT-X-DISCONTINUITY` play on as one timeline.
    static func shiftTimestamps(_ segment: inout [UInt8], by offset: Int64) {
        guard offset != 0 else { return }
        let modulus: Int64 = 1 << 33
        func shifted(_ value: UInt64) -> UInt64 { UInt64(((Int64(value) + offset) % modulus + modulus) % modulus) }
        segment.withUnsafeMutableBufferPointer { bytes in
            var packet = 0
            while packet + TransportPacket.size <= bytes.count {
                defer { packet += TransportPacket.size }
                let control = (bytes[packet + 3] >> 4) & 0x03
                var payload = packet + 4
                if control & 0x02 != 0 {
                    let length = Int(bytes[packet + 4])
                    payload = packet + 5 + length
                    if length >= 7, bytes[packet + 5] & 0x10 != 0 {  // PCR: 33-bit base, 6 reserved bits, 9-bit extension
                        let p = packet + 6
                        let base = UInt64(bytes[p]) << 25 | UInt64(bytes[p + 1]) << 17 | UInt64(bytes[p + 2]) << 9
                            | UInt64(bytes[p + 3]) << 1 | UInt64(bytes[p + 4] >> 7)
                        let value = shifted(base)
                        bytes[p] = UInt8(value >> 25 & 0xFF)
                        bytes[p + 1] = UInt8(value >> 17 & 0xFF)
                        bytes[p + 2] = UInt8(value >> 9 & 0xFF)
                        bytes[p + 3] = UInt8(value >> 1 & 0xFF)
                        bytes[p + 4] = bytes[p + 4] & 0x7F | UInt8(value & 1) << 7
                    }
                }
                guard control & 0x01 != 0, bytes[packet + 1] & 0x40 != 0, payload + 14 <= packet + TransportPacket.size,
                      bytes[payload] == 0, bytes[payload + 1] == 0, bytes[payload + 2] == 1 else { continue }
                let flags = bytes[payload + 7] >> 6
                func rewrite(at index: Int) {
                    let value = shifted(UInt64(bytes[index] & 0x0E) << 29 | UInt64(bytes[index + 1]) << 22
                        | UInt64(bytes[index + 2] & 0xFE) << 14 | UInt64(bytes[index + 3]) << 7 | UInt64(bytes[index + 4] >> 1))
                    bytes[index] = bytes[index] & 0xF1 | UInt8(value >> 29 & 0x0E)
                    bytes[index + 1] = UInt8(value >> 22 & 0xFF)
                    bytes[index + 2] = UInt8(value >> 14 & 0xFE) | bytes[index + 2] & 0x01
                    bytes[index + 3] = UInt8(value >> 7 & 0xFF)
                    bytes[index + 4] = UInt8(value << 1 & 0xFE) | bytes[index + 4] & 0x01
                }
                if flags & 0b10 != 0 { rewrite(at: payload + 9) }
                if flags == 0b11, payload + 19 <= packet + TransportPacket.size { rewrite(at: payload + 14) }
            }
        }
    }

    /// Copies a packet to `target` with its PID set to `pid` and the next continuity counter of
    /// that PID.
    private mutating func copy(packet: UnsafePointer<UInt8>, pid: Int, to target: UnsafeMutablePointer<UInt8>) {
        target.update(from: packet, count: TransportPacket.size)
        target[1] = target[1] & 0xE0 | UInt8(pid >> 8)
        target[2] = UInt8(pid & 0xFF)
        if target[3] & 0x10 != 0 {  // only packets with payload advance the counter
            target[3] = target[3] & 0xF0 | counters[pid]
            counters[pid] = (counters[pid] + 1) & 0x0F
        }
    }

    /// A PSI section in one packet at `target`: pointer field 0, the section, 0xFF stuffing.
    private mutating func write(section: [UInt8], pid: Int, to target: UnsafeMutablePointer<UInt8>) {
        let header: [UInt8] = [TransportPacket.syncByte, 0x40 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10 | counters[pid], 0x00]
        counters[pid] = (counters[pid] + 1) & 0x0F
        target.update(from: header, count: header.count)
        let length = min(section.count, TransportPacket.size - header.count)
        (target + header.count).update(from: section, count: length)
        (target + header.count + length).initialize(repeating: 0xFF, count: TransportPacket.size - header.count - length)
    }
}
