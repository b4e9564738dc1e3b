/// H.264 (ITU-T H.264 / ISO/IEC 14496-10) sequence and picture parameter sets, read as far
/// as a slice header needs them, and slice headers read through their last bit: Common
/// Encryption leaves the NAL header and the slice header of every slice clear, so the
/// encrypting packager must know where each slice header ends.
///
/// Section numbers below are those of H.264 (08/2021). Values are checked against the
/// ranges the standard gives where a wrong one would send the reader astray (ids, list
/// sizes, bit widths); the rest are kept as read.

/// The NAL unit types this layer tells apart (H.264 Table 7-1).
package enum H264NALType {
    /// Coded slice of a non-IDR picture.
    package static let slice: UInt8 = 1
    /// Coded slice of an IDR picture.
    package static let idrSlice: UInt8 = 5
    package static let sei: UInt8 = 6
    package static let sps: UInt8 = 7
    package static let pps: UInt8 = 8
    package static let accessUnitDelimiter: UInt8 = 9

    /// The type in a NAL unit's first byte.
    package static func of(_ header: UInt8) -> UInt8 { header & 0x1F }

    /// Slices Common Encryption protects: types 1 and 5. Data partitions (2–4, Extended
    /// profile only) and the SVC/MVC extension units (20, 21) are left clear, as MP4FF and
    /// Shaka Packager leave them.
    package static func isProtectedSlice(_ type: UInt8) -> Bool { type == slice || type == idrSlice }
}

