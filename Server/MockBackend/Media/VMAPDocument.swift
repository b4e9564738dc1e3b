import Foundation
import WireModels

/// The VMAP 1.0 document (IAB) static URL delivery answers `hls.vmap` and `dash.vmap` with,
/// as Brightcove's server-side ad insertion serves it to players that play the stream and
/// fire the ad beacons themselves ("Unicorn Once"): the content stream in a `unicornOnce`
/// extension, and an ad break at the start and at every `AD` cue point of the video.
///
/// The mock stitches no ads: each break's ad source is an empty VAST 3.0 document (no ad),
/// so a player walks the breaks, finds nothing to play and plays the stream as it is.
struct VMAPDocument: Sendable {
    static let contentType = "application/xml"

    /// The stream the VMAP is for: the HLS master or the DASH MPD, signed.
    var contentURL: String
    /// The SSAI ad configuration the token named (`vod.ssai`).
    var adConfigID: String
    /// Where the breaks are, seconds from the start (0 is the pre-roll).
    var breaks: [Double]

    init(contentURL: String, adConfigID: String, video: CatalogVideo) {
        self.contentURL = contentURL
        self.adConfigID = adConfigID
        let cues = video.cuePoints.filter { $0.type == "AD" && $0.time > 0 }.map(\.time)
        breaks = [0] + Array(Set(cues)).sorted()
    }

    func render() -> String {
        var xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <vmap:VMAP xmlns:vmap="http://www.iab.net/videosuite/vmap" version="1.0">

        """
        for (index, time) in breaks.enumerated() {
            let offset = time == 0 ? "start" : VMAPDocument.timeOffset(time)
            let id = time == 0 ? "preroll" : "midroll-\(index)"
            xml += """
              <vmap:AdBreak timeOffset="\(offset)" breakType="linear" breakId="\(id)">
                <vmap:AdSource id="\(id)-ads" allowMultipleAds="true" followRedirects="true">
                  <vmap:VASTAdData><VAST version="3.0"/></vmap:VASTAdData>
                </vmap:AdSource>
              </vmap:AdBreak>

            """
        }
        xml += """
          <vmap:Extensions>
            <vmap:Extension type="unicornOnce">
              <uo:unicornOnce xmlns:uo="uri:uplynk:uo" contenturi="\(DASHManifest.escape(contentURL))" adconfig="\(DASHManifest.escape(adConfigID))"/>
            </vmap:Extension>
          </vmap:Extensions>
        </vmap:VMAP>

        """
        return xml
    }

    /// `00:01:30.000`: a VMAP time offset.
    static func timeOffset(_ seconds: Double) -> String {
        let milliseconds = Int((seconds * 1000).rounded())
        return String(format: "%02d:%02d:%02d.%03d", milliseconds / 3_600_000, milliseconds / 60000 % 60, milliseconds / 1000 % 60, milliseconds % 1000)
    }
}
