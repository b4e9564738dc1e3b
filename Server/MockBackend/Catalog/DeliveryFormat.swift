/// A kind of source a Dynamic Delivery account serves (catalog accounts' `delivery_formats`),
/// and HEVC delivery.
/// An account lists every one by default, as a real Dynamic Delivery account does; the
/// Playback API's `sources` and the manifests follow the account's list.
public enum DeliveryFormat: String, Sendable, CaseIterable, Codable, Comparable {
    /// HLS of MPEG-TS segments (`/manifest/v1/hls/v5/…`): clear, AES-128 and FairPlay.
    case tsHLS = "hls_ts"
    /// HLS v7 of CMAF segments (`/manifest/v2/hls/v7/…`): clear and FairPlay (`cbcs`).
    case cmafHLS = "hls_cmaf"
    /// DASH over the same CMAF segments (`/manifest/v2/dash/live-baseurl/…`).
    case dash
    /// Progressive MP4 sources (`high.mp4`, `low.mp4`) for clear videos.
    case mp4
    /// HEVC delivery: the asset's HEVC ladder (`hvc1`) beside the H.264 one in the CMAF sources
    /// (their URLs then carry `avc1_hvc1_mp4a`), never in TS HLS.
    case hevc

    public static func < (lhs: DeliveryFormat, rhs: DeliveryFormat) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The formats named by `names`, or a sentence saying which name is not one.
    static func parse(_ names: [String], account: String) throws(CatalogError) -> Set<DeliveryFormat> {
        var formats = Set<DeliveryFormat>()
        for name in names {
            guard let format = DeliveryFormat(rawValue: name) else {
                throw CatalogError(.invalidCatalog, "account \(account): delivery format '\(name)' is not one of "
                    + allCases.map(\.rawValue).joined(separator: ", "))
            }
            guard formats.insert(format).inserted else {
                throw CatalogError(.invalidCatalog, "account \(account): delivery format '\(name)' is listed twice")
            }
        }
        guard !formats.isEmpty else {
            throw CatalogError(.invalidCatalog, "account \(account): delivery_formats is empty; leave it out for every format")
        }
        return formats
    }
}
