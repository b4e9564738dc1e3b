import Crypto
import Foundation
import WireModels

/// `url-token`: fastly_token values and the URLs that carry them, as the backend checks them on
/// every media request and the SDK reads their expiry.
///
/// First byte even: the input is a URL (or token) as text. Odd: the rest is the token's
/// decoded form (`{8 hex}_{64 hex}` when well-formed), base64-encoded here so mutations reach
/// the inner layout; it is checked against a fixed key and path.
enum TokenTarget {
    static let key = URLToken.Key(secret: SymmetricKey(data: Array(repeating: UInt8(0x5A), count: 32)))
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    static let target = FuzzTarget(name: "url-token") { buffer in
        var input = FuzzInput(buffer)
        if input.byte() & 1 == 0 {
            let text = String(decoding: input.rest(), as: UTF8.self)
            _ = URLToken.expiry(of: text)
            _ = URLToken.expiry(ofURL: text)
            let path = URLToken.path(ofURL: text)
            if let token = URLToken.token(inURL: text) { _ = try? key.verify(token, path: path, now: now) }
            _ = try? key.verify(text, path: "/media/v1/hls/v5/clear/6415818918001/6415818918101/0/0.ts", now: now)
            _ = URLToken.appending(token: "dG9rZW4=", to: text)
        } else {
            let token = Data(input.rest()).base64EncodedString()
            let path = "/manifest/v1/hls/v5/fairplay/6415818918001/6415818918104/2s/master.m3u8"
            _ = URLToken.expiry(of: token)
            _ = try? key.verify(token, path: path, now: now)
            _ = URLToken.expiry(ofURL: URLToken.appending(token: token, to: "http://127.0.0.1:8080" + path))
        }
    }
}
