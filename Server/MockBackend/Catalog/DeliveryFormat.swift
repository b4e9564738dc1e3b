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

/// How an account's CMAF sources (HLS v7 and DASH) address their media (catalog accounts'
/// `cmaf_addressing`). Both forms hold the same bytes: a range of `track.mp4` is its `{n}.m4s`.
public enum CMAFAddressing: String, Sendable, CaseIterable {
    /// One file per segment (`init.mp4`, `{n}.m4s`; DASH `SegmentTemplate`): what Dynamic
    /// Delivery serves, and the default.
    case segments
    /// One file per track (`track.mp4`: the init segment, a `sidx`, the media segments), addressed
    /// by byte range: HLS `EXT-X-MAP:BYTERANGE` and `EXT-X-BYTERANGE`, DASH `SegmentBase` in the
    /// on-demand profile, as on-demand packagers (Shaka Packager, Bento4, MediaPackage) serve it.
    case byteRanges = "byte_ranges"

    /// The addressing named `name`, or a sentence saying it is not one.
    static func parse(_ name: String, account: String) throws(CatalogError) -> CMAFAddressing {
        guard let addressing = CMAFAddressing(rawValue: name) else {
            throw CatalogError(.invalidCatalog, "account \(account): cmaf_addressing '\(name)' is not one of "
                + allCases.map(\.rawValue).joined(separator: ", "))
        }
        return addressing
    }
}
