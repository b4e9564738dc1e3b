/// The PAT and PMT of a segment: which PIDs carry which elementary streams, and the PMT
/// rewrite SAMPLE-AES asks for (Apple, "MPEG-2 Stream Encryption Format for HTTP Live
/// Streaming", section 3: new stream types, a private data indicator descriptor, and for
/// audio a registration descriptor with the audio setup information).
package enum StreamType {
    package static let h264: UInt8 = 0x1B
    package static let adtsAAC: UInt8 = 0x0F
    package static let sampleAESH264: UInt8 = 0xDB
    package static let sampleAESAAC: UInt8 = 0xCF
}

/// One PSI section (PAT or PMT) found whole inside a single packet's payload.
package struct ProgramSection: Sendable, Equatable {
    /// Offset of table_id within the packet.
    package let offset: Int
    /// The section bytes, table_id through CRC_32.
    package var bytes: [UInt8]

    /// The section that starts at the pointer field of `packet`, with its CRC checked.
    package init(in packet: TransportPacket, expectedTableID: UInt8) throws(SampleAESError) {
        guard packet.payloadUnitStart, packet.payloadCount > 1 else {
            throw SampleAESError(.malformedProgramTable, "PSI packet on PID \(packet.pid) does not start a section")
        }
        let start = packet.payloadOffset + 1 + Int(packet.bytes[packet.payloadOffset])
        guard start + 3 <= TransportPacket.size else {
            throw SampleAESError(.malformedProgramTable, "PSI pointer field on PID \(packet.pid) points past the packet")
        }
        let b = packet.bytes
        guard b[start] == expectedTableID else {
            throw SampleAESError(.malformedProgramTable, "PID \(packet.pid) carries table_id \(b[start]), expected \(expectedTableID)")
        }
        let total = 3 + (Int(b[start + 1] & 0x0F) << 8 | Int(b[start + 2]))
        guard total >= 12, start + total <= TransportPacket.size else {
            throw SampleAESError(.malformedProgramTable,
                                 "the section on PID \(packet.pid) is \(total) bytes: too short or not within one packet")
        }
        offset = start
        bytes = Array(b[start ..< start + total])
        guard CRC32MPEG2.checksum(bytes) == 0 else {
            throw SampleAESError(.malformedProgramTable, "the section on PID \(packet.pid) fails its CRC")
        }
    }

    /// PMT PIDs listed by a PAT section (program 0, the network PID, is skipped).
    package var programMapPIDs: [Int] {
        stride(from: 8, to: bytes.count - 4 - 3, by: 4).compactMap { index in
            let program = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            return program == 0 ? nil : Int(bytes[index + 2] & 0x1F) << 8 | Int(bytes[index + 3])
        }
    }
}

