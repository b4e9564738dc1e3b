/// HEVC (ITU-T H.265 / ISO/IEC 23008-2) video, sequence and picture parameter sets, read as
/// far as slice segment headers and the hvcC record need them, and slice segment headers
/// read through byte_alignment(): Common Encryption leaves the 2-byte NAL header and the
/// slice header of every slice segment clear, so the packager must know where each ends.
///
/// Section numbers are those of H.265 (V8, 08/2021). Streams this layer refuses as
/// `unsupportedStream`: NAL units above the base layer (nuh_layer_id > 0, MV-HEVC/SHVC)
/// and screen-content coding (its slice headers carry fields the SPS's VUI-guarded
/// extension announces, which is not read).

/// The NAL unit types this layer tells apart (H.265 Table 7-1).
package enum HEVCNALType {
    package static let idrWithRADL: UInt8 = 19
    package static let idrNoLeadingPictures: UInt8 = 20
    package static let vps: UInt8 = 32
    package static let sps: UInt8 = 33
    package static let pps: UInt8 = 34
    package static let accessUnitDelimiter: UInt8 = 35
    package static let prefixSEI: UInt8 = 39
    package static let suffixSEI: UInt8 = 40

    /// The type in a NAL unit's first header byte.
    package static func of(_ firstHeaderByte: UInt8) -> UInt8 { (firstHeaderByte >> 1) & 0x3F }

    /// VCL NAL unit types (0–31, reserved ones included): every one is a slice segment.
    package static func isVCL(_ type: UInt8) -> Bool { type < 32 }

    /// Intra random access point pictures (16–23): BLA, IDR, CRA and the reserved IRAP types.
    package static func isIRAP(_ type: UInt8) -> Bool { (16 ... 23).contains(type) }
}

/// profile_tier_level() (7.3.3) with profilePresentFlag 1: the general profile, tier and
/// level; the sub-layers' are read past.
package struct HEVCProfileTierLevel: Sendable, Equatable {
    package var profileSpace: Int
    package var tierFlag: Bool
    package var profileIDC: Int
    /// general_profile_compatibility_flag[0…31], flag j in bit 31 − j (as stored).
    package var compatibilityFlags: UInt32
    /// The 48 bits from general_progressive_source_flag through general_inbld_flag /
    /// reserved bit, as stored (progressive_source in bit 47).
    package var constraintFlags: UInt64
    package var levelIDC: Int

    /// The six constraint-flag bytes, first byte first.
    package var constraintBytes: [UInt8] { (0 ..< 6).map { UInt8(truncatingIfNeeded: constraintFlags >> (40 - 8 * UInt64($0))) } }

    /// The general fields as given.
    package init(profileSpace: Int, tierFlag: Bool, profileIDC: Int, compatibilityFlags: UInt32, constraintFlags: UInt64, levelIDC: Int) {
        self.profileSpace = profileSpace
        self.tierFlag = tierFlag
        self.profileIDC = profileIDC
        self.compatibilityFlags = compatibilityFlags
        self.constraintFlags = constraintFlags
        self.levelIDC = levelIDC
    }

    /// Reads profile_tier_level(1, maxNumSubLayersMinus1).
    init(_ r: inout BitReader, maxNumSubLayersMinus1: Int) throws(CMAFError) {
        profileSpace = try r.bits(2, "general_profile_space")
        tierFlag = try r.flag("general_tier_flag")
        profileIDC = try r.bits(5, "general_profile_idc")
        compatibilityFlags = UInt32(try r.bits(32, "general_profile_compatibility_flag"))
        constraintFlags = UInt64(try r.bits(32, "general constraint flags")) << 16 | UInt64(try r.bits(16, "general constraint flags"))
        levelIDC = try r.bits(8, "general_level_idc")
        var profilePresent: [Bool] = [], levelPresent: [Bool] = []
        for _ in 0 ..< maxNumSubLayersMinus1 {
            profilePresent.append(try r.flag("sub_layer_profile_present_flag"))
            levelPresent.append(try r.flag("sub_layer_level_present_flag"))
        }
        if maxNumSubLayersMinus1 > 0 { try r.skip(2 * (8 - maxNumSubLayersMinus1), "reserved_zero_2bits") }
        for index in 0 ..< maxNumSubLayersMinus1 {
            // sub_layer profile_space … inbld: 2 + 1 + 5 + 32 + 48 bits; sub_layer_level_idc: 8.
            if profilePresent[index] { try r.skip(88, "sub_layer profile") }
            if levelPresent[index] { try r.skip(8, "sub_layer_level_idc") }
        }
    }
}

