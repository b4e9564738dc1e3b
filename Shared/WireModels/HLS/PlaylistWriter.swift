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
        var text = ""
        renderHead(into: &text)
        for segment in segments { segment.render(into: &text) }
        renderTail(into: &text)
        return text
    }

    /// Appends the lines before the first segment. With `Segment.render(into:)` and
    /// `renderTail(into:)`, writes a playlist whose segments are never all in memory.
    public func renderHead(into text: inout String) {
        text += "#EXTM3U\n"
        if let version { text += "#EXT-X-VERSION:\(version)\n" }
        text += "#EXT-X-TARGETDURATION:\(targetDuration)\n"
        text += "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)\n"
        if let discontinuitySequence { text += "#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)\n" }
        if let playlistType { text += "#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)\n" }
        if independentSegments { text += "#EXT-X-INDEPENDENT-SEGMENTS\n" }
    }

    /// Appends the lines after the last segment: trailing tags and `EXT-X-ENDLIST`.
    public func renderTail(into text: inout String) {
        for tag in trailingTags { text += tag + "\n" }
        if endList { text += "#EXT-X-ENDLIST\n" }
    }
}

extension Segment {
    /// Appends the segment's lines (see `MediaPlaylist.render()`).
    public func render(into text: inout String) {
        if discontinuity { text += "#EXT-X-DISCONTINUITY\n" }
        for key in keys { text += "#EXT-X-KEY:\(key.attributes)\n" }
        if let map { text += "#EXT-X-MAP:\(map.attributes)\n" }
        for tag in otherTags { text += tag + "\n" }
        text += "#EXTINF:" + HLSValue.fixed(duration, decimals: 3) + "," + (title ?? "") + "\n"
        if let byteRange { text += "#EXT-X-BYTERANGE:\(byteRange)\n" }
        text += uri + "\n"
    }
}
