import WireModels

/// HLS playlists as downloaded (SDK) or read back from a package on disk.
enum PlaylistTargets {
    /// `hls-master`: MasterPlaylist(parsing:) and HLSPlaylist.parse; what parses is rendered
    /// and parsed again (the SDK rewrites master playlists for its loopback server).
    static let master = FuzzTarget(name: "hls-master") { buffer in
        let text = String(decoding: buffer, as: UTF8.self)
        if let playlist = try? MasterPlaylist(parsing: text) {
            _ = try? MasterPlaylist(parsing: playlist.render())
            for variant in playlist.variants { _ = variant.hasVideo }
            for rendition in playlist.renditions { _ = playlist.renditions(inGroup: rendition.groupID, type: rendition.type) }
            for key in playlist.sessionKeys { _ = key.ivBytes }
        }
        _ = try? HLSPlaylist.parse(text)
    }

    /// `hls-media`: the streaming byte parser (how the SDK reads media playlists) and
    /// MediaPlaylist(parsing:), which must agree segment for segment; then the helpers a
    /// download plan calls on every segment.
    static let media = FuzzTarget(name: "hls-media") { buffer in
        let bytes = Array(buffer)
        var streamed: [Segment] = []
        let fromBytes = Result { () throws(HLSParseError) in try MediaPlaylist.parse(utf8: bytes) { streamed.append($0) } }
        let text = String(decoding: bytes, as: UTF8.self)
        let parsed = Result { () throws(HLSParseError) in try MediaPlaylist(parsing: text) }
        // Both read the same lines when the bytes are UTF-8 (invalid UTF-8 is repaired in `text` only).
        if String(validating: bytes, as: UTF8.self) != nil {
            switch (fromBytes, parsed) {
            case (.success(var head), .success(let playlist)):
                head.segments = streamed
                FuzzCheck.expect(head == playlist, "parse(utf8:segment:) and init(parsing:) read different playlists")
            case let (.failure(a), .failure(b)):
                FuzzCheck.expect(a == b, "parse(utf8:segment:) and init(parsing:) fail differently: \(a) / \(b)")
            default:
                FuzzCheck.expect(false, "parse(utf8:segment:) and init(parsing:) disagree on success")
            }
        }
        guard case .success(let playlist) = parsed else { return }
        for index in playlist.segments.indices {
            _ = playlist.keyInEffect(forSegmentAt: index)?.ivBytes
            _ = playlist.mapInEffect(forSegmentAt: index)
            _ = playlist.resolvedByteRange(forSegmentAt: index)
        }
        _ = playlist.totalDuration
        _ = try? MediaPlaylist(parsing: playlist.render())
    }
}