/// One short-term reference picture set (st_ref_pic_set(), 7.3.7 and 7.4.8), as the
/// derived lists: what slice headers need (how many pictures the current one uses) and what
/// a later set predicted from this one starts from.
package struct HEVCShortTermRPS: Sendable, Equatable {
    /// DeltaPocS0: negative POC differences, closest first.
    package var deltaPocS0: [Int] = []
    package var usedByCurrPicS0: [Bool] = []
    /// DeltaPocS1: positive POC differences, closest first.
    package var deltaPocS1: [Int] = []
    package var usedByCurrPicS1: [Bool] = []

    /// NumDeltaPocs.
    package var numDeltaPocs: Int { deltaPocS0.count + deltaPocS1.count }
    /// How many of the set's pictures the current picture uses (its share of NumPicTotalCurr).
    package var usedByCurrentCount: Int { usedByCurrPicS0.count(where: { $0 }) + usedByCurrPicS1.count(where: { $0 }) }

    /// The most pictures either list may hold (sps_max_dec_pic_buffering_minus1 ≤ 15).
    private static let maxPictures = 16

    package init() {}

    /// Reads st_ref_pic_set(`index`) where the SPS declares `count` sets and `previous`
    /// holds the sets 0..<index already read (a slice header's own set has index == count).
    init(_ r: inout BitReader, index: Int, count: Int, previous: [HEVCShortTermRPS]) throws(CMAFError) {
        let interPrediction = try index != 0 ? r.flag("inter_ref_pic_set_prediction_flag") : false
        if interPrediction {
            let deltaIndex = try index == count ? r.ue(max: index - 1, "delta_idx_minus1") + 1 : 1
            let sign = try r.flag("delta_rps_sign")
            let magnitude = try r.ue(max: 1 << 15 - 1, "abs_delta_rps_minus1") + 1
            let deltaRps = sign ? -magnitude : magnitude
            let referenceIndex = index - deltaIndex
            guard referenceIndex >= 0, referenceIndex < previous.count else {
                throw r.error("st_ref_pic_set \(index) predicts from set \(referenceIndex), which does not exist")
            }
            let reference = previous[referenceIndex]
            var usedByCurrPic: [Bool] = [], useDelta: [Bool] = []
            for _ in 0 ... reference.numDeltaPocs {
                let used = try r.flag("used_by_curr_pic_flag")
                usedByCurrPic.append(used)
                useDelta.append(try used ? true : r.flag("use_delta_flag"))
            }
            // (7-61): negative pictures, then (7-62): positive ones.
            let negatives = reference.deltaPocS0.count, all = reference.numDeltaPocs
            for j in stride(from: reference.deltaPocS1.count - 1, through: 0, by: -1) {
                let poc = reference.deltaPocS1[j] + deltaRps
                if poc < 0, useDelta[negatives + j] { deltaPocS0.append(poc); usedByCurrPicS0.append(usedByCurrPic[negatives + j]) }
            }
            if deltaRps < 0, useDelta[all] { deltaPocS0.append(deltaRps); usedByCurrPicS0.append(usedByCurrPic[all]) }
            for j in 0 ..< negatives {
                let poc = reference.deltaPocS0[j] + deltaRps
                if poc < 0, useDelta[j] { deltaPocS0.append(poc); usedByCurrPicS0.append(usedByCurrPic[j]) }
            }
            for j in stride(from: negatives - 1, through: 0, by: -1) {
                let poc = reference.deltaPocS0[j] + deltaRps
                if poc > 0, useDelta[j] { deltaPocS1.append(poc); usedByCurrPicS1.append(usedByCurrPic[j]) }
            }
            if deltaRps > 0, useDelta[all] { deltaPocS1.append(deltaRps); usedByCurrPicS1.append(usedByCurrPic[all]) }
            for j in 0 ..< reference.deltaPocS1.count {
                let poc = reference.deltaPocS1[j] + deltaRps
                if poc > 0, useDelta[negatives + j] { deltaPocS1.append(poc); usedByCurrPicS1.append(usedByCurrPic[negatives + j]) }
            }
            guard deltaPocS0.count <= Self.maxPictures, deltaPocS1.count <= Self.maxPictures else {
                throw r.error("st_ref_pic_set \(index) predicts \(deltaPocS0.count) negative and \(deltaPocS1.count) positive pictures; at most \(Self.maxPictures) each are allowed")
            }
        } else {
            let negatives = try r.ue(max: Self.maxPictures, "num_negative_pics")
            let positives = try r.ue(max: Self.maxPictures - negatives, "num_positive_pics")
            var poc = 0
            for _ in 0 ..< negatives {
                poc -= try r.ue(max: 1 << 15 - 1, "delta_poc_s0_minus1") + 1
                deltaPocS0.append(poc)
                usedByCurrPicS0.append(try r.flag("used_by_curr_pic_s0_flag"))
            }
            poc = 0
            for _ in 0 ..< positives {
                poc += try r.ue(max: 1 << 15 - 1, "delta_poc_s1_minus1") + 1
                deltaPocS1.append(poc)
                usedByCurrPicS1.append(try r.flag("used_by_curr_pic_s1_flag"))
            }
        }
    }
}

/// Reads past the NAL unit header of a parameter set or slice, checking its type and that
/// it belongs to the base layer.
private func readHEVCNALHeader(_ r: inout BitReader, expecting expected: ClosedRange<UInt8>, what: String) throws(CMAFError) -> UInt8 {
    guard try r.bits(1, "forbidden_zero_bit") == 0 else { throw r.error("forbidden_zero_bit is 1") }
    let type = UInt8(try r.bits(6, "nal_unit_type"))
    guard expected.contains(type) else { throw r.error("NAL unit type \(type) is not \(what)") }
    let layer = try r.bits(6, "nuh_layer_id")
    guard layer == 0 else {
        throw CMAFError(.unsupportedStream, "HEVC \(what): nuh_layer_id \(layer); only the base layer (0) is supported")
    }
    guard try r.bits(3, "nuh_temporal_id_plus1") != 0 else { throw r.error("nuh_temporal_id_plus1 is 0") }
    return type
}

/// Skips scaling_list_data() (7.3.4).
private func skipHEVCScalingListData(_ r: inout BitReader) throws(CMAFError) {
    for sizeID in 0 ..< 4 {
        for matrixID in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
            if try !r.flag("scaling_list_pred_mode_flag") {
                _ = try r.ue(max: sizeID == 3 ? matrixID / 3 : matrixID, "scaling_list_pred_matrix_id_delta")
            } else {
                if sizeID > 1 { _ = try r.se(in: -7 ... 247, "scaling_list_dc_coef_minus8") }
                for _ in 0 ..< min(64, 1 << (4 + (sizeID << 1))) { _ = try r.se(in: -128 ... 127, "scaling_list_delta_coef") }
            }
        }
    }
}

/// A video parameter set (7.3.2.1), through its profile_tier_level.
package struct HEVCVPS: Sendable, Equatable {
    package var id: Int
    package var maxSubLayersMinus1: Int
    package var temporalIDNesting: Bool
    package var profileTierLevel: HEVCProfileTierLevel

    /// Parses the VPS NAL unit `nal` (stored bytes, 2-byte header first).
    package init(nal: ArraySlice<UInt8>) throws(CMAFError) {
        var r = BitReader(RBSP(nal), errorCode: .malformedParameterSet, context: "HEVC VPS")
        _ = try readHEVCNALHeader(&r, expecting: HEVCNALType.vps ... HEVCNALType.vps, what: "a VPS (32)")
        id = try r.bits(4, "vps_video_parameter_set_id")
        try r.skip(2, "vps_base_layer_internal_flag, vps_base_layer_available_flag")
        _ = try r.bits(6, "vps_max_layers_minus1")
        maxSubLayersMinus1 = try r.bits(3, "vps_max_sub_layers_minus1")
        guard maxSubLayersMinus1 <= 6 else { throw r.error("vps_max_sub_layers_minus1 is 7") }
        temporalIDNesting = try r.flag("vps_temporal_id_nesting_flag")
        try r.skip(16, "vps_reserved_0xffff_16bits")
        profileTierLevel = try HEVCProfileTierLevel(&r, maxNumSubLayersMinus1: maxSubLayersMinus1)
    }
}

