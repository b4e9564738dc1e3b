import SampleAES

/// The one elementary stream of an MPEG-TS segment (the fixtures and ingested renditions carry
/// one each: a video rendition or an audio language), as PES payloads with their times.
package struct ElementaryStream: Sendable {
    /// What the PMT says the stream is.
    package enum Kind: Sendable, Equatable { case h264, hevc, adtsAAC }

    /// One PES packet's payload and its times on the 90 kHz clock (DTS = PTS when absent).
    package struct Unit: Sendable {
        package var pts: Int64
        package var dts: Int64
        package var payload: [UInt8]
    }

    package var kind: Kind
    package var units: [Unit]
}

/// Reads a TS segment's PAT, PMT and the PES packets of its elementary stream.
package enum TransportStreamDemuxer {
    /// HEVC's stream type (ISO/IEC 13818-1 Table 2-34).
    static let hevcStreamType: UInt8 = 0x24

    /// The elementary stream of `segment`: its kind from the PMT, its PES units in order.
    package static func stream(of segment: [UInt8]) throws(CMAFError) -> ElementaryStream {
        let packets: [TransportPacket]
        do {
            packets = try TransportStream.packets(of: segment)
        } catch {
            throw CMAFError(.malformedTransportStream, error.message, underlying: error)
        }
        let (pid, kind) = try elementaryStream(in: packets)
        var units: [ElementaryStream.Unit] = []
        for pes in PESUnit.units(pid: pid, in: packets) {
            let bytes = pes.bytes(in: packets)
            let header: PESHeader
            do {
                header = try PESHeader(bytes, pid: pid)
            } catch {
                throw CMAFError(.malformedTransportStream, error.message, underlying: error)
            }
            let (pts, dts) = try times(bytes, pid: pid)
            units.append(ElementaryStream.Unit(pts: pts, dts: dts, payload: Array(bytes[header.length...])))
        }
        guard !units.isEmpty else { throw CMAFError(.malformedTransportStream, "PID \(pid) carries no PES packet") }
        return ElementaryStream(kind: kind, units: units)
    }

    /// The PID and kind of the segment's single H.264, HEVC or ADTS AAC stream.
    private static func elementaryStream(in packets: [TransportPacket]) throws(CMAFError) -> (Int, ElementaryStream.Kind) {
        do {
            guard let patPacket = packets.first(where: { $0.pid == 0 && $0.payloadUnitStart }) else {
                throw CMAFError(.malformedTransportStream, "the segment has no PAT")
            }
            let pat = try ProgramSection(in: patPacket, expectedTableID: 0)
            guard let pmtPID = pat.programMapPIDs.first,
                  let pmtPacket = packets.first(where: { $0.pid == pmtPID && $0.payloadUnitStart }) else {
                throw CMAFError(.malformedTransportStream, "the segment's PAT names no PMT that the segment carries")
            }
            let pmt = try ProgramMap(ProgramSection(in: pmtPacket, expectedTableID: 2).bytes)
            let known = pmt.streams.compactMap { stream -> (Int, ElementaryStream.Kind)? in
                switch stream.streamType {
                case StreamType.h264: (stream.pid, .h264)
                case hevcStreamType: (stream.pid, .hevc)
                case StreamType.adtsAAC: (stream.pid, .adtsAAC)
                default: nil
                }
            }
            guard known.count == 1, pmt.streams.count == 1 else {
                throw CMAFError(.unsupportedStream, "the segment carries \(pmt.streams.count) streams (types \(pmt.streams.map(\.streamType))); "
                    + "CMAF packaging takes one H.264, HEVC or ADTS AAC stream per rendition")
            }
            return known[0]
        } catch let error as SampleAESError {
            throw CMAFError(.malformedTransportStream, error.message, underlying: error)
        } catch let error as CMAFError {
            throw error
        } catch {
            throw CMAFError(.malformedTransportStream, "\(error)")
        }
    }

    /// PTS and DTS of a PES packet (ISO/IEC 13818-1 2.4.3.7); a packet without times is refused.
    private static func times(_ pes: [UInt8], pid: Int) throws(CMAFError) -> (Int64, Int64) {
        let flags = pes[7] >> 6
        guard flags >= 2, pes.count >= 14 else { throw CMAFError(.malformedTransportStream, "a PES packet on PID \(pid) has no PTS") }
        let pts = timestamp(pes, at: 9)
        guard flags == 3 else { return (pts, pts) }
        guard pes.count >= 19 else { throw CMAFError(.malformedTransportStream, "a PES packet on PID \(pid) announces a DTS it lacks") }
        return (pts, timestamp(pes, at: 14))
    }

    /// The 33-bit time in the five bytes at `offset`.
    private static func timestamp(_ bytes: [UInt8], at offset: Int) -> Int64 {
        Int64(bytes[offset] >> 1 & 0x07) << 30 | Int64(bytes[offset + 1]) << 22 | Int64(bytes[offset + 2] >> 1) << 15
            | Int64(bytes[offset + 3]) << 7 | Int64(bytes[offset + 4] >> 1)
    }
}
