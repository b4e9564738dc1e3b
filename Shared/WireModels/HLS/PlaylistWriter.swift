extension MasterPlaylist {
    /// The playlist as text: LF line endings, `#EXTM3U` first, attributes in a stable order.
    ///
    /// Parsing the result gives back an equal model; comments and blank lines of a parsed text are not kept.
    public func render() -> String {
        var lines = ["#EXTM3U"]
        if let version { lines.append("#EXT-X-VERSION:\(version)") }
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        lines += sessionKeys.map { "#EXT-X-SESSION-KEY:\($0.attributes)" }
        lines += renditions.map { "#EXT-X-MEDIA:\($0.attributes)" }
        for variant in variants {
            lines.append("#EXT-X-STREAM-INF:\(variant.attributes)")
            lines.append(variant.uri)
        }
        lines += otherTags
        return lines.joined(separator: "\n") + "\n"
    }
}

extension MediaPlaylist {
    /// The playlist as text: LF line endings, `#EXTM3U` first, `EXTINF` durations with three decimals.
    ///
    /// Before each segment: `DISCONTINUITY`, its `KEY`s, `MAP`, its other tags, `EXTINF`, `BYTERANGE`, URI.
    public func render() -> String {
        var lines = ["#EXTM3U"]
        if let version { lines.append("#EXT-X-VERSION:\(version)") }
        lines.append("#EXT-X-TARGETDURATION:\(targetDuration)")
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)")
        if let discontinuitySequence { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }
        if let playlistType { lines.append("#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)") }
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        for segment in segments {
            if segment.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            lines += segment.keys.map { "#EXT-X-KEY:\($0.attributes)" }
            if let map = segment.map { lines.append("#EXT-X-MAP:\(map.attributes)") }
            lines += segment.otherTags
            lines.append("#EXTINF:\(HLSValue.fixed(segment.duration, decimals: 3)),\(segment.title ?? "")")
            if let byteRange = segment.byteRange { lines.append("#EXT-X-BYTERANGE:\(byteRange)") }
            lines.append(segment.uri)
        }
        lines += trailingTags
        if endList { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }
}