/// A sequence parameter set (7.3.2.2), through strong_intra_smoothing_enabled_flag (the
/// VUI and extensions are not read).
package struct HEVCSPS: Sendable, Equatable {
    package var vpsID: Int
    package var maxSubLayersMinus1: Int
    package var temporalIDNesting: Bool
    package var profileTierLevel: HEVCProfileTierLevel
    package var id: Int
    package var chromaFormatIDC: Int
    package var separateColourPlane = false
    package var picWidthInLumaSamples: Int
    package var picHeightInLumaSamples: Int
    /// conf_win_left/right/top/bottom_offset, in chroma sample units (zero without a window).
    package var confWinLeft = 0, confWinRight = 0, confWinTop = 0, confWinBottom = 0
    package var bitDepthLumaMinus8: Int
    package var bitDepthChromaMinus8: Int
    /// log2_max_pic_order_cnt_lsb_minus4 + 4: the width of slice_pic_order_cnt_lsb.
    package var log2MaxPicOrderCntLsb: Int
    package var subLayerOrderingInfoPresent: Bool
    /// MinCbLog2SizeY.
    package var log2MinCodingBlockSize: Int
    /// CtbLog2SizeY.
    package var log2CodingTreeBlockSize: Int
    package var log2MinTransformBlockSize: Int
    package var log2MaxTransformBlockSize: Int
    package var maxTransformHierarchyDepthInter: Int
    package var maxTransformHierarchyDepthIntra: Int
    package var scalingListEnabled: Bool
    package var ampEnabled: Bool
    package var sampleAdaptiveOffsetEnabled: Bool
    package var pcmEnabled: Bool
    /// The st_ref_pic_set()s of the SPS, in order (slice headers pick one by index, or
    /// predict their own from the last).
    package var shortTermRefPicSets: [HEVCShortTermRPS] = []
    package var longTermRefPicsPresent: Bool
    /// lt_ref_pic_poc_lsb_sps and used_by_curr_pic_lt_sps_flag of the candidate long-term pictures.
    package var longTermRefPicPocLsb: [Int] = []
    package var longTermUsedByCurrPic: [Bool] = []
    package var temporalMVPEnabled: Bool
    package var strongIntraSmoothingEnabled: Bool

    /// ChromaArrayType: 0 when monochrome or the colour planes are coded separately.
    package var chromaArrayType: Int { separateColourPlane ? 0 : chromaFormatIDC }
    /// PicWidthInCtbsY.
    package var picWidthInCtbs: Int { (picWidthInLumaSamples + (1 << log2CodingTreeBlockSize) - 1) >> log2CodingTreeBlockSize }
    /// PicHeightInCtbsY.
    package var picHeightInCtbs: Int { (picHeightInLumaSamples + (1 << log2CodingTreeBlockSize) - 1) >> log2CodingTreeBlockSize }
    /// PicSizeInCtbsY.
    package var picSizeInCtbs: Int { picWidthInCtbs * picHeightInCtbs }
    /// The width in luma samples inside the conformance window.
    package var width: Int { picWidthInLumaSamples - subWidthC * (confWinLeft + confWinRight) }
    /// The height in luma samples inside the conformance window.
    package var height: Int { picHeightInLumaSamples - subHeightC * (confWinTop + confWinBottom) }

    private var subWidthC: Int { chromaArrayType == 1 || chromaArrayType == 2 ? 2 : 1 }
    private var subHeightC: Int { chromaArrayType == 1 ? 2 : 1 }

    /// Parses the SPS NAL unit `nal`.
    package init(nal: ArraySlice<UInt8>) throws(CMAFError) {
        var r = BitReader(RBSP(nal), errorCode: .malformedParameterSet, context: "HEVC SPS")
        _ = try readHEVCNALHeader(&r, expecting: HEVCNALType.sps ... HEVCNALType.sps, what: "an SPS (33)")
        vpsID = try r.bits(4, "sps_video_parameter_set_id")
        maxSubLayersMinus1 = try r.bits(3, "sps_max_sub_layers_minus1")
        guard maxSubLayersMinus1 <= 6 else { throw r.error("sps_max_sub_layers_minus1 is 7") }
        temporalIDNesting = try r.flag("sps_temporal_id_nesting_flag")
        profileTierLevel = try HEVCProfileTierLevel(&r, maxNumSubLayersMinus1: maxSubLayersMinus1)
        // Screen-content coding (profile 9) adds slice header fields announced after the VUI.
        if profileTierLevel.profileIDC == 9 || profileTierLevel.compatibilityFlags & (1 << (31 - 9)) != 0 {
            throw CMAFError(.unsupportedStream, "HEVC SPS: the screen-content coding profile is not supported")
        }
        id = try r.ue(max: 15, "sps_seq_parameter_set_id")
        chromaFormatIDC = try r.ue(max: 3, "chroma_format_idc")
        if chromaFormatIDC == 3 { separateColourPlane = try r.flag("separate_colour_plane_flag") }
        picWidthInLumaSamples = try r.ue(max: 65535, "pic_width_in_luma_samples")
        picHeightInLumaSamples = try r.ue(max: 65535, "pic_height_in_luma_samples")
        if try r.flag("conformance_window_flag") {
            confWinLeft = try r.ue(max: 65535, "conf_win_left_offset")
            confWinRight = try r.ue(max: 65535, "conf_win_right_offset")
            confWinTop = try r.ue(max: 65535, "conf_win_top_offset")
            confWinBottom = try r.ue(max: 65535, "conf_win_bottom_offset")
        }
        bitDepthLumaMinus8 = try r.ue(max: 8, "bit_depth_luma_minus8")
        bitDepthChromaMinus8 = try r.ue(max: 8, "bit_depth_chroma_minus8")
        log2MaxPicOrderCntLsb = try r.ue(max: 12, "log2_max_pic_order_cnt_lsb_minus4") + 4
        subLayerOrderingInfoPresent = try r.flag("sps_sub_layer_ordering_info_present_flag")
        for _ in (subLayerOrderingInfoPresent ? 0 : maxSubLayersMinus1) ... maxSubLayersMinus1 {
            _ = try r.ue(max: 15, "sps_max_dec_pic_buffering_minus1")
            _ = try r.ue(max: 15, "sps_max_num_reorder_pics")
            _ = try r.ue("sps_max_latency_increase_plus1")
        }
        log2MinCodingBlockSize = try r.ue(max: 3, "log2_min_luma_coding_block_size_minus3") + 3
        log2CodingTreeBlockSize = log2MinCodingBlockSize + (try r.ue(max: 3, "log2_diff_max_min_luma_coding_block_size"))
        guard log2CodingTreeBlockSize <= 6 else { throw r.error("the coding tree block size is 2^\(log2CodingTreeBlockSize); at most 64 is allowed") }
        log2MinTransformBlockSize = try r.ue(max: 3, "log2_min_luma_transform_block_size_minus2") + 2
        log2MaxTransformBlockSize = log2MinTransformBlockSize + (try r.ue(max: 3, "log2_diff_max_min_luma_transform_block_size"))
        maxTransformHierarchyDepthInter = try r.ue(max: 4, "max_transform_hierarchy_depth_inter")
        maxTransformHierarchyDepthIntra = try r.ue(max: 4, "max_transform_hierarchy_depth_intra")
        scalingListEnabled = try r.flag("scaling_list_enabled_flag")
        if scalingListEnabled, try r.flag("sps_scaling_list_data_present_flag") { try skipHEVCScalingListData(&r) }
        ampEnabled = try r.flag("amp_enabled_flag")
        sampleAdaptiveOffsetEnabled = try r.flag("sample_adaptive_offset_enabled_flag")
        pcmEnabled = try r.flag("pcm_enabled_flag")
        if pcmEnabled {
            try r.skip(8, "pcm_sample_bit_depth_luma_minus1, pcm_sample_bit_depth_chroma_minus1")
            _ = try r.ue(max: 2, "log2_min_pcm_luma_coding_block_size_minus3")
            _ = try r.ue(max: 2, "log2_diff_max_min_pcm_luma_coding_block_size")
            _ = try r.flag("pcm_loop_filter_disabled_flag")
        }
        let setCount = try r.ue(max: 64, "num_short_term_ref_pic_sets")
        for index in 0 ..< setCount {
            shortTermRefPicSets.append(try HEVCShortTermRPS(&r, index: index, count: setCount, previous: shortTermRefPicSets))
        }
        longTermRefPicsPresent = try r.flag("long_term_ref_pics_present_flag")
        if longTermRefPicsPresent {
            for _ in 0 ..< (try r.ue(max: 32, "num_long_term_ref_pics_sps")) {
                longTermRefPicPocLsb.append(try r.bits(log2MaxPicOrderCntLsb, "lt_ref_pic_poc_lsb_sps"))
                longTermUsedByCurrPic.append(try r.flag("used_by_curr_pic_lt_sps_flag"))
            }
        }
        temporalMVPEnabled = try r.flag("sps_temporal_mvp_enabled_flag")
        strongIntraSmoothingEnabled = try r.flag("strong_intra_smoothing_enabled_flag")
        guard picWidthInLumaSamples > 0, picHeightInLumaSamples > 0, width > 0, height > 0 else {
            throw r.error("a \(picWidthInLumaSamples)x\(picHeightInLumaSamples) picture with a \(width)x\(height) conformance window")
        }
    }
}

