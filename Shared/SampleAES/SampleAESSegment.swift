/// SAMPLE-AES encryption of whole MPEG-TS segments, as Apple's "MPEG-2 Stream Encryption
/// Format for HTTP Live Streaming" describes it for H.264 and AAC (ADTS) streams.
///
/// The encrypted segment is still a valid transport stream with the same PIDs, timing
/// (PTS/DTS/PCR) and, as far as possible, the same packets: the PMT announces the streams
/// as SAMPLE-AES (stream types 0xDB and 0xCF, with the descriptors the spec requires),
/// and only the protected parts of NAL units and ADTS frames change. Decryption restores
/// the clear segment byte for byte; `encrypt` checks that before returning, so what it
/// hands out can always be turned back into its input.
///
/// Pure functions on bytes: no I/O, no shared state, safe from any thread.
///
/// ```swift
/// let protected = try SampleAES.encrypt(segment: clearTS, key: contentKey, iv: iv)
/// // … later, offline, with the key from the license:
/// let clear = try SampleAES.decrypt(segment: protected, key: contentKey, iv: iv)
/// assert(clear == clearTS)
/// ```
public enum SampleAES {
    /// Encrypts a clear MPEG-TS segment with SAMPLE-AES under a 16-byte `key` and `iv`.
    /// Throws if the segment is not a transport stream this can read, is already
    /// SAMPLE-AES, or could not be encrypted in a way `decrypt` undoes exactly.
    public static func encrypt(segment: [UInt8], key: [UInt8], iv: [UInt8]) throws(SampleAESError) -> [UInt8] {
        let encrypted = try SegmentTransformer(cipher: PatternCipher(key: key, iv: iv, direction: .encrypt)).transform(segment)
        let restored = try SegmentTransformer(cipher: PatternCipher(key: key, iv: iv, direction: .decrypt)).transform(encrypted)
        guard restored == segment else {
            throw SampleAESError(.unsupportedLayout, "the segment's packet layout cannot be encrypted reversibly")
        }
        return encrypted
    }

    /// Decrypts a SAMPLE-AES MPEG-TS segment with the 16-byte `key` and `iv` it was
    /// encrypted with. A wrong key is not detected (there is no authentication): it gives
    /// a well-formed segment with garbage in the protected blocks.
    public static func decrypt(segment: [UInt8], key: [UInt8], iv: [UInt8]) throws(SampleAESError) -> [UInt8] {
        // Every well-formed segment: in one pass (one AES call, only PES packets whose length
        // changed laid out again). Malformed ones: the general path, which says what is wrong.
        if let clear = try SegmentDecryption.decrypt(segment, key: key, iv: iv) { return clear }
        return try SegmentTransformer(cipher: PatternCipher(key: key, iv: iv, direction: .decrypt)).transform(segment)
    }
}

/// One pass over a segment in one direction: read the tables, transform each PES of the
/// H.264 and AAC streams, rewrite the PMT, and write the packets out with continuity
/// counters kept continuous.
struct SegmentTransformer {
    enum Kind { case video, audio }

    let cipher: PatternCipher
    var encrypting: Bool { cipher.direction == .encrypt }

