import SampleAES

/// One access unit (a video frame, an AAC frame) in MP4 sample form, on the 90 kHz clock.
package struct AccessUnit: Sendable {
    package var pts: Int64
    package var dts: Int64
    /// The sample: NAL units each behind a 4-byte length (video), a raw AAC frame (audio).
    package var bytes: [UInt8]
    package var isSync: Bool
}

/// A rendition taken out of its MPEG-TS segments: the track's format and its access units,
/// segment by segment (CMAF segments keep the TS segments' boundaries, so both HLS forms list
/// the same durations).
package struct DemuxedTrack: Sendable {
    package var format: TrackFormat
    package var segments: [[AccessUnit]]

    /// The track's first DTS (90 kHz): the earliest time any of its samples needs.
    package var firstDecodeTime: Int64 { segments.first?.first?.dts ?? 0 }

    /// The track's fragments, one per segment, with every time counted from `origin` (90 kHz,
    /// at most the first DTS of every track of the asset, so all tracks share one timeline):
    /// decode time = DTS − origin and composition time = PTS − origin, exactly as in the TS.
    /// Composition offsets stay positive and there is no edit list: every reader places the
    /// samples the same way (ffmpeg 5.1 misplaces negative offsets; edit lists shift A/V sync
    /// in some players, ../shared/reference/dynamic-delivery.md pitfall 2). The price is that
    /// presentation starts a few frames after zero, as in the TS segments.
    package func fragments(origin: Int64) -> [Fragment] {
        let all = segments.flatMap { $0 }
        guard !all.isEmpty else { return [] }
        let scale = Int64(format.timescale)
        let ticks = { (time90k: Int64) -> Int64 in (time90k * scale + 45000) / 90000 }
        var decodeTimes = all.map { ticks($0.dts - origin) }
        if !format.isVideo {
            // AAC frames are 1024 samples; count them from the first frame's time so that
            // rounding never makes two frames overlap or leave a gap.
            decodeTimes = all.indices.map { decodeTimes[0] + Int64($0) * 1024 }
        }
        var fragments: [Fragment] = []
        var index = 0
        for segment in segments {
            guard !segment.isEmpty else { continue }
            var samples: [Sample] = []
            var data: [UInt8] = []
            samples.reserveCapacity(segment.count)
            data.reserveCapacity(segment.reduce(0) { $0 + $1.bytes.count })
            let base = decodeTimes[index]
            for unit in segment {
                let next = index + 1 < all.count ? decodeTimes[index + 1] : nil
                let duration = next.map { $0 - decodeTimes[index] }
                    ?? (index > 0 ? decodeTimes[index] - decodeTimes[index - 1] : (format.isVideo ? scale / 25 : 1024))
                let composition = format.isVideo ? ticks(unit.pts - origin) - decodeTimes[index] : 0
                samples.append(Sample(duration: UInt32(clamping: duration), size: UInt32(unit.bytes.count), isSync: unit.isSync,
                                      compositionOffset: Int32(clamping: composition)))
                data.append(contentsOf: unit.bytes)
                index += 1
            }
            fragments.append(Fragment(baseDecodeTime: UInt64(max(0, base)), samples: samples, data: data))
        }
        return fragments
    }
}

