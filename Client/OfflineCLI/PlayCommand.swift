import ArgumentParser
import Foundation
import OfflineSDK

struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play", abstract: "Play an offline video: its license is checked on this device, then its media are served clear.",
        discussion: """
            By default (or with --serve) the video is served on a loopback URL any HLS player opens \
            (ffplay, mpv, VLC) until Ctrl-C. --output FILE writes the clear stream to one MPEG-TS file instead. \
            The first play of a rental with a play window starts that window. It plays beside a running \
            `offline download` of the same folder too, the video being downloaded included: segments on disk \
            are served at once, the others as the download brings them.
            """)
    @OptionGroup var storage: StorageOptions
    @OptionGroup var format: OutputOptions
    @Flag(help: "Serve the clear stream on a loopback URL until Ctrl-C (the default).") var serve = false
    @Option(name: .customLong("output"), help: "Write the clear stream to this MPEG-TS file instead of serving it.") var outputFile: String?
    @Option(help: "With --output: the audio language to put in the file (default: the first downloaded).") var audio: String?
    @Argument(help: "The offline video's token (a unique prefix).") var token: String

    func run() async throws {
        try await runCommand(json: format.json, refusal: ExitStatus.playbackRefused) {
            let manager = try await storage.ownerOrReader()
            let token = try await resolveToken(token, in: manager)
            let name = await manager.videoObject(fromOfflineVideoToken: token)?.name ?? token
            let before = try? await manager.licenseInfo(token)
            let playback = try await manager.openPlayback(token)
            let now = storage.configuration().clock()
            let licenseLine = Format.license(playback.license, fairPlay: playback.license != nil, now: now)
            let startedWindow = before?.firstPlay == nil && playback.license?.firstPlay != nil

            if let outputFile {
                let file = URL(fileURLWithPath: outputFile)
                let audioLanguage = audio ?? playback.tracks.first { $0.kind == .audio }?.language
                let start = ContinuousClock.now
                try await playback.export(to: file, audioLanguage: audioLanguage)
                let elapsed = ContinuousClock.now - start
                await playback.close()
                await finish(manager)
                let size = Int64((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0)
                if format.json {
                    JSONOutput.print(["token": token, "output": file.path, "bytes": size, "license_summary": licenseLine,
                                      "seconds": Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18])
                } else {
                    say("Wrote \(name) to \(file.path): \(Format.bytes(size)), clear \(playback.format == .cmaf ? "MP4" : "MPEG-TS")"
                        + (audioLanguage.map { " with \($0) audio" } ?? "") + ".")
                    say("License: \(licenseLine).")
                }
                return
            }

            let url = try playback.serve()
            if format.json {
                var document: [String: Any] = ["token": token, "url": url.absoluteString, "license_summary": licenseLine,
                                               "tracks": playback.tracks.map(Format.selection)]
                if let info = playback.license { document["license"] = LicenseCommand.json(info) }
                if let thumbnails = try playback.thumbnailTrackURL() { document["thumbnails"] = thumbnails.absoluteString }
                JSONOutput.print(document)
            } else {
                say("Playing \(name) offline: " + playback.tracks.map(Format.selection).joined(separator: ", "))
                say("License: \(licenseLine)" + (startedWindow ? " (this first play started the play window)" : "") + ".")
                say("")
                say("  " + Terminal.standard.styled(url.absoluteString, .bold))
                if let thumbnails = try playback.thumbnailTrackURL() {
                    say("  thumbnails: \(thumbnails.absoluteString) (\(playback.thumbnails.count) previews)")
                }
                say("")
                say("Open it in any HLS player: ffplay, mpv or vlc followed by the URL. Ctrl-C stops serving.")
            }
            // Serve until Ctrl-C.
            let (stopped, stop) = AsyncStream.makeStream(of: Void.self)
            let interrupt = Interrupt {
                await playback.close()
                await manager.close()
                stop.finish()
            }
            for await _ in stopped {}
            withExtendedLifetime(interrupt) {}
            if !format.json { say("Stopped serving.") }
        }
    }
}
