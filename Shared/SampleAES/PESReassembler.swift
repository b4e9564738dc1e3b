/// PES packets of one PID put back together from their TS packets, and laid out again
/// after their elementary stream has been transformed.
///
/// Layout rule (the same in both directions, so decryption undoes encryption exactly):
/// every packet keeps its header, adaptation field and payload length, except at the
/// tail when the PES changed length (H.264 emulation-prevention bytes can come and go):
/// - longer: the last packet fills its stuffing first, then new packets follow it, full
///   (184 bytes of payload) but the last, which is stuffed through its adaptation field;
/// - shorter: the last packet gives up bytes (and gains stuffing); a packet left empty is
///   dropped and the one before it shrinks in turn.
/// Packets added or dropped shift the continuity counters of the later packets of that
/// PID (done by the caller). Growing then shrinking by the same amount restores the
/// original as long as only the tail packet was stuffed, as muxers write PES packets.
package struct PESUnit: Sendable {
    /// Indices (into the segment's packets) of this PES's packets that carry payload.
    package var packetIndices: [Int]

    /// Groups the payload-carrying packets of `pid` into PES units, each from a packet with
    /// payload_unit_start_indicator to the next. Packets before the first start belong to
    /// a PES begun in an earlier segment and are left alone.
    package static func units(pid: Int, in packets: [TransportPacket]) -> [PESUnit] {
        var units: [PESUnit] = []
        for (index, packet) in packets.enumerated() where packet.pid == pid && packet.payloadCount > 0 {
            if packet.payloadUnitStart {
                units.append(PESUnit(packetIndices: [index]))
            } else if !units.isEmpty {
                units[units.count - 1].packetIndices.append(index)
            }
        }
        return units
    }

    /// The PES packet's bytes, header included.
    package func bytes(in packets: [TransportPacket]) -> [UInt8] {
        var out: [UInt8] = []
        for index in packetIndices { out.append(contentsOf: packets[index].payload) }
        return out
    }

    /// What re-packetizing a PES gives: packets replaced in place, packets dropped, and
    /// new packets to insert after a given packet (continuity counters still to be set).
    package struct Layout: Sendable {
        package var replaced: [Int: [UInt8]] = [:]
        package var dropped: Set<Int> = []
        package var inserted: [Int: [[UInt8]]] = [:]

        /// The output segment: every packet in order (replaced, dropped or followed by inserted
        /// ones), with continuity counters shifted per PID by the packets added or removed.
        package func write(_ packets: [TransportPacket]) -> [UInt8] {
            var segment: [UInt8] = []
            segment.reserveCapacity(packets.count * TransportPacket.size)
            for packet in packets { segment.append(contentsOf: packet.bytes) }
            return write(segment: segment)
        }

        /// The same, from the segment's bytes (a whole number of packets): packets this layout
        /// does not name are copied as they are, but for their continuity counter.
        package func write(segment: [UInt8]) -> [UInt8] {
            let size = TransportPacket.size
            var out: [UInt8] = []
            out.reserveCapacity(segment.count + inserted.values.reduce(0) { $0 + $1.count } * size)
            var shift = [Int](repeating: 0, count: 0x2000)
            for index in 0 ..< segment.count / size {
                let base = index * size
                let pid = Int(segment[base + 1] & 0x1F) << 8 | Int(segment[base + 2])
                if dropped.contains(index) {
                    shift[pid] -= 1
                    continue
                }
                let start = out.count
                if let bytes = replaced[index] { out.append(contentsOf: bytes) } else { out.append(contentsOf: segment[base ..< base + size]) }
                var counter = (Int(segment[base + 3] & 0x0F) + shift[pid]) & 0x0F
                out[start + 3] = out[start + 3] & 0xF0 | UInt8(counter)
                for extra in inserted[index] ?? [] {
                    counter = (counter + 1) & 0x0F
                    let at = out.count
                    out.append(contentsOf: extra)
                    out[at + 3] = out[at + 3] & 0xF0 | UInt8(counter)
                    shift[pid] += 1
                }
            }
            return out
        }
    }

    /// Lays `pes` (the new PES bytes) over this unit's packets by the rule above.
    package func layout(_ pes: [UInt8], in packets: [TransportPacket]) throws(SampleAESError) -> Layout {
        var sizes = packetIndices.map { packets[$0].payloadCount }
        var difference = pes.count - sizes.reduce(0, +)
        var appended: [Int] = []
        var layout = Layout()
        if difference > 0 {
            let last = packetIndices.count - 1
            let room = TransportPacket.capacity(core: packets[packetIndices[last]].adaptationCore) - sizes[last]
            let grow = min(difference, max(0, room))
            sizes[last] += grow
            difference -= grow
            while difference > 0 {
                appended.append(min(184, difference))
                difference -= appended[appended.count - 1]
            }
        } else if difference < 0 {
            var position = sizes.count - 1
            while difference < 0 {
                let cut = min(-difference, sizes[position])
                sizes[position] -= cut
                difference += cut
                if sizes[position] == 0 {
                    let index = packetIndices[position]
                    guard position > 0, packets[index].adaptationCore == nil else {
                        throw SampleAESError(.unsupportedLayout,
                                             "packet \(index) would be left without payload but carries adaptation fields")
                    }
                    layout.dropped.insert(index)
                    position -= 1
                }
            }
        }
        var offset = 0
        for (position, index) in packetIndices.enumerated() where !layout.dropped.contains(index) {
            let packet = packets[index]
            let slice = pes[offset ..< offset + sizes[position]]
            offset += sizes[position]
            if sizes[position] == packet.payloadCount {
                var bytes = packet.bytes
                bytes.replaceSubrange(packet.payloadOffset..., with: slice)
                layout.replaced[index] = bytes
            } else {
                layout.replaced[index] = TransportPacket.build(header: packet.bytes[0 ..< 4], core: packet.adaptationCore, payload: slice)
            }
        }
        if !appended.isEmpty, let anchor = packetIndices.last {
            var header = Array(packets[anchor].bytes[0 ..< 4])
            header[1] &= ~0x40  // a continuation, never a PES start
            layout.inserted[anchor] = appended.map { size in
                defer { offset += size }
                return TransportPacket.build(header: header[...], core: nil, payload: pes[offset ..< offset + size])
            }
        }
        return layout
    }
}

/// The fixed part of a PES header (ISO/IEC 13818-1, 2.4.3.6).
package struct PESHeader: Sendable {
    /// Bytes before the elementary stream data.
    package let length: Int
    /// PES_packet_length; 0 means unbounded (allowed for video).
    package let packetLength: Int

    /// Parses the header of `pes`, checking its declared length against the bytes present.
    package init(_ pes: [UInt8], pid: Int) throws(SampleAESError) {
        guard pes.count >= 9, pes[0] == 0, pes[1] == 0, pes[2] == 1 else {
            throw SampleAESError(.malformedPES, "PES on PID \(pid) does not start with a PES header")
        }
        length = 9 + Int(pes[8])
        packetLength = Int(pes[4]) << 8 | Int(pes[5])
        guard length <= pes.count else {
            throw SampleAESError(.malformedPES, "PES header on PID \(pid) is longer than the PES")
        }
        guard packetLength == 0 || packetLength == pes.count - 6 else {
            throw SampleAESError(.malformedPES,
                                 "PES on PID \(pid) declares \(packetLength) bytes after its length field but has \(pes.count - 6)")
        }
    }
}