/// Turns a rendition's MPEG-TS segments into a ``DemuxedTrack``.
package enum TrackRemuxer {
    /// NAL unit types left out of H.264 samples: parameter sets (in `avcC`) and access unit delimiters.
    static let h264OutOfBand: Set<UInt8> = [7, 8, 9]
    /// The same for HEVC: VPS, SPS, PPS (in `hvcC`) and access unit delimiters.
    static let hevcOutOfBand: Set<UInt8> = [32, 33, 34, 35]

    /// Demuxes `segments` (a rendition's TS segments, in order). The picture size is the SPS's.
    package static func demux(segments: [[UInt8]]) throws(CMAFError) -> DemuxedTrack {
        var kind: ElementaryStream.Kind?
        var units: [[ElementaryStream.Unit]] = []
        for segment in segments {
            let stream = try TransportStreamDemuxer.stream(of: segment)
            guard kind == nil || kind == stream.kind else {
                throw CMAFError(.unsupportedStream, "the rendition's segments carry different streams (\(kind.map { "\($0)" } ?? "") and \(stream.kind))")
            }
            kind = stream.kind
            units.append(stream.units)
        }
        guard let kind else { throw CMAFError(.malformedTransportStream, "the rendition has no segment") }
        let unwrap = Unwrapper(first: units.first?.first?.dts ?? 0)
        switch kind {
        case .h264, .hevc:
            return try video(units, hevc: kind == .hevc, unwrap: unwrap)
        case .adtsAAC:
            return try audio(units, unwrap: unwrap)
        }
    }

    private static func video(_ segments: [[ElementaryStream.Unit]], hevc: Bool, unwrap: Unwrapper) throws(CMAFError) -> DemuxedTrack {
        var parameterSets: [UInt8: [UInt8]] = [:]
        var out: [[AccessUnit]] = []
        for segment in segments {
            var units: [AccessUnit] = []
            for pes in segment {
                var sample: [UInt8] = []
                sample.reserveCapacity(pes.payload.count + 16)
                var isSync = false
                var slices = 0
                for nal in H264SampleEncryption.nalUnits(pes.payload) {
                    var end = nal.end
                    while end > nal.start, pes.payload[end - 1] == 0 { end -= 1 } // trailing_zero_8bits
                    guard end > nal.start else { continue }
                    let type = hevc ? (pes.payload[nal.start] >> 1) & 0x3F : pes.payload[nal.start] & 0x1F
                    if (hevc ? hevcOutOfBand : h264OutOfBand).contains(type) {
                        if parameterSets[type] == nil, !(hevc ? type == 35 : type == 9) { parameterSets[type] = Array(pes.payload[nal.start ..< end]) }
                        continue
                    }
                    let isSlice = hevc ? type < 32 : (1 ... 5).contains(type)
                    if isSlice { slices += 1 }
                    if hevc ? (16 ... 23).contains(type) : type == 5 { isSync = true }
                    let length = UInt32(end - nal.start)
                    sample.append(contentsOf: [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)])
                    sample.append(contentsOf: pes.payload[nal.start ..< end])
                }
                guard slices > 0 else {
                    throw CMAFError(.malformedSample, "a video PES packet at PTS \(pes.pts) holds no slice (\(pes.payload.count) bytes)")
                }
                units.append(AccessUnit(pts: unwrap(pes.pts), dts: unwrap(pes.dts), bytes: sample, isSync: isSync))
            }
            out.append(units)
        }
        let codec: TrackFormat.Codec
        let width: Int, height: Int
        if hevc {
            guard let vps = parameterSets[32], let sps = parameterSets[33], let pps = parameterSets[34] else {
                throw CMAFError(.malformedSample, "the HEVC rendition carries no VPS, SPS and PPS")
            }
            codec = .hevc(vps: vps, sps: sps, pps: pps, configuration: try HEVCDecoderConfiguration.record(vps: vps, sps: sps, pps: pps))
            let parsed = try HEVCSPS(nal: sps[...])
            (width, height) = (parsed.width, parsed.height)
        } else {
            guard let sps = parameterSets[7], let pps = parameterSets[8] else {
                throw CMAFError(.malformedSample, "the H.264 rendition carries no SPS and PPS")
            }
            codec = .avc(sps: sps, pps: pps)
            let parsed = try H264SPS(nal: sps[...])
            (width, height) = (parsed.width, parsed.height)
        }
        guard out.first?.first?.isSync == true else {
            throw CMAFError(.malformedSample, "the rendition's first frame is not a sync frame: a CMAF track must start with one")
        }
        return DemuxedTrack(format: TrackFormat(codec: codec, timescale: 90000, width: width, height: height), segments: out)
    }

    /// AAC sampling frequencies by index (ISO/IEC 14496-3 Table 1.18).
    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    private static func audio(_ segments: [[ElementaryStream.Unit]], unwrap: Unwrapper) throws(CMAFError) -> DemuxedTrack {
        var config: [UInt8]?
        var sampleRate = 0
        var channels = 0
        var out: [[AccessUnit]] = []
        for segment in segments {
            var units: [AccessUnit] = []
            for pes in segment {
                let frames: [ADTSSampleEncryption.Frame]
                do {
                    frames = try ADTSSampleEncryption.frames(pes.payload[...])
                } catch {
                    throw CMAFError(.malformedSample, error.message, underlying: error)
                }
                for (position, frame) in frames.enumerated() {
                    let header = pes.payload[frame.start ..< frame.start + frame.headerLength]
                    if config == nil {
                        let asc = ADTSSampleEncryption.audioSpecificConfig(header: header)
                        let frequencyIndex = Int((header[header.startIndex + 2] >> 2) & 0x0F)
                        guard asc.count == 2, frequencyIndex < sampleRates.count else {
                            throw CMAFError(.malformedSample, "an ADTS header names sampling frequency index \(frequencyIndex)")
                        }
                        config = asc
                        sampleRate = sampleRates[frequencyIndex]
                        channels = Int((header[header.startIndex + 2] & 0x01) << 2 | header[header.startIndex + 3] >> 6)
                    }
                    let time = unwrap(pes.pts) + Int64(position) * 1024 * 90000 / Int64(sampleRate)
                    units.append(AccessUnit(pts: time, dts: time,
                                            bytes: Array(pes.payload[frame.start + frame.headerLength ..< frame.start + frame.length]),
                                            isSync: true))
                }
            }
            out.append(units)
        }
        guard let config else { throw CMAFError(.malformedSample, "the audio rendition holds no ADTS frame") }
        return DemuxedTrack(format: TrackFormat(codec: .aac(audioSpecificConfig: config), timescale: UInt32(sampleRate),
                                                channelCount: channels, sampleRate: sampleRate), segments: out)
    }

    /// Undoes the 33-bit wrap of MPEG-TS times relative to the track's first time.
    struct Unwrapper {
        let first: Int64
        func callAsFunction(_ time: Int64) -> Int64 { time < first - (1 << 32) ? time + (1 << 33) : time }
    }
}
