import CMAF
import Foundation
import WireModels

/// The DASH form of a video (Dynamic Delivery's `live-baseurl` MPD): a static MPD in the
/// ISO live profile over the same CMAF tracks as HLS v7. One `AdaptationSet` for the video
/// ladder, one per audio language (`lang`, `Role`), one per WebVTT subtitle language (the whole
/// sideband file). Segments are addressed by `SegmentTemplate` with `$Number$` and a
/// `SegmentTimeline` of the real fragment durations; one `fastly_token` in the template covers
/// every file under the video's media folder. An account that addresses CMAF by byte ranges
/// gets the on-demand profile instead: each representation's `track.mp4` as its `BaseURL`, with
/// `SegmentBase` (`Initialization` range, the `sidx` as `indexRange`).
struct DASHManifest: Sendable {
    static let contentType = "application/dash+xml"

    /// One audio or video rendition: its id in the MPD (the rendition uuid), codecs and track,
    /// and its byte-range form when the account addresses CMAF so.
    struct Representation {
        var ref: RenditionRef
        var codecs: String
        var track: PackagedTrack
        var singleFile: SingleTrackFile?
    }

    /// One subtitle language: the sideband WebVTT file's URL.
    struct TextTrack {
        var ref: RenditionRef
        var language: String
        var label: String
        var url: String
    }

    var video: CatalogVideo
    var videos: [Representation]
    /// The HEVC ladder: an adaptation set of its own (a set never mixes codecs a player cannot switch between).
    var hevc: [Representation] = []
    var audios: [(Representation, language: String, label: String, channels: String)]
    var texts: [TextTrack]
    /// The MPD's `BaseURL`: the video's media folder for its DASH encryption.
    var baseURL: String
    /// A DRM video's Common Encryption: its cenc key's id and the ClearKey license URL.
    struct Protection {
        var key: ContentKey
        var licenseURL: String
    }

    /// Set for a DRM video: every audio and video set carries its `ContentProtection`.
    var protection: Protection?
    /// The thumbnail track's sprites as an image adaptation set (DASH-IF `thumbnail_tile`), when
    /// they follow one another on the timeline; `spriteURL` is the template with `$Number$`.
    var thumbnails: (track: ThumbnailTrack, spriteURL: String)?
    /// The percent-encoded token every media URL carries.
    var token: String
    /// Where presentation time zero is on the tracks' timeline (90 kHz): the first video frame,
    /// as the TS form and the WebVTT files count it.
    var presentationStart90k: UInt64

    /// The MPD's profile: live (`SegmentTemplate`) or, addressed by byte ranges, on-demand (`SegmentBase`).
    var profile: String {
        videos.first?.singleFile == nil ? VideoSource.dashLiveProfile : VideoSource.dashOnDemandProfile
    }

