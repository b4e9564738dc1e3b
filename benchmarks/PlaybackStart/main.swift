import CurlTransfer
import Foundation
import OfflineSDK

// Measures the time from opening a playback session of an offline video to the first clear
// segment arriving over its loopback URL (open: license checks and key unsealing; serve: the
// loopback server; then a GET of the first video segment, decrypted on the fly).
//   PlaybackStart STORAGE TOKEN [RUNS]
// Prints each run in milliseconds, then the median.

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: PlaybackStart STORAGE TOKEN [RUNS]\n".utf8))
    exit(64)
}
var configuration = OfflineVideoManagerConfiguration(storageDirectory: URL(fileURLWithPath: arguments[1]))
configuration.role = .owner
let manager = try await OfflineVideoManager(configuration: configuration)
let client = HTTPClient()
let runs = arguments.count > 3 ? Int(arguments[3]) ?? 20 : 20
var times: [Double] = []
for _ in 0..<runs {
    let start = ContinuousClock.now
    let playback = try await manager.openPlayback(arguments[2])
    let master = try playback.serve()
    let track = playback.tracks[0]
    let first = master.deletingLastPathComponent().appendingPathComponent("0-video/00000.ts").absoluteString
    let response = try await client.send(HTTPClientRequest(url: first))
    let elapsed = ContinuousClock.now - start
    guard response.status == 200, !response.body.isEmpty else {
        FileHandle.standardError.write(Data("the first segment of \(track) answered \(response.status)\n".utf8))
        exit(1)
    }
    await playback.close()
    let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    times.append(milliseconds)
    print(String(format: "%.2f", milliseconds))
}
await manager.close()
times.sort()
print(String(format: "median %.2f ms", times[times.count / 2]))