/// A PMT section taken apart into its elementary stream entries, and put back together.
package struct ProgramMap: Sendable, Equatable {
    /// One entry of the PMT's stream loop.
    package struct Stream: Sendable, Equatable {
        package var streamType: UInt8
        /// The two bytes holding reserved bits and elementary_PID.
        package var pidBytes: [UInt8]
        /// The reserved bits above ES_info_length.
        package var infoReservedBits: UInt8
        /// The raw ES_info descriptor loop.
        package var descriptors: [UInt8]
        package var pid: Int { Int(pidBytes[0] & 0x1F) << 8 | Int(pidBytes[1]) }
    }

    /// table_id through the program info descriptors (section_length is rewritten on output).
    package var head: [UInt8]
    package var streams: [Stream]

    /// Parses a PMT section (CRC already checked).
    package init(_ section: [UInt8]) throws(SampleAESError) {
        let programInfoLength = Int(section[10] & 0x0F) << 8 | Int(section[11])
        let end = section.count - 4
        guard 12 + programInfoLength <= end else {
            throw SampleAESError(.malformedProgramTable, "PMT program_info_length \(programInfoLength) runs past the section")
        }
        head = Array(section[0 ..< 12 + programInfoLength])
        streams = []
        var index = 12 + programInfoLength
        while index < end {
            guard index + 5 <= end else { throw SampleAESError(.malformedProgramTable, "PMT stream entry truncated") }
            let infoLength = Int(section[index + 3] & 0x0F) << 8 | Int(section[index + 4])
            guard index + 5 + infoLength <= end else {
                throw SampleAESError(.malformedProgramTable, "PMT ES_info_length \(infoLength) runs past the section")
            }
            streams.append(Stream(streamType: section[index], pidBytes: [section[index + 1], section[index + 2]],
                                  infoReservedBits: section[index + 3] & 0xF0,
                                  descriptors: Array(section[index + 5 ..< index + 5 + infoLength])))
            index += 5 + infoLength
        }
    }

    /// The section bytes with section_length and CRC_32 recomputed.
    package var section: [UInt8] {
        var out = head
        for stream in streams {
            out.append(stream.streamType)
            out.append(contentsOf: stream.pidBytes)
            out.append(stream.infoReservedBits | UInt8(stream.descriptors.count >> 8))
            out.append(UInt8(stream.descriptors.count & 0xFF))
            out.append(contentsOf: stream.descriptors)
        }
        let sectionLength = out.count - 3 + 4
        out[1] = out[1] & 0xF0 | UInt8(sectionLength >> 8)
        out[2] = UInt8(sectionLength & 0xFF)
        let crc = CRC32MPEG2.checksum(out)
        out.append(contentsOf: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
        return out
    }
}

/// The descriptors SAMPLE-AES adds to a PMT entry, and their removal.
package enum SampleAESDescriptors {
    static let privateDataIndicatorTag: UInt8 = 0x0F
    static let registrationTag: UInt8 = 0x05

    /// private_data_indicator_descriptor with `fourCC` ("zavc", "aacd").
    package static func privateDataIndicator(_ fourCC: String) -> [UInt8] {
        [privateDataIndicatorTag, 4] + Array(fourCC.utf8)
    }

    /// registration_descriptor "apad" carrying audio_setup_information for AAC:
    /// audio_type "zaac", priming 0, version 1, and the AudioSpecificConfig as setup data.
    package static func aacSetup(audioSpecificConfig: [UInt8]) -> [UInt8] {
        let info = Array("zaac".utf8) + [0, 0, 1, UInt8(audioSpecificConfig.count)] + audioSpecificConfig
        return [registrationTag, UInt8(4 + info.count)] + Array("apad".utf8) + info
    }

    /// Whether `descriptors` holds any descriptor SAMPLE-AES adds.
    package static func containsSampleAES(_ descriptors: [UInt8]) -> Bool {
        removingSampleAES(descriptors) != descriptors
    }

    /// `descriptors` without the SAMPLE-AES ones (a malformed tail is kept as it is).
    package static func removingSampleAES(_ descriptors: [UInt8]) -> [UInt8] {
        var kept: [UInt8] = []
        var index = 0
        while index + 2 <= descriptors.count {
            let length = Int(descriptors[index + 1])
            guard index + 2 + length <= descriptors.count else { break }
            let body = Array(descriptors[index + 2 ..< index + 2 + length])
            let fourCC = body.count >= 4 ? String(decoding: body[0 ..< 4], as: UTF8.self) : ""
            let ours = (descriptors[index] == privateDataIndicatorTag && length == 4 && ["zavc", "aacd"].contains(fourCC))
                || (descriptors[index] == registrationTag && fourCC == "apad")
            if !ours { kept.append(contentsOf: descriptors[index ..< index + 2 + length]) }
            index += 2 + length
        }
        kept.append(contentsOf: descriptors[index...])
        return kept
    }
}

/// CRC-32/MPEG-2 (polynomial 0x04C11DB7, initial 0xFFFFFFFF, no reflection, no final XOR),
/// as PSI sections use. A whole section including its CRC checks to 0.
package enum CRC32MPEG2 {
    private static let table: [UInt32] = (0 ..< 256).map { index in
        var crc = UInt32(index) << 24
        for _ in 0 ..< 8 { crc = crc & 0x8000_0000 != 0 ? crc << 1 ^ 0x04C1_1DB7 : crc << 1 }
        return crc
    }

    /// The CRC of `bytes`.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crc << 8 ^ table[Int((crc >> 24) ^ UInt32(byte))] }
        return crc
    }
}
