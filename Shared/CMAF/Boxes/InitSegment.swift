/// A CMAF header (ISO/IEC 23000-19 7.3.1): `ftyp` then one `moov` describing one track with
/// empty sample tables and a `trex` (every sample lives in the fragments that follow).
package enum InitSegment {
    /// The header of `format`, encrypted as `protection` says when given.
    package static func bytes(_ format: TrackFormat, protection: TrackProtection? = nil) -> [UInt8] {
        var writer = BoxWriter(capacity: 1024)
        writer.box("ftyp") { ftyp in
            ftyp.fourCC("iso6")
            ftyp.u32(0)
            for brand in ["iso6", "cmfc", "dash", "mp41"] { ftyp.fourCC(brand) }
        }
        writer.box("moov") { moov in
            moov.fullBox("mvhd") { mvhd in
                mvhd.u32(0); mvhd.u32(0) // creation, modification
                mvhd.u32(1000); mvhd.u32(0) // timescale, duration (fragmented: in the fragments)
                mvhd.u32(0x0001_0000); mvhd.u16(0x0100); mvhd.zeros(10)
                writeMatrix(&mvhd)
                mvhd.zeros(24)
                mvhd.u32(format.trackID + 1) // next_track_ID
            }
            moov.box("trak") { trak in
                trak.fullBox("tkhd", flags: 0x000003) { tkhd in
                    tkhd.u32(0); tkhd.u32(0)
                    tkhd.u32(format.trackID); tkhd.u32(0)
                    tkhd.u32(0) // duration
                    tkhd.zeros(8)
                    tkhd.u16(0); tkhd.u16(0) // layer, alternate_group
                    tkhd.u16(format.isVideo ? 0 : 0x0100); tkhd.u16(0)
                    writeMatrix(&tkhd)
                    tkhd.u32(UInt32(clamping: format.width) << 16); tkhd.u32(UInt32(clamping: format.height) << 16)
                }
                trak.box("mdia") { mdia in
                    mdia.fullBox("mdhd") { mdhd in
                        mdhd.u32(0); mdhd.u32(0)
                        mdhd.u32(format.timescale); mdhd.u32(0)
                        mdhd.u16(format.packedLanguage); mdhd.u16(0)
                    }
                    mdia.fullBox("hdlr") { hdlr in
                        hdlr.u32(0)
                        hdlr.fourCC(format.isVideo ? "vide" : "soun")
                        hdlr.zeros(12)
                        hdlr.append(Array((format.isVideo ? "VideoHandler" : "SoundHandler").utf8) + [0])
                    }
                    mdia.box("minf") { minf in
                        if format.isVideo {
                            minf.fullBox("vmhd", flags: 1) { $0.zeros(8) }
                        } else {
                            minf.fullBox("smhd") { $0.zeros(4) }
                        }
                        minf.box("dinf") { dinf in
                            dinf.fullBox("dref") { dref in
                                dref.u32(1)
                                dref.fullBox("url ", flags: 1) { _ in }
                            }
                        }
                        minf.box("stbl") { stbl in
                            stbl.fullBox("stsd") { stsd in
                                stsd.u32(1)
                                format.writeSampleEntry(&stsd, protection: protection)
                            }
                            stbl.fullBox("stts") { $0.u32(0) }
                            stbl.fullBox("stsc") { $0.u32(0) }
                            stbl.fullBox("stsz") { $0.u32(0); $0.u32(0) }
                            stbl.fullBox("stco") { $0.u32(0) }
                        }
                    }
                }
            }
            moov.box("mvex") { mvex in
                mvex.fullBox("trex") { trex in
                    trex.u32(format.trackID)
                    trex.u32(1) // default_sample_description_index
                    trex.u32(0); trex.u32(0); trex.u32(0)
                }
            }
            for pssh in protection?.psshBoxes ?? [] { moov.append(pssh) }
        }
        return writer.bytes
    }

    /// The identity matrix of `mvhd` and `tkhd`.
    private static func writeMatrix(_ writer: inout BoxWriter) {
        for value: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { writer.u32(value) }
    }
}