/// A sequence parameter set (7.3.2.1.1), through frame_cropping (the VUI is not read).
package struct H264SPS: Sendable, Equatable {
    package var profileIDC: Int
    /// constraint_set0_flag … constraint_set5_flag and the two reserved bits, as the byte
    /// stored after profile_idc (avcC's profile_compatibility).
    package var constraintFlags: UInt8
    package var levelIDC: Int
    package var id: Int
    package var chromaFormatIDC = 1
    package var separateColourPlane = false
    package var bitDepthLumaMinus8 = 0
    package var bitDepthChromaMinus8 = 0
    package var qpprimeYZeroTransformBypass = false
    package var seqScalingMatrixPresent = false
    /// log2_max_frame_num_minus4 + 4: the bit width of frame_num.
    package var log2MaxFrameNum = 4
    package var picOrderCntType = 0
    /// log2_max_pic_order_cnt_lsb_minus4 + 4 (pic_order_cnt_type 0): the width of pic_order_cnt_lsb.
    package var log2MaxPicOrderCntLsb = 4
    package var deltaPicOrderAlwaysZero = false
    package var offsetForNonRefPic = 0
    package var offsetForTopToBottomField = 0
    package var offsetsForRefFrame: [Int] = []
    package var maxNumRefFrames = 0
    package var gapsInFrameNumAllowed = false
    package var picWidthInMbs = 0
    package var picHeightInMapUnits = 0
    package var frameMbsOnly = true
    package var mbAdaptiveFrameField = false
    package var direct8x8Inference = false
    /// frame_crop_left/right/top/bottom_offset, in crop units (zero without cropping).
    package var cropLeft = 0, cropRight = 0, cropTop = 0, cropBottom = 0
    package var vuiParametersPresent = false

    /// ChromaArrayType (7.4.2.1.1): 0 when the colour planes are coded separately.
    package var chromaArrayType: Int { separateColourPlane ? 0 : chromaFormatIDC }

    /// The picture width in luma samples after cropping (7-18, 7-19 with 7.4.2.1.1).
    package var width: Int { picWidthInMbs * 16 - cropUnitX * (cropLeft + cropRight) }
    /// The frame height in luma samples after cropping.
    package var height: Int { (2 - (frameMbsOnly ? 1 : 0)) * picHeightInMapUnits * 16 - cropUnitY * (cropTop + cropBottom) }

    private var cropUnitX: Int { chromaArrayType == 0 ? 1 : (chromaFormatIDC == 3 ? 1 : 2) }
    private var cropUnitY: Int { (chromaArrayType == 0 ? 1 : (chromaFormatIDC == 1 ? 2 : 1)) * (2 - (frameMbsOnly ? 1 : 0)) }

    /// Profiles whose SPS carries chroma_format_idc and the fields after it (7.3.2.1.1).
    private static let highProfiles: Set<Int> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// Parses the SPS NAL unit `nal` (stored bytes, header first).
    package init(nal: ArraySlice<UInt8>) throws(CMAFError) {
        var reader = BitReader(RBSP(nal), errorCode: .malformedParameterSet, context: "H.264 SPS")
        guard try reader.bits(1, "forbidden_zero_bit") == 0 else { throw reader.error("forbidden_zero_bit is 1") }
        _ = try reader.bits(2, "nal_ref_idc")
        let type = try reader.bits(5, "nal_unit_type")
        guard type == Int(H264NALType.sps) else { throw reader.error("NAL unit type \(type) is not an SPS (7)") }
        profileIDC = try reader.bits(8, "profile_idc")
        constraintFlags = UInt8(try reader.bits(8, "constraint_set flags"))
        levelIDC = try reader.bits(8, "level_idc")
        id = try reader.ue(max: 31, "seq_parameter_set_id")
        if Self.highProfiles.contains(profileIDC) {
            chromaFormatIDC = try reader.ue(max: 3, "chroma_format_idc")
            if chromaFormatIDC == 3 { separateColourPlane = try reader.flag("separate_colour_plane_flag") }
            bitDepthLumaMinus8 = try reader.ue(max: 6, "bit_depth_luma_minus8")
            bitDepthChromaMinus8 = try reader.ue(max: 6, "bit_depth_chroma_minus8")
            qpprimeYZeroTransformBypass = try reader.flag("qpprime_y_zero_transform_bypass_flag")
            seqScalingMatrixPresent = try reader.flag("seq_scaling_matrix_present_flag")
            if seqScalingMatrixPresent {
                for index in 0 ..< (chromaFormatIDC != 3 ? 8 : 12) {
                    if try reader.flag("seq_scaling_list_present_flag") { try Self.skipScalingList(&reader, size: index < 6 ? 16 : 64) }
                }
            }
        }
        log2MaxFrameNum = try reader.ue(max: 12, "log2_max_frame_num_minus4") + 4
        picOrderCntType = try reader.ue(max: 2, "pic_order_cnt_type")
        if picOrderCntType == 0 {
            log2MaxPicOrderCntLsb = try reader.ue(max: 12, "log2_max_pic_order_cnt_lsb_minus4") + 4
        } else if picOrderCntType == 1 {
            deltaPicOrderAlwaysZero = try reader.flag("delta_pic_order_always_zero_flag")
            offsetForNonRefPic = try reader.se("offset_for_non_ref_pic")
            offsetForTopToBottomField = try reader.se("offset_for_top_to_bottom_field")
            let cycle = try reader.ue(max: 255, "num_ref_frames_in_pic_order_cnt_cycle")
            for _ in 0 ..< cycle { offsetsForRefFrame.append(try reader.se("offset_for_ref_frame")) }
        }
        maxNumRefFrames = try reader.ue(max: 16, "max_num_ref_frames")
        gapsInFrameNumAllowed = try reader.flag("gaps_in_frame_num_value_allowed_flag")
        // Level 6.2 allows 139264 macroblocks a frame; far larger values are garbage.
        picWidthInMbs = try reader.ue(max: 4095, "pic_width_in_mbs_minus1") + 1
        picHeightInMapUnits = try reader.ue(max: 4095, "pic_height_in_map_units_minus1") + 1
        frameMbsOnly = try reader.flag("frame_mbs_only_flag")
        if !frameMbsOnly { mbAdaptiveFrameField = try reader.flag("mb_adaptive_frame_field_flag") }
        direct8x8Inference = try reader.flag("direct_8x8_inference_flag")
        if try reader.flag("frame_cropping_flag") {
            cropLeft = try reader.ue(max: 65535, "frame_crop_left_offset")
            cropRight = try reader.ue(max: 65535, "frame_crop_right_offset")
            cropTop = try reader.ue(max: 65535, "frame_crop_top_offset")
            cropBottom = try reader.ue(max: 65535, "frame_crop_bottom_offset")
        }
        vuiParametersPresent = try reader.flag("vui_parameters_present_flag")
        guard width > 0, height > 0 else {
            throw reader.error("the cropping leaves a \(width)x\(height) picture")
        }
    }

    /// Skips scaling_list() (7.3.2.1.1.1): delta_scale codes until the list ends or a
    /// delta makes nextScale 0.
    private static func skipScalingList(_ reader: inout BitReader, size: Int) throws(CMAFError) {
        var lastScale = 8, nextScale = 8
        for _ in 0 ..< size {
            if nextScale != 0 {
                let delta = try reader.se(in: -128 ... 127, "delta_scale")
                nextScale = (lastScale + delta + 256) % 256
            }
            lastScale = nextScale == 0 ? lastScale : nextScale
        }
    }
}

