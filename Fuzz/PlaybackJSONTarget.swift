import Foundation
import WireModels

/// `playback-json`: Playback API bodies as the SDK decodes them (video, search result,
/// playlist, error array) and the raw JSON it keeps beside a video. What decodes is encoded
/// again and decoded back: the SDK stores these documents and reads them in a later process.
enum PlaybackJSONTarget {
    static let target = FuzzTarget(name: "playback-json") { buffer in
        let data = Data(buffer)
        let decoder = WireJSON.decoder()
        roundTrip(Video.self, data, decoder)
        roundTrip([Video].self, data, decoder)
        roundTrip(SearchResult.self, data, decoder)
        roundTrip(Playlist.self, data, decoder)
        roundTrip([APIError].self, data, decoder)
        roundTrip(JSONValue.self, data, JSONDecoder())
    }

    private static func roundTrip<T: Codable>(_ type: T.Type, _ data: Data, _ decoder: JSONDecoder) {
        guard let value = try? decoder.decode(type, from: data) else { return }
        let encoded: Data
        do { encoded = try WireJSON.encoder(sortedKeys: true).encode(value) } catch {
            FuzzCheck.expect(false, "a decoded \(type) does not encode: \(error)")
            return
        }
        do { _ = try decoder.decode(type, from: encoded) } catch {
            FuzzCheck.expect(false, "an encoded \(type) does not decode again: \(error)\n\(String(decoding: encoded, as: UTF8.self))")
        }
    }
}