/// A picture parameter set (7.3.2.3), through the range extension (the multilayer and 3D
/// extensions do not change base-layer slice headers; screen-content coding is refused).
package struct HEVCPPS: Sendable, Equatable {
    package var id: Int
    package var spsID: Int
    package var dependentSliceSegmentsEnabled: Bool
    package var outputFlagPresent: Bool
    package var numExtraSliceHeaderBits: Int
    package var signDataHidingEnabled: Bool
    package var cabacInitPresent: Bool
    /// num_ref_idx_l0_default_active_minus1 + 1.
    package var numRefIdxL0DefaultActive: Int
    /// num_ref_idx_l1_default_active_minus1 + 1.
    package var numRefIdxL1DefaultActive: Int
    package var initQPMinus26: Int
    package var constrainedIntraPred: Bool
    package var transformSkipEnabled: Bool
    package var cuQPDeltaEnabled: Bool
    package var diffCuQPDeltaDepth = 0
    package var cbQPOffset: Int
    package var crQPOffset: Int
    package var sliceChromaQPOffsetsPresent: Bool
    package var weightedPred: Bool
    package var weightedBipred: Bool
    package var transquantBypassEnabled: Bool
    package var tilesEnabled: Bool
    package var entropyCodingSyncEnabled: Bool
    /// num_tile_columns_minus1 + 1 and num_tile_rows_minus1 + 1 (1 and 1 without tiles).
    package var tileColumns = 1, tileRows = 1
    package var uniformSpacing = true
    /// column_width_minus1 + 1 and row_height_minus1 + 1 of all but the last column and row
    /// (empty with uniform spacing).
    package var columnWidths: [Int] = [], rowHeights: [Int] = []
    package var loopFilterAcrossTilesEnabled = true
    package var loopFilterAcrossSlicesEnabled: Bool
    package var deblockingFilterControlPresent: Bool
    package var deblockingFilterOverrideEnabled = false
    package var ppsDeblockingFilterDisabled = false
    package var betaOffsetDiv2 = 0, tcOffsetDiv2 = 0
    package var scalingListDataPresent: Bool
    package var listsModificationPresent: Bool
    /// log2_parallel_merge_level_minus2 + 2.
    package var log2ParallelMergeLevel: Int
    package var sliceSegmentHeaderExtensionPresent: Bool
    /// chroma_qp_offset_list_enabled_flag (range extension): adds cu_chroma_qp_offset_enabled_flag to slice headers.
    package var chromaQPOffsetListEnabled = false

    /// Parses the PPS NAL unit `nal`.
    package init(nal: ArraySlice<UInt8>) throws(CMAFError) {
        var r = BitReader(RBSP(nal), errorCode: .malformedParameterSet, context: "HEVC PPS")
        _ = try readHEVCNALHeader(&r, expecting: HEVCNALType.pps ... HEVCNALType.pps, what: "a PPS (34)")
        id = try r.ue(max: 63, "pps_pic_parameter_set_id")
        spsID = try r.ue(max: 15, "pps_seq_parameter_set_id")
        dependentSliceSegmentsEnabled = try r.flag("dependent_slice_segments_enabled_flag")
        outputFlagPresent = try r.flag("output_flag_present_flag")
        numExtraSliceHeaderBits = try r.bits(3, "num_extra_slice_header_bits")
        signDataHidingEnabled = try r.flag("sign_data_hiding_enabled_flag")
        cabacInitPresent = try r.flag("cabac_init_present_flag")
        numRefIdxL0DefaultActive = try r.ue(max: 14, "num_ref_idx_l0_default_active_minus1") + 1
        numRefIdxL1DefaultActive = try r.ue(max: 14, "num_ref_idx_l1_default_active_minus1") + 1
        initQPMinus26 = try r.se(in: -(26 + 48) ... 25, "init_qp_minus26")
        constrainedIntraPred = try r.flag("constrained_intra_pred_flag")
        transformSkipEnabled = try r.flag("transform_skip_enabled_flag")
        cuQPDeltaEnabled = try r.flag("cu_qp_delta_enabled_flag")
        if cuQPDeltaEnabled { diffCuQPDeltaDepth = try r.ue(max: 3, "diff_cu_qp_delta_depth") }
        cbQPOffset = try r.se(in: -12 ... 12, "pps_cb_qp_offset")
        crQPOffset = try r.se(in: -12 ... 12, "pps_cr_qp_offset")
        sliceChromaQPOffsetsPresent = try r.flag("pps_slice_chroma_qp_offsets_present_flag")
        weightedPred = try r.flag("weighted_pred_flag")
        weightedBipred = try r.flag("weighted_bipred_flag")
        transquantBypassEnabled = try r.flag("transquant_bypass_enabled_flag")
        tilesEnabled = try r.flag("tiles_enabled_flag")
        entropyCodingSyncEnabled = try r.flag("entropy_coding_sync_enabled_flag")
        if tilesEnabled {
            // Level 6.2 allows 20 tile columns and 22 rows; a CTB is at least 16 samples wide.
            tileColumns = try r.ue(max: 4095, "num_tile_columns_minus1") + 1
            tileRows = try r.ue(max: 4095, "num_tile_rows_minus1") + 1
            uniformSpacing = try r.flag("uniform_spacing_flag")
            if !uniformSpacing {
                for _ in 0 ..< tileColumns - 1 { columnWidths.append(try r.ue(max: 4095, "column_width_minus1") + 1) }
                for _ in 0 ..< tileRows - 1 { rowHeights.append(try r.ue(max: 4095, "row_height_minus1") + 1) }
            }
            loopFilterAcrossTilesEnabled = try r.flag("loop_filter_across_tiles_enabled_flag")
        }
        loopFilterAcrossSlicesEnabled = try r.flag("pps_loop_filter_across_slices_enabled_flag")
        deblockingFilterControlPresent = try r.flag("deblocking_filter_control_present_flag")
        if deblockingFilterControlPresent {
            deblockingFilterOverrideEnabled = try r.flag("deblocking_filter_override_enabled_flag")
            ppsDeblockingFilterDisabled = try r.flag("pps_deblocking_filter_disabled_flag")
            if !ppsDeblockingFilterDisabled {
                betaOffsetDiv2 = try r.se(in: -6 ... 6, "pps_beta_offset_div2")
                tcOffsetDiv2 = try r.se(in: -6 ... 6, "pps_tc_offset_div2")
            }
        }
        scalingListDataPresent = try r.flag("pps_scaling_list_data_present_flag")
        if scalingListDataPresent { try skipHEVCScalingListData(&r) }
        listsModificationPresent = try r.flag("lists_modification_present_flag")
        log2ParallelMergeLevel = try r.ue(max: 4, "log2_parallel_merge_level_minus2") + 2
        sliceSegmentHeaderExtensionPresent = try r.flag("slice_segment_header_extension_present_flag")
        if try r.flag("pps_extension_present_flag") {
            let range = try r.flag("pps_range_extension_flag")
            try r.skip(2, "pps_multilayer_extension_flag, pps_3d_extension_flag")
            if try r.flag("pps_scc_extension_flag") {
                throw CMAFError(.unsupportedStream, "HEVC PPS \(id): the screen-content coding extension is not supported")
            }
            try r.skip(4, "pps_extension_4bits")
            if range {
                // pps_range_extension() (7.3.2.3.2).
                if transformSkipEnabled { _ = try r.ue(max: 3, "log2_max_transform_skip_block_size_minus2") }
                _ = try r.flag("cross_component_prediction_enabled_flag")
                chromaQPOffsetListEnabled = try r.flag("chroma_qp_offset_list_enabled_flag")
            }
        }
    }
}

