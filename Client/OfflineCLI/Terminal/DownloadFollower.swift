import Foundation
import OfflineSDK

/// Follows downloads until each has ended, showing their progress: on a terminal one live bar
/// per media selection (bytes, rate, time left) redrawn in place; otherwise plain lines, at
/// most one a second per download; with `--json`, JSON lines.
final class DownloadFollower {
    enum Mode { case bars, lines, json }

    private let manager: OfflineVideoManager
    private let terminal: Terminal
    private let mode: Mode
    private var titles: [OfflineVideoToken: String] = [:]
    private var short: [OfflineVideoToken: String] = [:]
    private var order: [OfflineVideoToken] = []
    private var open: Set<OfflineVideoToken> = []
    private var started: [OfflineVideoToken: ContinuousClock.Instant] = [:]
    private var progress: [OfflineVideoToken: [OfflineTrackProgress]] = [:]
    /// Recent (time, bytes) samples per download and track, for rates.
    private var samples: [OfflineVideoToken: [Int: [(ContinuousClock.Instant, Int64)]]] = [:]
    private var lastDraw = ContinuousClock.now - .seconds(10)
    private var lastLine: [OfflineVideoToken: ContinuousClock.Instant] = [:]
    private var drawnLines = 0
    /// End-of-download lines, printed under the bars once every download has ended.
    private var summaries: [String] = []
    /// How each download ended (nil error: completed).
    private(set) var outcomes: [OfflineVideoToken: OfflineVideoError?] = [:]

    init(manager: OfflineVideoManager, terminal: Terminal = .standard, json: Bool) {
        self.manager = manager
        self.terminal = terminal
        mode = json ? .json : (terminal.isTTY ? .bars : .lines)
    }

    /// Follows `tokens` (with their titles) on `events` until each has ended.
    func follow(_ events: AsyncStream<OfflineVideoEvent>, _ downloads: [(token: OfflineVideoToken, title: String)]) async {
        for (token, title) in downloads where titles[token] == nil {
            titles[token] = title
            order.append(token)
            open.insert(token)
            started[token] = .now
        }
        short = shortTokens(order)
        guard !open.isEmpty else { return }
        await refresh(force: true)
        for await event in events {
            switch event {
            case .progress(let token, _, _), .downloadProgress(let token, _):
                guard open.contains(token) else { continue }
                await refresh(force: false)
            case .mediaSelectionFinished(let token, let selection):
                guard open.contains(token) else { continue }
                if mode == .json {
                    JSONOutput.print(["event": "track_finished", "token": token, "selection": Format.selection(selection)])
                } else if mode == .lines {
                    say("\(short[token] ?? token)  \(Format.selection(selection)) done")
                }
            case .downloadFinished(let token, let error):
                guard open.remove(token) != nil else { continue }
                outcomes[token] = .some(error)
                await refresh(force: true)
                finished(token, error)
            case .willDownloadVariants, .staticImagesDownloaded, .storageChanged, .licenseExpirationChanged, .downloadPurged,
                 .analyticsEventsDropped, .downloadStateChanged:
                break
            }
            if open.isEmpty { break }
        }
        for summary in summaries { say(summary) }
        summaries = []
    }

    /// Draws (or prints) progress: bars at most 10 times a second, lines once a second.
    private func refresh(force: Bool) async {
        let now = ContinuousClock.now
        let interval: Duration = mode == .bars ? .milliseconds(100) : .seconds(1)
        guard force || now - lastDraw >= interval else { return }
        lastDraw = now
        for token in order {
            guard let tracks = try? await manager.downloadProgress(token) else { continue }
            progress[token] = tracks
            for (index, track) in tracks.enumerated() {
                var list = samples[token, default: [:]][index, default: []]
                list.append((now, track.bytesDone))
                list.removeAll { now - $0.0 > .seconds(3) }
                samples[token, default: [:]][index] = list
            }
        }
        switch mode {
        case .bars: drawBars()
        case .lines:
            for token in order where open.contains(token) && (force || now - (lastLine[token] ?? now - .seconds(2)) >= .seconds(1)) {
                lastLine[token] = now
                say(line(token))
            }
        case .json:
            for token in order where open.contains(token) { JSONOutput.print(jsonProgress(token)) }
        }
    }

    /// Bytes per second of a track over the last seconds.
    private func rate(_ token: OfflineVideoToken, _ index: Int) -> Double {
        guard let list = samples[token]?[index], let first = list.first, let last = list.last, last.0 > first.0 else { return 0 }
        let seconds = Double((last.0 - first.0).components.attoseconds) / 1e18 + Double((last.0 - first.0).components.seconds)
        return Double(last.1 - first.1) / seconds
    }