/// A picture parameter set (7.3.2.2), through transform_8x8_mode_flag (the scaling
/// matrices and second chroma offset after it are not needed for slice headers).
package struct H264PPS: Sendable, Equatable {
    package var id: Int
    package var spsID: Int
    /// entropy_coding_mode_flag: CABAC when set, CAVLC otherwise.
    package var entropyCodingModeFlag: Bool
    package var bottomFieldPicOrderInFramePresent: Bool
    /// num_ref_idx_l0_default_active_minus1 + 1.
    package var numRefIdxL0DefaultActive: Int
    /// num_ref_idx_l1_default_active_minus1 + 1.
    package var numRefIdxL1DefaultActive: Int
    package var weightedPred: Bool
    package var weightedBipredIDC: Int
    package var picInitQPMinus26: Int
    package var picInitQSMinus26: Int
    package var chromaQPIndexOffset: Int
    package var deblockingFilterControlPresent: Bool
    package var constrainedIntraPred: Bool
    package var redundantPicCntPresent: Bool
    package var transform8x8Mode = false

    /// Parses the PPS NAL unit `nal`. A PPS with more than one slice group (flexible
    /// macroblock ordering, Baseline/Extended only) is refused as `unsupportedStream`.
    package init(nal: ArraySlice<UInt8>) throws(CMAFError) {
        var reader = BitReader(RBSP(nal), errorCode: .malformedParameterSet, context: "H.264 PPS")
        guard try reader.bits(1, "forbidden_zero_bit") == 0 else { throw reader.error("forbidden_zero_bit is 1") }
        _ = try reader.bits(2, "nal_ref_idc")
        let type = try reader.bits(5, "nal_unit_type")
        guard type == Int(H264NALType.pps) else { throw reader.error("NAL unit type \(type) is not a PPS (8)") }
        id = try reader.ue(max: 255, "pic_parameter_set_id")
        spsID = try reader.ue(max: 31, "seq_parameter_set_id")
        entropyCodingModeFlag = try reader.flag("entropy_coding_mode_flag")
        bottomFieldPicOrderInFramePresent = try reader.flag("bottom_field_pic_order_in_frame_present_flag")
        let sliceGroups = try reader.ue(max: 7, "num_slice_groups_minus1") + 1
        guard sliceGroups == 1 else {
            throw CMAFError(.unsupportedStream, "H.264 PPS \(id): \(sliceGroups) slice groups (flexible macroblock ordering) are not supported")
        }
        numRefIdxL0DefaultActive = try reader.ue(max: 31, "num_ref_idx_l0_default_active_minus1") + 1
        numRefIdxL1DefaultActive = try reader.ue(max: 31, "num_ref_idx_l1_default_active_minus1") + 1
        weightedPred = try reader.flag("weighted_pred_flag")
        weightedBipredIDC = try reader.bits(2, "weighted_bipred_idc")
        guard weightedBipredIDC <= 2 else { throw reader.error("weighted_bipred_idc is 3") }
        picInitQPMinus26 = try reader.se(in: -(26 + 36) ... 25, "pic_init_qp_minus26")
        picInitQSMinus26 = try reader.se(in: -26 ... 25, "pic_init_qs_minus26")
        chromaQPIndexOffset = try reader.se(in: -12 ... 12, "chroma_qp_index_offset")
        deblockingFilterControlPresent = try reader.flag("deblocking_filter_control_present_flag")
        constrainedIntraPred = try reader.flag("constrained_intra_pred_flag")
        redundantPicCntPresent = try reader.flag("redundant_pic_cnt_present_flag")
        if reader.moreRBSPData() { transform8x8Mode = try reader.flag("transform_8x8_mode_flag") }
    }
}

