/// One 188-byte MPEG-TS packet of a segment, parsed just enough to find its payload and
/// to rebuild it with a different payload length (ISO/IEC 13818-1, 2.4.3).
package struct TransportPacket: Sendable, Equatable {
    package static let size = 188
    package static let syncByte: UInt8 = 0x47

    /// The packet's 188 bytes.
    package var bytes: [UInt8]
    package let pid: Int
    package let payloadUnitStart: Bool
    package let continuityCounter: Int
    /// Where the payload starts within `bytes`; `size` when there is none.
    package let payloadOffset: Int
    /// The adaptation field's flags byte and the optional fields it announces (PCR, …),
    /// without its length byte and without stuffing; nil when there is no adaptation field
    /// or only stuffing. A rebuilt packet keeps these bytes and changes only the stuffing.
    package let adaptationCore: [UInt8]?

    /// Whether the packet carries payload (adaptation_field_control 01 or 11).
    package var hasPayload: Bool { bytes[3] & 0x10 != 0 }
    /// The number of payload bytes.
    package var payloadCount: Int { hasPayload ? TransportPacket.size - payloadOffset : 0 }
    /// The payload bytes.
    package var payload: ArraySlice<UInt8> { bytes[payloadOffset...] }

    /// Parses the packet at `index` of `segment` (whose length is a multiple of 188).
    package init(_ segment: [UInt8], index: Int) throws(SampleAESError) {
        let start = index * TransportPacket.size
        let bytes = Array(segment[start ..< start + TransportPacket.size])
        let (payloadOffset, coreLength) = try bytes.withUnsafeBufferPointer { buffer throws(SampleAESError) in
            try TransportPacket.layout(of: buffer, at: 0, index: index)
        }
        self.bytes = bytes
        pid = Int(bytes[1] & 0x1F) << 8 | Int(bytes[2])
        payloadUnitStart = bytes[1] & 0x40 != 0
        continuityCounter = Int(bytes[3] & 0x0F)
        self.payloadOffset = payloadOffset
        adaptationCore = coreLength.map { Array(bytes[5 ..< 6 + $0]) }
    }

    /// Checks the header and adaptation field of the packet at byte `base` of `bytes` (packet
    /// `index`, for messages) and returns where its payload starts (`size` when it has none)
    /// and the length of its adaptation core after the flags byte (nil without one).
    package static func layout(of bytes: UnsafeBufferPointer<UInt8>, at base: Int,
                               index: Int) throws(SampleAESError) -> (payloadOffset: Int, coreLength: Int?) {
        guard bytes[base] == TransportPacket.syncByte else {
            throw SampleAESError(.malformedTransportStream, "packet \(index) (byte \(base)) has sync byte \(bytes[base]), not 0x47")
        }
        let control = (bytes[base + 3] >> 4) & 0x03
        guard control != 0 else {
            throw SampleAESError(.malformedTransportStream, "packet \(index) has the reserved adaptation_field_control 00")
        }
        guard control & 0x02 != 0 else { return (4, nil) }
        let length = Int(bytes[base + 4])
        guard length <= 183 else {
            throw SampleAESError(.malformedTransportStream, "packet \(index) has an adaptation field of \(length) bytes")
        }
        let payloadOffset = control & 0x01 != 0 ? 5 + length : TransportPacket.size
        guard length > 0, bytes[base + 5] != 0 else { return (payloadOffset, nil) }
        let flags = bytes[base + 5]
        var fields = 0
        if flags & 0x10 != 0 { fields += 6 }  // PCR
        if flags & 0x08 != 0 { fields += 6 }  // OPCR
        if flags & 0x04 != 0 { fields += 1 }  // splice countdown
        if flags & 0x02 != 0 {                // transport private data
            guard 6 + fields < 5 + length else {
                throw SampleAESError(.malformedTransportStream, "packet \(index): adaptation field too short for its private data")
            }
            fields += 1 + Int(bytes[base + 6 + fields])
        }
        if flags & 0x01 != 0 {                // adaptation field extension
            guard 6 + fields < 5 + length else {
                throw SampleAESError(.malformedTransportStream, "packet \(index): adaptation field too short for its extension")
            }
            fields += 1 + Int(bytes[base + 6 + fields])
        }
        guard 1 + fields <= length else {
            throw SampleAESError(.malformedTransportStream, "packet \(index): adaptation field of \(length) bytes announces \(1 + fields)")
        }
        return (payloadOffset, fields)
    }

    /// The most payload a packet with this adaptation core can carry.
    package static func capacity(core: [UInt8]?) -> Int {
        guard let core else { return 184 }
        return 183 - core.count
    }

    /// A packet with the header fields of `header` (PID, flags, scrambling bits; the CC is
    /// set later), `core` in its adaptation field and `payload`, stuffed with 0xFF in the
    /// adaptation field as a muxer does. `payload` must be 1…`capacity(core:)` bytes.
    package static func build(header: ArraySlice<UInt8>, core: [UInt8]?, payload: ArraySlice<UInt8>) -> [UInt8] {
        precondition(!payload.isEmpty && payload.count <= capacity(core: core), "payload does not fit")  // callers size payloads from capacity(core:)
        var packet = Array(header.prefix(4))
        let adaptationLength = 183 - payload.count  // bytes after the length byte, if there is a field
        if core == nil && payload.count == 184 {
            packet[3] = packet[3] & 0xCF | 0x10
        } else {
            packet[3] = packet[3] & 0xCF | 0x30
            packet.append(UInt8(adaptationLength))
            if let core {
                packet.append(contentsOf: core)
                packet.append(contentsOf: repeatElement(0xFF, count: adaptationLength - core.count))
            } else if adaptationLength > 0 {
                packet.append(0x00)
                packet.append(contentsOf: repeatElement(0xFF, count: adaptationLength - 1))
            }
        }
        packet.append(contentsOf: payload)
        return packet
    }
}

/// A whole segment split into packets, checked for sync bytes and length.
package enum TransportStream {
    /// The packets of `segment`, or an error if it is not a non-empty run of 188-byte packets.
    package static func packets(of segment: [UInt8]) throws(SampleAESError) -> [TransportPacket] {
        guard !segment.isEmpty else { throw SampleAESError(.malformedTransportStream, "the segment is empty") }
        guard segment.count % TransportPacket.size == 0 else {
            throw SampleAESError(.malformedTransportStream,
                                 "the segment is \(segment.count) bytes, not a whole number of 188-byte packets")
        }
        var packets: [TransportPacket] = []
        packets.reserveCapacity(segment.count / TransportPacket.size)
        for index in 0 ..< segment.count / TransportPacket.size {
            packets.append(try TransportPacket(segment, index: index))
        }
        return packets
    }
}