/// What a slice segment header said, and where it ended.
package struct HEVCSliceHeader: Sendable, Equatable {
    package var nalUnitType: UInt8
    package var firstSliceSegmentInPic: Bool
    package var ppsID: Int
    package var dependentSliceSegment = false
    package var sliceSegmentAddress = 0
    /// slice_type: 0 B, 1 P, 2 I (nil for a dependent slice segment, which inherits it).
    package var sliceType: Int?
    package var picOrderCntLsb: Int?
    /// NumPicTotalCurr (7-55).
    package var numPicTotalCurr = 0
    package var numRefIdxL0Active = 0
    package var numRefIdxL1Active = 0
    package var numEntryPointOffsets = 0
    /// RBSP bits from the NAL header's first bit through byte_alignment() (a multiple of 8).
    package var bitLength = 0
    /// Stored bytes from the NAL header through byte_alignment().
    package var storedLength = 0
}

/// The VPS, SPS and PPS of one HEVC stream by id, as they arrive (a later one replaces an
/// earlier one of the same id), and slice segment headers read against them.
package struct HEVCParameterSets: Sendable, Equatable {
    package private(set) var vps: [Int: HEVCVPS] = [:]
    package private(set) var sps: [Int: HEVCSPS] = [:]
    package private(set) var pps: [Int: HEVCPPS] = [:]

    /// Stored bytes of a slice read first; a longer header (many entry points) is read again
    /// from the whole unit.
    private static let headerPrefix = 1024

    /// No parameter sets yet.
    package init() {}

    /// The parameter sets of `nals` (VPS, SPS and PPS NAL units, stored bytes, any order).
    package init(_ nals: [[UInt8]]) throws(CMAFError) {
        for nal in nals { try add(nal[...]) }
    }

    /// Whether a NAL unit of `type` is one `add` takes.
    package static func isParameterSet(_ type: UInt8) -> Bool { (HEVCNALType.vps ... HEVCNALType.pps).contains(type) }

    /// Reads the VPS, SPS or PPS `nal` and keeps it under its id. Throws for anything else.
    package mutating func add(_ nal: ArraySlice<UInt8>) throws(CMAFError) {
        guard let first = nal.first else { throw CMAFError(.malformedParameterSet, "HEVC: an empty NAL unit is no parameter set") }
        switch HEVCNALType.of(first) {
        case HEVCNALType.vps:
            let set = try HEVCVPS(nal: nal)
            vps[set.id] = set
        case HEVCNALType.sps:
            let set = try HEVCSPS(nal: nal)
            sps[set.id] = set
        case HEVCNALType.pps:
            let set = try HEVCPPS(nal: nal)
            pps[set.id] = set
        case let type:
            throw CMAFError(.malformedParameterSet, "HEVC: NAL unit type \(type) is not a VPS, SPS or PPS")
        }
    }

    /// The number of stored bytes from the NAL header through byte_alignment() at the end
    /// of the slice segment header of `nal` (a VCL NAL unit, types 0–31, stored bytes
    /// without a length prefix): slice_segment_data starts at that byte.
    package func sliceHeaderLength(of nal: ArraySlice<UInt8>) throws(CMAFError) -> Int {
        try sliceHeader(of: nal).storedLength
    }

    /// Reads the slice segment header of `nal` (7.3.6.1) through byte_alignment().
    package func sliceHeader(of nal: ArraySlice<UInt8>) throws(CMAFError) -> HEVCSliceHeader {
        if nal.count > Self.headerPrefix, let header = try? sliceHeader(of: RBSP(nal, limit: Self.headerPrefix)) {
            return header
        }
        return try sliceHeader(of: RBSP(nal))
    }

    private func sliceHeader(of rbsp: RBSP) throws(CMAFError) -> HEVCSliceHeader {
        var r = BitReader(rbsp, errorCode: .malformedSlice, context: "HEVC slice segment header")
        let nalType = try readHEVCNALHeader(&r, expecting: 0 ... 31, what: "a slice segment (0-31)")
        let first = try r.flag("first_slice_segment_in_pic_flag")
        if HEVCNALType.isIRAP(nalType) { _ = try r.flag("no_output_of_prior_pics_flag") }
        let ppsID = try r.ue(max: 63, "slice_pic_parameter_set_id")
        guard let pps = pps[ppsID] else { throw r.error("PPS \(ppsID) was never seen") }
        guard let sps = sps[pps.spsID] else { throw r.error("SPS \(pps.spsID), named by PPS \(ppsID), was never seen") }
        var header = HEVCSliceHeader(nalUnitType: nalType, firstSliceSegmentInPic: first, ppsID: ppsID)

        if !first {
            if pps.dependentSliceSegmentsEnabled { header.dependentSliceSegment = try r.flag("dependent_slice_segment_flag") }
            header.sliceSegmentAddress = try r.bits(ceilLog2(sps.picSizeInCtbs), "slice_segment_address")
            guard header.sliceSegmentAddress < sps.picSizeInCtbs else {
                throw r.error("slice_segment_address \(header.sliceSegmentAddress) is past the picture's \(sps.picSizeInCtbs) CTBs")
            }
        }
        if !header.dependentSliceSegment {
            try independentFields(&r, header: &header, sps: sps, pps: pps)
        }
        if pps.tilesEnabled || pps.entropyCodingSyncEnabled {
            header.numEntryPointOffsets = try r.ue(max: sps.picSizeInCtbs, "num_entry_point_offsets")
            if header.numEntryPointOffsets > 0 {
                let width = try r.ue(max: 31, "offset_len_minus1") + 1
                try r.skip(header.numEntryPointOffsets * width, "entry_point_offset_minus1")
            }
        }
        if pps.sliceSegmentHeaderExtensionPresent {
            let length = try r.ue(max: 256, "slice_segment_header_extension_length")
            try r.skip(8 * length, "slice_segment_header_extension_data_byte")
        }
        // byte_alignment(): a 1, then 0s to the byte boundary.
        guard try r.flag("alignment_bit_equal_to_one") else { throw r.error("alignment_bit_equal_to_one at bit \(r.position - 1) is 0") }
        while !r.isByteAligned {
            guard try !r.flag("alignment_bit_equal_to_zero") else { throw r.error("alignment_bit_equal_to_zero at bit \(r.position - 1) is 1") }
        }
        header.bitLength = r.position
        header.storedLength = rbsp.storedByteCount(throughBit: r.position)
        return header
    }

    /// The fields of an independent slice segment, slice_type through
    /// slice_loop_filter_across_slices_enabled_flag.
    private func independentFields(_ r: inout BitReader, header: inout HEVCSliceHeader, sps: HEVCSPS, pps: HEVCPPS) throws(CMAFError) {
        try r.skip(pps.numExtraSliceHeaderBits, "slice_reserved_flag")
        let sliceType = try r.ue(max: 2, "slice_type")
        header.sliceType = sliceType
        let isB = sliceType == 0, isP = sliceType == 1
        if pps.outputFlagPresent { _ = try r.flag("pic_output_flag") }
        if sps.separateColourPlane { _ = try r.bits(2, "colour_plane_id") }
        var temporalMVP = false
        let idr = header.nalUnitType == HEVCNALType.idrWithRADL || header.nalUnitType == HEVCNALType.idrNoLeadingPictures
        if !idr {
            header.picOrderCntLsb = try r.bits(sps.log2MaxPicOrderCntLsb, "slice_pic_order_cnt_lsb")
            let setCount = sps.shortTermRefPicSets.count
            let rps: HEVCShortTermRPS
            if try !r.flag("short_term_ref_pic_set_sps_flag") {
                rps = try HEVCShortTermRPS(&r, index: setCount, count: setCount, previous: sps.shortTermRefPicSets)
            } else {
                guard setCount > 0 else { throw r.error("short_term_ref_pic_set_sps_flag is 1 but the SPS has no sets") }
                let index = try r.bits(ceilLog2(setCount), "short_term_ref_pic_set_idx")
                guard index < setCount else { throw r.error("short_term_ref_pic_set_idx \(index) is past the SPS's \(setCount) sets") }
                rps = sps.shortTermRefPicSets[index]
            }
            header.numPicTotalCurr = rps.usedByCurrentCount
            if sps.longTermRefPicsPresent {
                let candidates = sps.longTermUsedByCurrPic.count
                let fromSPS = try candidates > 0 ? r.ue(max: candidates, "num_long_term_sps") : 0
                let inSlice = try r.ue(max: 32 - fromSPS, "num_long_term_pics")
                for index in 0 ..< fromSPS + inSlice {
                    let used: Bool
                    if index < fromSPS {
                        let pick = try candidates > 1 ? r.bits(ceilLog2(candidates), "lt_idx_sps") : 0
                        guard pick < candidates else { throw r.error("lt_idx_sps \(pick) is past the SPS's \(candidates) pictures") }
                        used = sps.longTermUsedByCurrPic[pick]
                    } else {
                        _ = try r.bits(sps.log2MaxPicOrderCntLsb, "poc_lsb_lt")
                        used = try r.flag("used_by_curr_pic_lt_flag")
                    }
                    if try r.flag("delta_poc_msb_present_flag") { _ = try r.ue("delta_poc_msb_cycle_lt") }
                    if used { header.numPicTotalCurr += 1 }
                }
            }
            if sps.temporalMVPEnabled { temporalMVP = try r.flag("slice_temporal_mvp_enabled_flag") }
        }
        var saoLuma = false, saoChroma = false
        if sps.sampleAdaptiveOffsetEnabled {
            saoLuma = try r.flag("slice_sao_luma_flag")
            if sps.chromaArrayType != 0 { saoChroma = try r.flag("slice_sao_chroma_flag") }
        }
        if isP || isB {
            header.numRefIdxL0Active = pps.numRefIdxL0DefaultActive
            header.numRefIdxL1Active = isB ? pps.numRefIdxL1DefaultActive : 0
            if try r.flag("num_ref_idx_active_override_flag") {
                header.numRefIdxL0Active = try r.ue(max: 14, "num_ref_idx_l0_active_minus1") + 1
                if isB { header.numRefIdxL1Active = try r.ue(max: 14, "num_ref_idx_l1_active_minus1") + 1 }
            }
            guard header.numPicTotalCurr > 0 else { throw r.error("a P or B slice whose reference picture sets use no picture") }
            if pps.listsModificationPresent, header.numPicTotalCurr > 1 {
                // ref_pic_lists_modification() (7.3.6.2).
                let width = ceilLog2(header.numPicTotalCurr)
                if try r.flag("ref_pic_list_modification_flag_l0") { try r.skip(header.numRefIdxL0Active * width, "list_entry_l0") }
                if isB, try r.flag("ref_pic_list_modification_flag_l1") { try r.skip(header.numRefIdxL1Active * width, "list_entry_l1") }
            }
            if isB { _ = try r.flag("mvd_l1_zero_flag") }
            if pps.cabacInitPresent { _ = try r.flag("cabac_init_flag") }
            if temporalMVP {
                let fromL0 = try isB ? r.flag("collocated_from_l0_flag") : true
                let count = fromL0 ? header.numRefIdxL0Active : header.numRefIdxL1Active
                if count > 1 { _ = try r.ue(max: count - 1, "collocated_ref_idx") }
            }
            if (pps.weightedPred && isP) || (pps.weightedBipred && isB) {
                try Self.skipPredWeightTable(&r, sps: sps, header: header, isB: isB)
            }
            _ = try r.ue(max: 4, "five_minus_max_num_merge_cand")
        }
        _ = try r.se(in: -(26 + 48 + 51) ... (26 + 48 + 51), "slice_qp_delta")
        if pps.sliceChromaQPOffsetsPresent {
            _ = try r.se(in: -12 ... 12, "slice_cb_qp_offset")
            _ = try r.se(in: -12 ... 12, "slice_cr_qp_offset")
        }
        if pps.chromaQPOffsetListEnabled { _ = try r.flag("cu_chroma_qp_offset_enabled_flag") }
        let override = try pps.deblockingFilterOverrideEnabled ? r.flag("deblocking_filter_override_flag") : false
        var deblockingDisabled = pps.ppsDeblockingFilterDisabled
        if override {
            deblockingDisabled = try r.flag("slice_deblocking_filter_disabled_flag")
            if !deblockingDisabled {
                _ = try r.se(in: -6 ... 6, "slice_beta_offset_div2")
                _ = try r.se(in: -6 ... 6, "slice_tc_offset_div2")
            }
        }
        if pps.loopFilterAcrossSlicesEnabled, saoLuma || saoChroma || !deblockingDisabled {
            _ = try r.flag("slice_loop_filter_across_slices_enabled_flag")
        }
    }

    /// pred_weight_table() (7.3.6.3). For a base-layer picture without screen-content
    /// coding every reference picture has a POC other than the current one's, so every
    /// luma and chroma weight flag is present.
    private static func skipPredWeightTable(_ r: inout BitReader, sps: HEVCSPS, header: HEVCSliceHeader, isB: Bool) throws(CMAFError) {
        let lumaDenominator = try r.ue(max: 7, "luma_log2_weight_denom")
        let chroma = sps.chromaArrayType != 0
        if chroma { _ = try r.se(in: -lumaDenominator ... 7 - lumaDenominator, "delta_chroma_log2_weight_denom") }
        for list in 0 ..< (isB ? 2 : 1) {
            let count = list == 0 ? header.numRefIdxL0Active : header.numRefIdxL1Active
            var lumaFlags: [Bool] = [], chromaFlags: [Bool] = []
            for _ in 0 ..< count { lumaFlags.append(try r.flag("luma_weight_flag")) }
            if chroma { for _ in 0 ..< count { chromaFlags.append(try r.flag("chroma_weight_flag")) } }
            for index in 0 ..< count {
                if lumaFlags[index] {
                    _ = try r.se(in: -128 ... 127, "delta_luma_weight")
                    _ = try r.se("luma_offset")
                }
                if chroma, chromaFlags[index] {
                    for _ in 0 ..< 2 {
                        _ = try r.se(in: -128 ... 127, "delta_chroma_weight")
                        _ = try r.se("delta_chroma_offset")
                    }
                }
            }
        }
    }
}