/// slice_type % 5 (Table 7-6).
package enum H264SliceType: Int, Sendable {
    case p = 0, b = 1, i = 2, sp = 3, si = 4
}

/// What a slice header said, and where it ended.
package struct H264SliceHeader: Sendable, Equatable {
    package var nalUnitType: UInt8
    package var nalRefIDC: Int
    package var firstMbInSlice: Int
    package var sliceType: H264SliceType
    package var ppsID: Int
    package var frameNum: Int
    package var fieldPic = false
    package var bottomField = false
    package var idrPicID: Int?
    package var picOrderCntLsb: Int?
    package var numRefIdxL0Active = 0
    package var numRefIdxL1Active = 0
    package var sliceQPDelta = 0
    /// RBSP bits from the NAL header's first bit through the header's last (for CABAC,
    /// through cabac_alignment_one_bit, so a multiple of 8).
    package var bitLength = 0
    /// Stored bytes from the NAL header through the header's last byte.
    package var storedLength = 0
}

/// The SPS and PPS of one H.264 stream by id, as they arrive (a later one replaces an
/// earlier one of the same id, as in a decoder), and slice headers read against them.
package struct H264ParameterSets: Sendable, Equatable {
    package private(set) var sps: [Int: H264SPS] = [:]
    package private(set) var pps: [Int: H264PPS] = [:]

    /// Stored bytes of a slice read first; a header longer than this (never seen in
    /// practice: the longest are a few dozen bytes) is read again from the whole unit.
    private static let headerPrefix = 512

    /// No parameter sets yet.
    package init() {}

    /// The parameter sets of `nals` (SPS and PPS NAL units, stored bytes, any order).
    package init(_ nals: [[UInt8]]) throws(CMAFError) {
        for nal in nals { try add(nal[...]) }
    }

    /// Whether a NAL unit of `type` is one `add` takes.
    package static func isParameterSet(_ type: UInt8) -> Bool { type == H264NALType.sps || type == H264NALType.pps }

    /// Reads the SPS or PPS `nal` and keeps it under its id. Throws for anything else.
    package mutating func add(_ nal: ArraySlice<UInt8>) throws(CMAFError) {
        guard let first = nal.first else { throw CMAFError(.malformedParameterSet, "H.264: an empty NAL unit is no parameter set") }
        switch H264NALType.of(first) {
        case H264NALType.sps:
            let set = try H264SPS(nal: nal)
            sps[set.id] = set
        case H264NALType.pps:
            let set = try H264PPS(nal: nal)
            pps[set.id] = set
        case let type:
            throw CMAFError(.malformedParameterSet, "H.264: NAL unit type \(type) is not an SPS or a PPS")
        }
    }

    /// The number of stored bytes from the NAL header through the end of the slice header
    /// of the slice NAL unit `nal` (type 1 or 5, stored bytes without a length prefix): for
    /// CABAC through cabac_alignment_one_bit, so slice_data starts at that byte; for CAVLC
    /// the header's bits rounded up to whole bytes.
    package func sliceHeaderLength(of nal: ArraySlice<UInt8>) throws(CMAFError) -> Int {
        try sliceHeader(of: nal).storedLength
    }

    /// Reads the slice header of `nal` (7.3.3) through its last bit.
    package func sliceHeader(of nal: ArraySlice<UInt8>) throws(CMAFError) -> H264SliceHeader {
        if nal.count > Self.headerPrefix, let header = try? sliceHeader(of: RBSP(nal, limit: Self.headerPrefix)) {
            return header
        }
        return try sliceHeader(of: RBSP(nal))
    }

    private func sliceHeader(of rbsp: RBSP) throws(CMAFError) -> H264SliceHeader {
        var r = BitReader(rbsp, errorCode: .malformedSlice, context: "H.264 slice header")
        guard try r.bits(1, "forbidden_zero_bit") == 0 else { throw r.error("forbidden_zero_bit is 1") }
        let nalRefIDC = try r.bits(2, "nal_ref_idc")
        let nalType = UInt8(try r.bits(5, "nal_unit_type"))
        guard H264NALType.isProtectedSlice(nalType) else { throw r.error("NAL unit type \(nalType) is not a slice (1 or 5)") }
        let idr = nalType == H264NALType.idrSlice
        let firstMb = try r.ue("first_mb_in_slice")
        let rawType = try r.ue(max: 9, "slice_type")
        guard let sliceType = H264SliceType(rawValue: rawType % 5) else { throw r.error("slice_type \(rawType)") }
        let ppsID = try r.ue(max: 255, "pic_parameter_set_id")
        guard let pps = pps[ppsID] else { throw r.error("PPS \(ppsID) was never seen") }
        guard let sps = sps[pps.spsID] else { throw r.error("SPS \(pps.spsID), named by PPS \(ppsID), was never seen") }

        var header = H264SliceHeader(nalUnitType: nalType, nalRefIDC: nalRefIDC, firstMbInSlice: firstMb,
                                     sliceType: sliceType, ppsID: ppsID, frameNum: 0)
        if sps.separateColourPlane { _ = try r.bits(2, "colour_plane_id") }
        header.frameNum = try r.bits(sps.log2MaxFrameNum, "frame_num")
        if !sps.frameMbsOnly {
            header.fieldPic = try r.flag("field_pic_flag")
            if header.fieldPic { header.bottomField = try r.flag("bottom_field_flag") }
        }
        if idr { header.idrPicID = try r.ue(max: 65535, "idr_pic_id") }
        if sps.picOrderCntType == 0 {
            header.picOrderCntLsb = try r.bits(sps.log2MaxPicOrderCntLsb, "pic_order_cnt_lsb")
            if pps.bottomFieldPicOrderInFramePresent, !header.fieldPic { _ = try r.se("delta_pic_order_cnt_bottom") }
        }
        if sps.picOrderCntType == 1, !sps.deltaPicOrderAlwaysZero {
            _ = try r.se("delta_pic_order_cnt[0]")
            if pps.bottomFieldPicOrderInFramePresent, !header.fieldPic { _ = try r.se("delta_pic_order_cnt[1]") }
        }
        if pps.redundantPicCntPresent { _ = try r.ue(max: 127, "redundant_pic_cnt") }
        if sliceType == .b { _ = try r.flag("direct_spatial_mv_pred_flag") }

        header.numRefIdxL0Active = pps.numRefIdxL0DefaultActive
        header.numRefIdxL1Active = pps.numRefIdxL1DefaultActive
        if sliceType == .p || sliceType == .sp || sliceType == .b {
            if try r.flag("num_ref_idx_active_override_flag") {
                header.numRefIdxL0Active = try r.ue(max: 31, "num_ref_idx_l0_active_minus1") + 1
                if sliceType == .b { header.numRefIdxL1Active = try r.ue(max: 31, "num_ref_idx_l1_active_minus1") + 1 }
            }
        }
        if sliceType != .b { header.numRefIdxL1Active = 0 }
        if sliceType == .i || sliceType == .si { header.numRefIdxL0Active = 0 }

        // ref_pic_list_modification() (7.3.3.1); types 20/21 use the MVC form and are never read here.
        if sliceType != .i, sliceType != .si {
            try Self.skipRefPicListModification(&r, list: 0)
            if sliceType == .b { try Self.skipRefPicListModification(&r, list: 1) }
        }
        if (pps.weightedPred && (sliceType == .p || sliceType == .sp)) || (pps.weightedBipredIDC == 1 && sliceType == .b) {
            try Self.skipPredWeightTable(&r, sps: sps, header: header)
        }
        if nalRefIDC != 0 { try Self.skipDecRefPicMarking(&r, idr: idr) }
        if pps.entropyCodingModeFlag, sliceType != .i, sliceType != .si { _ = try r.ue(max: 2, "cabac_init_idc") }
        header.sliceQPDelta = try r.se(in: -87 ... 87, "slice_qp_delta")
        if sliceType == .sp || sliceType == .si {
            if sliceType == .sp { _ = try r.flag("sp_for_switch_flag") }
            _ = try r.se(in: -51 ... 51, "slice_qs_delta")
        }
        if pps.deblockingFilterControlPresent {
            let disable = try r.ue(max: 2, "disable_deblocking_filter_idc")
            if disable != 1 {
                _ = try r.se(in: -6 ... 6, "slice_alpha_c0_offset_div2")
                _ = try r.se(in: -6 ... 6, "slice_beta_offset_div2")
            }
        }
        // (slice_group_change_cycle only with slice groups, which the PPS refused.)
        if pps.entropyCodingModeFlag {
            while !r.isByteAligned {
                guard try r.flag("cabac_alignment_one_bit") else { throw r.error("cabac_alignment_one_bit at bit \(r.position - 1) is 0") }
            }
        }
        header.bitLength = r.position
        header.storedLength = rbsp.storedByteCount(throughBit: r.position)
        return header
    }

    /// ref_pic_list_modification() for list `list`: operations until modification_of_pic_nums_idc 3.
    private static func skipRefPicListModification(_ r: inout BitReader, list: Int) throws(CMAFError) {
        guard try r.flag(list == 0 ? "ref_pic_list_modification_flag_l0" : "ref_pic_list_modification_flag_l1") else { return }
        // At most num_ref_idx_lX_active (≤ 32) operations and the final 3.
        for _ in 0 ..< 33 {
            switch try r.ue(max: 3, "modification_of_pic_nums_idc") {
            case 0, 1: _ = try r.ue(max: 131_071, "abs_diff_pic_num_minus1")
            case 2: _ = try r.ue("long_term_pic_num")
            default: return
            }
        }
        throw r.error("ref_pic_list_modification of list \(list) has more than 32 operations")
    }

    /// pred_weight_table() (7.3.3.2).
    private static func skipPredWeightTable(_ r: inout BitReader, sps: H264SPS, header: H264SliceHeader) throws(CMAFError) {
        _ = try r.ue(max: 7, "luma_log2_weight_denom")
        let chroma = sps.chromaArrayType != 0
        if chroma { _ = try r.ue(max: 7, "chroma_log2_weight_denom") }
        for list in 0 ..< (header.sliceType == .b ? 2 : 1) {
            for _ in 0 ..< (list == 0 ? header.numRefIdxL0Active : header.numRefIdxL1Active) {
                if try r.flag("luma_weight_flag") {
                    _ = try r.se(in: -128 ... 127, "luma_weight")
                    _ = try r.se(in: -128 ... 127, "luma_offset")
                }
                if chroma, try r.flag("chroma_weight_flag") {
                    for _ in 0 ..< 2 {
                        _ = try r.se(in: -128 ... 127, "chroma_weight")
                        _ = try r.se(in: -128 ... 127, "chroma_offset")
                    }
                }
            }
        }
    }

    /// dec_ref_picture_marking() (7.3.3.3): two flags for an IDR, else the adaptive
    /// memory-management operations until memory_management_control_operation 0.
    private static func skipDecRefPicMarking(_ r: inout BitReader, idr: Bool) throws(CMAFError) {
        if idr {
            _ = try r.flag("no_output_of_prior_pics_flag")
            _ = try r.flag("long_term_reference_flag")
            return
        }
        guard try r.flag("adaptive_ref_pic_marking_mode_flag") else { return }
        // No more operations than there are references to act on, with room to spare.
        for _ in 0 ..< 100 {
            let operation = try r.ue(max: 6, "memory_management_control_operation")
            if operation == 0 { return }
            if operation == 1 || operation == 3 { _ = try r.ue(max: 131_071, "difference_of_pic_nums_minus1") }
            if operation == 2 { _ = try r.ue("long_term_pic_num") }
            if operation == 3 || operation == 6 { _ = try r.ue(max: 31, "long_term_frame_idx") }
            if operation == 4 { _ = try r.ue(max: 32, "max_long_term_frame_idx_plus1") }
        }
        throw r.error("dec_ref_pic_marking has more than 100 operations")
    }
}