    private func totals(_ token: OfflineVideoToken) -> (done: Int64, expected: Int64, rate: Double) {
        let tracks = progress[token] ?? []
        let rate = tracks.indices.reduce(0) { $0 + self.rate(token, $1) }
        return (tracks.reduce(0) { $0 + $1.bytesDone }, tracks.reduce(0) { $0 + $1.bytesExpected }, rate)
    }

    private func overallPercent(_ token: OfflineVideoToken) -> Double {
        if case .some(.none) = outcomes[token] { return 100 }
        let (done, expected, _) = totals(token)
        guard expected > 0 else { return 0 }
        return min(99.9, Double(done) / Double(expected) * 100)
    }

    private func drawBars() {
        let width = terminal.width
        var lines: [String] = []
        for token in order {
            let (done, expected, overallRate) = totals(token)
            var header = terminal.styled(titles[token] ?? token, .bold) + "  " + terminal.styled(short[token] ?? token, .dim)
            if open.contains(token) {
                header += "  " + Format.bytes(done) + " / ~" + Format.bytes(expected)
                if overallRate > 0 { header += "  " + Format.rate(overallRate) }
            }
            lines.append(header)
            let labelWidth = max(14, (progress[token] ?? []).map { Format.selection($0.selection).count }.max() ?? 0)
            let barWidth = max(10, min(40, width - labelWidth - 46))
            for (index, track) in (progress[token] ?? []).enumerated() {
                let label = Format.selection(track.selection).padding(toLength: labelWidth, withPad: " ", startingAt: 0)
                let fraction = track.percent / 100
                let filled = Int((Double(barWidth) * fraction).rounded(.down))
                let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: barWidth - filled)
                let complete = track.percent >= 100
                var line = "  \(label) " + terminal.styled(bar, complete ? .green : .cyan) + String(format: " %5.1f%%", track.percent)
                line += "  " + Format.bytes(track.bytesDone).padding(toLength: 8, withPad: " ", startingAt: 0)
                let speed = rate(token, index)
                if !complete, open.contains(token), speed > 0 {
                    let left = Double(max(0, track.bytesExpected - track.bytesDone)) / speed
                    line += "  " + Format.rate(speed).padding(toLength: 10, withPad: " ", startingAt: 0) + "  " + Format.clock(left) + " left"
                }
                lines.append(line)
            }
        }
        var output = drawnLines > 0 ? "\u{1B}[\(drawnLines)F" : ""
        for line in lines { output += "\u{1B}[2K" + line + "\n" }
        drawnLines = lines.count
        print(output, terminator: "")
        fflush(nil)
    }

    /// One plain line for a download: `e3b0c442  61.0%  1.1 MB / ~1.8 MB  950 KB/s  1 s left  (video 416x234 64%, audio en 58%)`.
    private func line(_ token: OfflineVideoToken) -> String {
        let (done, expected, rate) = totals(token)
        var text = "\(short[token] ?? token)  " + String(format: "%5.1f%%", overallPercent(token)) + "  \(Format.bytes(done)) / ~\(Format.bytes(expected))"
        if rate > 0 {
            text += "  \(Format.rate(rate))  \(Format.clock(Double(max(0, expected - done)) / rate)) left"
        }
        let tracks = (progress[token] ?? []).map { "\(Format.selection($0.selection)) \(String(format: "%.0f%%", $0.percent))" }
        return text + "  (" + tracks.joined(separator: ", ") + ")"
    }

    private func jsonProgress(_ token: OfflineVideoToken) -> [String: Any] {
        let (done, expected, rate) = totals(token)
        return ["event": "progress", "token": token, "percent": (overallPercent(token) * 10).rounded() / 10, "bytes": done,
                "expected_bytes": expected, "bytes_per_second": rate.rounded(),
                "tracks": (progress[token] ?? []).map { ["selection": Format.selection($0.selection), "percent": ($0.percent * 10).rounded() / 10,
                                                         "bytes": $0.bytesDone, "expected_bytes": $0.bytesExpected] as [String: Any] }]
    }

    private func finished(_ token: OfflineVideoToken, _ error: OfflineVideoError?) {
        let elapsed = started[token].map { ContinuousClock.now - $0 } ?? .zero
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let (done, _, _) = totals(token)
        switch mode {
        case .json:
            var document: [String: Any] = ["event": "finished", "token": token, "state": error == nil ? "completed" : "error",
                                           "bytes": done, "seconds": (seconds * 100).rounded() / 100]
            if let error { document["error"] = ["code": error.code.rawValue, "reason": error.reason.rawValue, "message": error.message] }
            JSONOutput.print(document)
        case .bars, .lines:
            let summary = error.map { terminal.styled("✘ ", .red) + "\(titles[token] ?? token) failed: \(sentence($0.message))" }
                ?? terminal.styled("✔ ", .green)
                + "\(titles[token] ?? token): \(Format.bytes(done)) in \(String(format: "%.1f", seconds)) s, token \(short[token] ?? token)"
            if mode == .bars { summaries.append(summary) } else { say(summary) }
        }
    }
}