    func transform(_ segment: [UInt8]) throws(SampleAESError) -> [UInt8] {
        let packets = try TransportStream.packets(of: segment)
        guard let pat = packets.first(where: { $0.pid == 0 && $0.payloadUnitStart }) else {
            throw SampleAESError(.malformedProgramTable, "the segment has no PAT")
        }
        let pmtPIDs = Set(try ProgramSection(in: pat, expectedTableID: 0x00).programMapPIDs)
        var kinds: [Int: Kind] = [:]
        var maps: [Int: (section: ProgramSection, map: ProgramMap)] = [:]
        for (index, packet) in packets.enumerated() where pmtPIDs.contains(packet.pid) {
            let section = try ProgramSection(in: packet, expectedTableID: 0x02)
            let map = try ProgramMap(section.bytes)
            maps[index] = (section, map)
            for stream in map.streams {
                switch (stream.streamType, encrypting) {
                case (StreamType.h264, true), (StreamType.sampleAESH264, false): kinds[stream.pid] = .video
                case (StreamType.adtsAAC, true), (StreamType.sampleAESAAC, false): kinds[stream.pid] = .audio
                case (StreamType.sampleAESH264, true), (StreamType.sampleAESAAC, true):
                    throw SampleAESError(.unsupportedLayout, "PID \(stream.pid) is already SAMPLE-AES")
                default:
                    if encrypting, SampleAESDescriptors.containsSampleAES(stream.descriptors) {
                        throw SampleAESError(.unsupportedLayout, "PID \(stream.pid) already carries SAMPLE-AES descriptors")
                    }
                }
            }
        }
        guard !maps.isEmpty else { throw SampleAESError(.malformedProgramTable, "the segment has no PMT") }

        var layout = PESUnit.Layout()
        var audioConfigs: [Int: [UInt8]] = [:]
        for (pid, kind) in kinds {
            for unit in PESUnit.units(pid: pid, in: packets) {
                var pes = unit.bytes(in: packets)
                let header = try PESHeader(pes, pid: pid)
                let stream = pes[header.length...]
                let transformed: [UInt8]
                switch kind {
                case .video: transformed = try H264SampleEncryption.transform(stream, cipher: cipher)
                case .audio:
                    if audioConfigs[pid] == nil { audioConfigs[pid] = ADTSSampleEncryption.audioSpecificConfig(header: stream) }
                    transformed = try ADTSSampleEncryption.transform(stream, cipher: cipher)
                }
                if transformed.count != stream.count, header.packetLength != 0 {
                    let length = header.packetLength + transformed.count - stream.count
                    guard length <= 0xFFFF else {
                        throw SampleAESError(.unsupportedLayout, "a PES on PID \(pid) would outgrow PES_packet_length")
                    }
                    pes[4] = UInt8(length >> 8)
                    pes[5] = UInt8(length & 0xFF)
                }
                pes.replaceSubrange(header.length..., with: transformed)
                let unitLayout = try unit.layout(pes, in: packets)
                layout.replaced.merge(unitLayout.replaced) { $1 }
                layout.dropped.formUnion(unitLayout.dropped)
                layout.inserted.merge(unitLayout.inserted) { $1 }
            }
        }
        for (index, table) in maps {
            layout.replaced[index] = try SegmentTransformer.rewrite(packets[index], table.section, table.map, encrypting: encrypting,
                                                                    audioConfigs: audioConfigs)
        }
        return layout.write(packets)
    }

    /// The PMT packet with stream types and descriptors switched to (or back from) SAMPLE-AES.
    static func rewrite(_ packet: TransportPacket, _ section: ProgramSection, _ original: ProgramMap, encrypting: Bool,
                        audioConfigs: [Int: [UInt8]]) throws(SampleAESError) -> [UInt8] {
        var map = original
        for index in map.streams.indices {
            let stream = map.streams[index]
            switch (stream.streamType, encrypting) {
            case (StreamType.h264, true):
                map.streams[index].streamType = StreamType.sampleAESH264
                map.streams[index].descriptors = SampleAESDescriptors.privateDataIndicator("zavc") + stream.descriptors
            case (StreamType.adtsAAC, true):
                map.streams[index].streamType = StreamType.sampleAESAAC
                var added = SampleAESDescriptors.privateDataIndicator("aacd")
                if let config = audioConfigs[stream.pid], !config.isEmpty {
                    added += SampleAESDescriptors.aacSetup(audioSpecificConfig: config)
                }
                map.streams[index].descriptors = added + stream.descriptors
            case (StreamType.sampleAESH264, false), (StreamType.sampleAESAAC, false):
                map.streams[index].streamType = stream.streamType == StreamType.sampleAESH264 ? StreamType.h264 : StreamType.adtsAAC
                map.streams[index].descriptors = SampleAESDescriptors.removingSampleAES(stream.descriptors)
            default: break
            }
        }
        let bytes = map.section
        let oldEnd = section.offset + section.bytes.count
        if encrypting, packet.bytes[oldEnd...].contains(where: { $0 != 0xFF }) {
            throw SampleAESError(.unsupportedLayout, "the PMT packet is not stuffed with 0xFF after its section")
        }
        guard section.offset + bytes.count <= TransportPacket.size else {
            throw SampleAESError(.unsupportedLayout, "the SAMPLE-AES PMT would not fit in one packet")
        }
        var out = Array(packet.bytes[..<section.offset]) + bytes
        out.append(contentsOf: repeatElement(0xFF, count: TransportPacket.size - out.count))
        return out
    }
}