    func render() -> String {
        var xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" xmlns:dashif="https://dashif.org/" \
        xmlns:clearkey="http://dashif.org/guidelines/clearKey" profiles="\(profile)" \
        type="static" mediaPresentationDuration="\(DASHManifest.duration(Double(video.durationMilliseconds) / 1000))" \
        minBufferTime="PT2.000S">
          <Period id="0" start="PT0S">
            <BaseURL>\(DASHManifest.escape(baseURL))</BaseURL>

        """
        var setID = 0
        // The H.264 ladder (the main set), then the HEVC one (an alternate a player picks if it decodes hvc1).
        for (ladder, role) in [(videos, "main"), (hevc, "alternate")] {
            guard let first = ladder.first else { continue }
            let widest = ladder.max { $0.track.format.width < $1.track.format.width }?.track.format
            xml += "    <AdaptationSet id=\"\(setID)\" contentType=\"video\" mimeType=\"video/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\""
                + " maxWidth=\"\(widest?.width ?? 0)\" maxHeight=\"\(widest?.height ?? 0)\" par=\"16:9\">\n"
            xml += "      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"\(role)\"/>\n"
            xml += contentProtection()
            if first.singleFile == nil { xml += template(first.track) }
            for representation in ladder {
                let rendition = representation.ref.kind == .hevc ? video.asset.hevc[representation.ref.index] : video.asset.video[representation.ref.index]
                xml += "      <Representation id=\"\(representation.ref.uuid)\" bandwidth=\"\(representation.track.peakRate)\""
                    + " codecs=\"\(representation.codecs)\" width=\"\(rendition.width)\" height=\"\(rendition.height)\""
                    + " frameRate=\"\(DASHManifest.frameRate(rendition.frameRate))\" sar=\"1:1\" scanType=\"progressive\"" + segmentBase(representation)
            }
            xml += "    </AdaptationSet>\n"
            setID += 1
        }
        for (position, (representation, language, label, channels)) in audios.enumerated() {
            xml += "    <AdaptationSet id=\"\(setID)\" contentType=\"audio\" mimeType=\"audio/mp4\" lang=\"\(DASHManifest.escape(language))\""
                + " segmentAlignment=\"true\" startWithSAP=\"1\">\n"
            xml += "      <Label>\(DASHManifest.escape(label))</Label>\n"
            xml += "      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"\(position == 0 ? "main" : "alternate")\"/>\n"
            xml += "      <AudioChannelConfiguration schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" value=\"\(DASHManifest.escape(channels))\"/>\n"
            xml += contentProtection()
            if representation.singleFile == nil { xml += template(representation.track) }
            xml += "      <Representation id=\"\(representation.ref.uuid)\" bandwidth=\"\(representation.track.peakRate)\""
                + " codecs=\"\(representation.codecs)\" audioSamplingRate=\"\(representation.track.format.sampleRate)\"" + segmentBase(representation)
            xml += "    </AdaptationSet>\n"
            setID += 1
        }
        for text in texts {
            xml += "    <AdaptationSet id=\"\(setID)\" contentType=\"text\" mimeType=\"text/vtt\" lang=\"\(DASHManifest.escape(text.language))\">\n"
            xml += "      <Label>\(DASHManifest.escape(text.label))</Label>\n"
            xml += "      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"subtitle\"/>\n"
            xml += "      <Representation id=\"\(text.ref.uuid)\" bandwidth=\"256\">\n"
            xml += "        <BaseURL>\(DASHManifest.escape(text.url))</BaseURL>\n"
            xml += "      </Representation>\n"
            xml += "    </AdaptationSet>\n"
            setID += 1
        }
        if let (track, url) = thumbnails {
            let (duration, timescale) = track.spriteDuration == track.spriteDuration.rounded()
                ? (Int(track.spriteDuration), 1) : (Int((track.spriteDuration * 1000).rounded()), 1000)
            xml += "    <AdaptationSet id=\"\(setID)\" contentType=\"image\" mimeType=\"image/jpeg\">\n"
            xml += "      <SegmentTemplate media=\"\(DASHManifest.escape(url))\" duration=\"\(duration)\" timescale=\"\(timescale)\" startNumber=\"1\"/>\n"
            xml += "      <Representation id=\"thumbnails\" bandwidth=\"\(track.bandwidth)\" width=\"\(track.spriteWidth)\" height=\"\(track.spriteHeight)\">\n"
            xml += "        <EssentialProperty schemeIdUri=\"http://dashif.org/guidelines/thumbnail_tile\" value=\"\(track.layout)\"/>\n"
            xml += "      </Representation>\n"
            xml += "    </AdaptationSet>\n"
        }
        xml += "  </Period>\n</MPD>\n"
        return xml
    }

    /// DASH-IF's content protection signalling for a cenc set: the mp4protection descriptor with
    /// `cenc:default_KID` (as in `tenc`, lowercase, dashed, never byte-swapped), the W3C ClearKey
    /// descriptor with its license URL (`dashif:laurl` and the legacy `clearkey:Laurl`), and the
    /// common-system `pssh` the init segments carry.
    private func contentProtection() -> String {
        guard let protection else { return "" }
        let url = DASHManifest.escape(protection.licenseURL)
        let pssh = Data(TrackProtection.pssh(systemID: TrackProtection.commonSystemID, keyIDs: [protection.key.keyIDBytes])).base64EncodedString()
        return """
              <ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc" cenc:default_KID="\(protection.key.keyID)"/>
              <ContentProtection schemeIdUri="urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e" value="ClearKey1.0">
                <dashif:laurl>\(url)</dashif:laurl>
                <clearkey:Laurl Lic_type="EME-1.0">\(url)</clearkey:Laurl>
              </ContentProtection>
              <ContentProtection schemeIdUri="urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b" value="cenc">
                <cenc:pssh>\(pssh)</cenc:pssh>
              </ContentProtection>

        """
    }

    /// `presentationStart90k` in `timescale` ticks, rounded: the `presentationTimeOffset` that puts
    /// the first video frame at presentation time 0.
    private func presentationTimeOffset(timescale: UInt64) -> UInt64 { (presentationStart90k * timescale + 45000) / 90000 }

    /// The end of a `Representation` element: `/>` when its set's template addresses it, else
    /// its `track.mp4` and the `SegmentBase` that says where the init segment and the `sidx` are.
    private func segmentBase(_ representation: Representation) -> String {
        guard let file = representation.singleFile else { return "/>\n" }
        let timescale = UInt64(representation.track.format.timescale)
        let offset = presentationTimeOffset(timescale: timescale)
        let index = file.indexRange
        return ">\n"
            + "        <BaseURL>\(representation.ref.uuid)/\(SingleTrackFile.name)?fastly_token=\(token)</BaseURL>\n"
            + "        <SegmentBase timescale=\"\(timescale)\" presentationTimeOffset=\"\(offset)\""
            + " indexRange=\"\(index.offset)-\(index.offset + index.length - 1)\" indexRangeExact=\"true\">\n"
            + "          <Initialization range=\"0-\(file.initLength - 1)\"/>\n"
            + "        </SegmentBase>\n"
            + "      </Representation>\n"
    }

    /// The `SegmentTemplate` of an adaptation set (every representation of it has the same
    /// fragment boundaries): the timeline from the first representation's fragments.
    private func template(_ track: PackagedTrack) -> String {
        let timescale = UInt64(track.format.timescale)
        let repeated = track.repeated(video.repeatCount)
        let offset = presentationTimeOffset(timescale: timescale)
        var xml = "      <SegmentTemplate timescale=\"\(timescale)\" presentationTimeOffset=\"\(offset)\" startNumber=\"0\""
            + " initialization=\"$RepresentationID$/init.mp4?fastly_token=\(token)\""
            + " media=\"$RepresentationID$/$Number$.m4s?fastly_token=\(token)\">\n"
        xml += "        <SegmentTimeline>\n"
        var runs: [(start: UInt64, duration: UInt64, repeats: Int)] = []
        var expected: UInt64?
        for index in 0 ..< repeated.count {
            let start = repeated.timing(index).earliestPresentation
            let duration = repeated.span(index)
            if let last = runs.last, last.duration == duration, expected == start {
                runs[runs.count - 1].repeats += 1
            } else {
                runs.append((start, duration, 0))
            }
            expected = start + duration
        }
        var previousEnd: UInt64?
        for run in runs {
            // t only where the timeline does not simply continue from the previous run.
            let t = previousEnd == run.start ? "" : " t=\"\(run.start)\""
            xml += "          <S\(t) d=\"\(run.duration)\"\(run.repeats > 0 ? " r=\"\(run.repeats)\"" : "")/>\n"
            previousEnd = run.start + run.duration * UInt64(run.repeats + 1)
        }
        xml += "        </SegmentTimeline>\n"
        xml += "      </SegmentTemplate>\n"
        return xml
    }

    /// `PT12.000S`: an xs:duration in seconds, to the millisecond.
    static func duration(_ seconds: Double) -> String { String(format: "PT%.3fS", seconds) }

    /// `25` or `30000/1001`: a frame rate as the MPD writes it.
    static func frameRate(_ rate: Double) -> String {
        if rate == rate.rounded() { return String(Int(rate)) }
        let ntsc = (rate * 1001).rounded()
        return abs(ntsc / 1001 - rate) < 0.001 ? "\(Int(ntsc))/1001" : String(format: "%.3f", rate)
    }

    /// Text for XML content and attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }
}
