/// Turns protected CMAF (ISO/IEC 23001-7) into clear CMAF an unmodified player reads, for
/// the offline SDK: the init segment loses its `sinf` and `pssh` and its `encv`/`enca`
/// entry becomes the original format again; media segments are decrypted in memory and lose
/// their `senc`, `saiz`, `saio`, `seig` groups and `pssh`. Every size and offset the
/// removals change is patched; nothing else moves, so a clear input comes back as it was.
package enum ProtectionRemoval {
    /// The init segment `bytes` without protection, and what its protection said (nil,
    /// and `bytes` unchanged, when no sample entry is protected).
    ///
    /// Reads `moov` → `trak` → `mdia` → `minf` → `stbl` → `stsd`; each `encv`/`enca` entry's
    /// `sinf` (`frma`, `schm`, `schi`/`tenc`) is read and removed and the entry takes the
    /// original type; every `pssh` of `moov` and the `seig` groups of `stbl` are removed; the
    /// sizes of the entry, `stsd`, `stbl`, `minf`, `mdia`, `trak` and `moov` follow.
    /// Schemes other than `cbcs` and `cenc`, and more than one protected track, are refused.
    package static func clearInit(_ bytes: [UInt8]) throws(CMAFError) -> (clear: [UInt8], protection: ProtectedTrackInfo?) {
        var edits = BoxEdits()
        var found: ProtectedTrackInfo?
        var top = BoxIterator(bytes)
        var sawMovie = false
        while let box = try top.next() {
            guard box.type == "moov" else { continue }
            guard !sawMovie else { throw CMAFError(.malformedBox, "the init segment has more than one 'moov'") }
            sawMovie = true
            found = try clearMovie(bytes, box, &edits)
        }
        guard sawMovie else { throw CMAFError(.malformedBox, "the init segment has no 'moov'") }
        guard let found else { return (bytes, nil) }
        return (try edits.apply(to: bytes).bytes, found)
    }

    /// `moov`: its tracks, its `pssh` boxes removed, the protected track's `trex` defaults.
    private static func clearMovie(_ bytes: [UInt8], _ movie: Box, _ edits: inout BoxEdits) throws(CMAFError) -> ProtectedTrackInfo? {
        var found: ProtectedTrackInfo?
        var trackDefaults: [UInt32: (descriptionIndex: UInt32, size: UInt32)] = [:]
        var children = BoxIterator(bytes, in: movie.body)
        while let box = try children.next() {
            switch box.type {
            case "trak":
                guard let info = try clearTrack(bytes, box, &edits) else { continue }
                guard found == nil else { throw CMAFError(.unsupportedStream, "more than one protected track in one init segment") }
                found = info
            case "pssh":
                edits.remove(box.range)
            case "mvex":
                var extends = BoxIterator(bytes, in: box.body)
                while let trex = try extends.next() {
                    guard trex.type == "trex" else { continue }
                    var reader = FieldReader(bytes, body: trex)
                    _ = try reader.versionAndFlags()
                    let trackID = try reader.u32("track_ID")
                    let descriptionIndex = try reader.u32("default sample description index")
                    _ = try reader.u32("default sample duration")
                    trackDefaults[trackID] = (descriptionIndex, try reader.u32("default sample size"))
                }
            default:
                continue
            }
        }
        guard var found else { return nil }
        if let defaults = trackDefaults[found.trackID] {
            found.defaultDescriptionIndex = defaults.descriptionIndex
            found.defaultSampleSize = defaults.size
        }
        edits.resize(movie)
        return found
    }

    /// One `trak`: nil when none of its sample entries is protected.
    private static func clearTrack(_ bytes: [UInt8], _ track: Box, _ edits: inout BoxEdits) throws(CMAFError) -> ProtectedTrackInfo? {
        var trackID: UInt32?
        var timescale: UInt32?
        var handler: FourCC?
        var entry: (info: ProtectedTrackInfo, nalLengthSize: Int?)?
        var groups: [SampleEncryptionDefaults] = []
        var groupBoxes: [Box] = []
        var path: [Box] = [track]
        var children = BoxIterator(bytes, in: track.body)
        while let box = try children.next() {
            switch box.type {
            case "tkhd":
                var reader = FieldReader(bytes, body: box)
                trackID = try reader.u32AfterTimes("track_ID")
            case "mdia":
                path.append(box)
                var media = BoxIterator(bytes, in: box.body)
                while let child = try media.next() {
                    switch child.type {
                    case "mdhd":
                        var reader = FieldReader(bytes, body: child)
                        timescale = try reader.u32AfterTimes("timescale")
                    case "hdlr":
                        var reader = FieldReader(bytes, body: child)
                        _ = try reader.versionAndFlags()
                        _ = try reader.u32("pre_defined")
                        handler = FourCC(try reader.u32("handler type"))
                    case "minf":
                        path.append(child)
                        var information = BoxIterator(bytes, in: child.body)
                        guard let table = try information.first("stbl") else { continue }
                        path.append(table)
                        var tables = BoxIterator(bytes, in: table.body)
                        while let tableBox = try tables.next() {
                            switch tableBox.type {
                            case "stsd":
                                path.append(tableBox)
                                entry = try clearSampleDescriptions(bytes, tableBox, &edits)
                            case "sgpd":
                                guard let entries = try SampleEncryptionDefaults.sampleGroupEntries(bytes, sgpd: tableBox) else { continue }
                                groups = entries
                                groupBoxes.append(tableBox)
                            case "sbgp":
                                if try isEncryptionGrouping(bytes, tableBox) { groupBoxes.append(tableBox) }
                            default:
                                continue
                            }
                        }
                    default:
                        continue
                    }
                }
            default:
                continue
            }
        }
        guard let entry else { return nil }
        var info = entry.info
        guard let trackID, let timescale, let handler else {
            throw CMAFError(.malformedBox, "a protected track lacks its 'tkhd', 'mdhd' or 'hdlr'")
        }
        info.trackID = trackID
        info.timescale = timescale
        info.isVideo = handler == "vide"
        info.nalLengthSize = info.isVideo ? entry.nalLengthSize : nil
        info.sampleGroups = groups
        // Only a protected track's boxes go: its sizes are the ones fixed.
        for box in groupBoxes { edits.remove(box.range) }
        for box in path { edits.resize(box) }
        return info
    }

    /// Whether `sbgp` groups by `seig`.
    static func isEncryptionGrouping(_ bytes: [UInt8], _ box: Box) throws(CMAFError) -> Bool {
        var reader = FieldReader(bytes, body: box)
        _ = try reader.versionAndFlags()
        return FourCC(try reader.u32("grouping type")) == "seig"
    }

    /// `stsd`: every `encv`/`enca` entry cleared; the first one's protection (they must agree).
    private static func clearSampleDescriptions(_ bytes: [UInt8], _ descriptions: Box,
                                                _ edits: inout BoxEdits) throws(CMAFError) -> (ProtectedTrackInfo, Int?)? {
        var reader = FieldReader(bytes, body: descriptions)
        _ = try reader.versionAndFlags()
        _ = try reader.u32("entry count")
        var found: (ProtectedTrackInfo, Int?)?
        var entries = BoxIterator(bytes, in: reader.position ..< descriptions.end)
        var index: UInt32 = 0
        var clearIndices: [UInt32] = []
        while let entry = try entries.next() {
            index += 1
            let fixed: Int
            switch entry.type {
            case "encv":
                fixed = 78 // VisualSampleEntry (ISO/IEC 14496-12 12.1.3)
            case "enca":
                // AudioSampleEntry (12.2.3): 28 bytes; a QuickTime sound description version 1 or 2 has 16 or 36 more.
                var audio = FieldReader(bytes, body: entry)
                try audio.skip(8, "sample entry header")
                let version = try audio.u16("sound description version")
                fixed = 28 + (version == 1 ? 16 : version == 2 ? 36 : 0)
            default:
                if FourCC(entry.type.value & 0xFFFF_FF00) == FourCC(0x656E_6300) { // "enc?": text, subtitles…
                    throw CMAFError(.unsupportedStream, "a protected '\(entry.type)' sample entry (only video and audio are handled)")
                }
                clearIndices.append(index)
                continue
            }
            guard entry.body.count >= fixed else { throw CMAFError(.malformedBox, "the '\(entry.type)' sample entry is shorter than its fields") }
            var scheme: (ProtectedTrackInfo, FourCC)?
            var nalLengthSize: Int?
            var children = BoxIterator(bytes, in: entry.body.lowerBound + fixed ..< entry.end)
            while let child = try children.next() {
                switch child.type {
                case "sinf":
                    if scheme == nil { scheme = try schemeInformation(bytes, child) }
                    edits.remove(child.range)
                case "avcC":
                    var config = FieldReader(bytes, body: child)
                    try config.skip(4, "avcC header")
                    nalLengthSize = Int(try config.u8("lengthSizeMinusOne") & 3) + 1
                case "hvcC":
                    var config = FieldReader(bytes, body: child)
                    try config.skip(21, "hvcC header")
                    nalLengthSize = Int(try config.u8("lengthSizeMinusOne") & 3) + 1
                default:
                    continue
                }
            }
            guard let scheme else { throw CMAFError(.malformedBox, "the '\(entry.type)' sample entry has no 'sinf'") }
            let (info, originalFormat) = scheme
            edits.patch(at: entry.start + 4, width: 4, .constant(UInt64(originalFormat.value)))
            edits.resize(entry)
            if let first = found?.0 {
                guard first.defaults == info.defaults, first.scheme == info.scheme else {
                    throw CMAFError(.unsupportedStream, "the track's sample entries are protected differently")
                }
            } else {
                found = (info, nalLengthSize)
            }
        }
        guard found != nil else { return nil }
        edits.resize(descriptions)
        found?.0.clearDescriptionIndices = clearIndices
        return found
    }

    /// `sinf`: the original format, the scheme and `tenc`'s defaults (the track fields are
    /// filled in by the caller).
    private static func schemeInformation(_ bytes: [UInt8], _ sinf: Box) throws(CMAFError) -> (ProtectedTrackInfo, FourCC) {
        var originalFormat: FourCC?
        var schemeType: FourCC?
        var defaults: SampleEncryptionDefaults?
        var children = BoxIterator(bytes, in: sinf.body)
        while let box = try children.next() {
            switch box.type {
            case "frma":
                var reader = FieldReader(bytes, body: box)
                originalFormat = FourCC(try reader.u32("data format"))
            case "schm":
                var reader = FieldReader(bytes, body: box)
                _ = try reader.versionAndFlags()
                schemeType = FourCC(try reader.u32("scheme type"))
            case "schi":
                var information = BoxIterator(bytes, in: box.body)
                guard let tenc = try information.first("tenc") else { continue }
                var reader = FieldReader(bytes, body: tenc)
                let (version, _) = try reader.versionAndFlags()
                defaults = try SampleEncryptionDefaults.read(&reader, patterned: version >= 1)
            default:
                continue
            }
        }
        guard let originalFormat else { throw CMAFError(.malformedBox, "the 'sinf' has no 'frma'") }
        guard let schemeType else { throw CMAFError(.malformedBox, "the 'sinf' has no 'schm'") }
        let scheme: ProtectionScheme
        switch schemeType {
        case "cbcs": scheme = .cbcs
        case "cenc": scheme = .cenc
        default: throw CMAFError(.unsupportedStream, "the protection scheme '\(schemeType)' (only 'cbcs' and 'cenc' are decrypted)")
        }
        guard let defaults else { throw CMAFError(.malformedBox, "the 'sinf' has no 'schi'/'tenc'") }
        let info = ProtectedTrackInfo(scheme: scheme, originalFormat: originalFormat, defaults: defaults,
                                      trackID: 0, timescale: 0, isVideo: false, nalLengthSize: nil)
        return (info, originalFormat)
    }
}