/// The HEVC decoder configuration record (hvcC, ISO/IEC 14496-15 8.3.3.1) and the codec
/// string (ISO/IEC 14496-15 Annex E.3, RFC 6381) for an `hvc1` sample entry.
package enum HEVCDecoderConfiguration {
    /// The body of an hvcC box (what follows its size and type) for one VPS, SPS and PPS.
    package static func record(vps: [UInt8], sps: [UInt8], pps: [UInt8]) throws(CMAFError) -> [UInt8] {
        try record(vps: [vps], sps: [sps], pps: [pps])
    }

    /// The body of an hvcC box with these parameter sets (stored bytes, no length prefix),
    /// one array per type with array_completeness 1 (all of them are here, as `hvc1` needs).
    /// The profile, tier, level, chroma format and bit depths come from the first SPS;
    /// min_spatial_segmentation_idc, parallelismType, avgFrameRate and constantFrameRate
    /// are 0 (unknown); NAL unit lengths are 4 bytes.
    package static func record(vps: [[UInt8]], sps: [[UInt8]], pps: [[UInt8]]) throws(CMAFError) -> [UInt8] {
        guard let firstSPS = sps.first, !vps.isEmpty, !pps.isEmpty else {
            throw CMAFError(.malformedParameterSet, "hvcC needs at least one VPS, SPS and PPS")
        }
        let parsed = try HEVCSPS(nal: firstSPS[...])
        var maxSubLayersMinus1 = parsed.maxSubLayersMinus1
        for set in vps { maxSubLayersMinus1 = max(maxSubLayersMinus1, try HEVCVPS(nal: set[...]).maxSubLayersMinus1) }
        for set in pps { _ = try HEVCPPS(nal: set[...]) }
        let ptl = parsed.profileTierLevel

        var out: [UInt8] = [1]  // configurationVersion
        out.append(UInt8(ptl.profileSpace << 6) | (ptl.tierFlag ? 0x20 : 0) | UInt8(ptl.profileIDC))
        append32(ptl.compatibilityFlags, to: &out)
        out.append(contentsOf: ptl.constraintBytes)
        out.append(UInt8(ptl.levelIDC))
        out.append(contentsOf: [0xF0, 0x00])  // reserved 1111, min_spatial_segmentation_idc 0
        out.append(0xFC)  // reserved 111111, parallelismType 0
        out.append(0xFC | UInt8(parsed.chromaFormatIDC))
        out.append(0xF8 | UInt8(parsed.bitDepthLumaMinus8))
        out.append(0xF8 | UInt8(parsed.bitDepthChromaMinus8))
        out.append(contentsOf: [0, 0])  // avgFrameRate
        // constantFrameRate 0, numTemporalLayers, temporalIdNested, lengthSizeMinusOne 3.
        out.append(UInt8(maxSubLayersMinus1 + 1) << 3 | (parsed.temporalIDNesting ? 0x04 : 0) | 0x03)
        out.append(3)  // numOfArrays
        for (type, units) in [(HEVCNALType.vps, vps), (HEVCNALType.sps, sps), (HEVCNALType.pps, pps)] {
            out.append(0x80 | type)  // array_completeness 1, reserved 0, NAL_unit_type
            out.append(UInt8(units.count >> 8))
            out.append(UInt8(units.count & 0xFF))
            for unit in units {
                guard unit.count <= 0xFFFF else { throw CMAFError(.malformedParameterSet, "an HEVC parameter set of \(unit.count) bytes does not fit hvcC") }
                out.append(UInt8(unit.count >> 8))
                out.append(UInt8(unit.count & 0xFF))
                out.append(contentsOf: unit)
            }
        }
        return out
    }

    /// The codec string for the sample entry `sampleEntry` (`hvc1`, `hev1`):
    /// `<entry>.<space><profile_idc>.<compatibility>.<tier><level_idc>[.<constraint byte>…]`
    /// with the profile space as "", A, B or C, the 32 compatibility flags bit-reversed in hex
    /// without leading zeros, L or H, and the constraint bytes as two hex digits each (as Shaka
    /// Packager writes them) with trailing zero bytes left out (e.g. `hvc1.1.6.L93.B0`).
    package static func codecString(_ ptl: HEVCProfileTierLevel, sampleEntry: String = "hvc1") -> String {
        let space = ["", "A", "B", "C"][ptl.profileSpace & 3]
        let compatibility = String(UInt32(ptl.compatibilityFlags).bitReversed, radix: 16, uppercase: true)
        var fields = [sampleEntry, "\(space)\(ptl.profileIDC)", compatibility, "\(ptl.tierFlag ? "H" : "L")\(ptl.levelIDC)"]
        var bytes = ptl.constraintBytes
        while bytes.last == 0 { bytes.removeLast() }
        fields += bytes.map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count == 1 ? "0" + digits : digits
        }
        return fields.joined(separator: ".")
    }

    /// `codecString(_:sampleEntry:)` of the SPS NAL unit `sps`.
    package static func codecString(sps: [UInt8], sampleEntry: String = "hvc1") throws(CMAFError) -> String {
        codecString(try HEVCSPS(nal: sps[...]).profileTierLevel, sampleEntry: sampleEntry)
    }

    private static func append32(_ value: UInt32, to out: inout [UInt8]) {
        out.append(contentsOf: [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
    }
}

extension UInt32 {
    /// The bits in the opposite order (bit 0 becomes bit 31).
    fileprivate var bitReversed: UInt32 {
        var value = self, result: UInt32 = 0
        for _ in 0 ..< 32 {
            result = result << 1 | value & 1
            value >>= 1
        }
        return result
    }
}
