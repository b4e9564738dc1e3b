import Foundation

/// GStreamer as a second player (Debian's `gstreamer1.0-tools` and plugins, which `make test-deps`
/// installs): playbin3 picks hlsdemux2 or dashdemux2 by the URI's answer.
public enum GStreamer {
    public static let launch = "/usr/bin/gst-launch-1.0"

    /// Plays `uri` with playbin3 into fake sinks as fast as it can; returns whether it reached
    /// EOS without an error, and the last video PTS in seconds.
    public static func play(_ uri: String) async throws -> (eos: Bool, lastVideoPTS: Double, log: String) {
        let output = try await Run.process(launch, [
            "-v", "playbin3", "uri=\(uri)",
            "video-sink=fakesink name=vs sync=false silent=false", "audio-sink=fakesink name=as sync=false",
            "text-sink=fakesink sync=false",
        ])
        let log = output.stdoutText + output.stderrText
        let pts = log.split(separator: "\n").filter { $0.contains("(vs:sink)") }.compactMap { line -> Double? in
            guard let match = line.firstMatch(of: /pts: (\d+):(\d+):(\d+\.\d+)/) else { return nil }
            return Double(match.1)! * 3600 + Double(match.2)! * 60 + Double(match.3)!
        }
        return (output.exitCode == 0 && log.contains("Got EOS") && !log.contains("ERROR"), pts.max() ?? 0, log)
    }
}
