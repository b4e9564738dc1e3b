import Crypto
import _CryptoExtras
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SAMPLE-AES decryption without re-packetizing, for the segments where no length changes:
/// every protected H.264 NAL unit has no emulation-prevention byte before decryption and needs
/// none after it (nearly every unit: a 00 00 0x pattern is rare in ciphertext and in slice
/// data). The output is byte for byte what `SegmentTransformer` gives; where that cannot be
/// known cheaply, this gives up (`nil`) and the caller takes the general path.
///
/// One pass over the packet headers, the PES payloads gathered into one scratch buffer, the
/// encrypted blocks of the whole segment run through a single AES-CBC call (CBC decryption of
/// a block needs only the ciphertext before it, so each unit's first block is corrected from
/// the previous unit's last ciphertext block to the IV), and the payloads scattered back.
enum InPlaceDecryption {
    static func decrypt(_ segment: [UInt8], key: [UInt8], iv: [UInt8]) throws(SampleAESError) -> [UInt8]? {
        let size = TransportPacket.size
        guard !segment.isEmpty, segment.count % size == 0, key.count == 16, iv.count == 16 else { return nil }
        let count = segment.count / size

        // Packet headers: PID, unit start, payload offset (size when there is none).
        var pids = [UInt16](repeating: 0, count: count)
        var payloadOffsets = [UInt8](repeating: 0, count: count)
        var starts = [Bool](repeating: false, count: count)
        try segment.withUnsafeBufferPointer { bytes throws(SampleAESError) in
            for index in 0..<count {
                let base = index * size
                payloadOffsets[index] = UInt8(try TransportPacket.layout(of: bytes, at: base, index: index).payloadOffset)
                pids[index] = UInt16(bytes[base + 1] & 0x1F) << 8 | UInt16(bytes[base + 2])
                starts[index] = bytes[base + 1] & 0x40 != 0
            }
        }

        // Tables: the streams to decrypt, and every PMT packet to rewrite.
        guard let patIndex = (0..<count).first(where: { pids[$0] == 0 && starts[$0] }) else { return nil }
        let pmtPIDs = try Set(ProgramSection(in: TransportPacket(segment, index: patIndex), expectedTableID: 0x00).programMapPIDs)
        var videoPIDs: Set<UInt16> = [], audioPIDs: Set<UInt16> = []
        var isPMT = [Bool](repeating: false, count: 0x2000)
        for pid in pmtPIDs where pid < 0x2000 { isPMT[pid] = true }
        var out = segment
        var tables = 0
        for index in 0..<count where isPMT[Int(pids[index])] {
            tables += 1
            let packet = try TransportPacket(segment, index: index)
            let section = try ProgramSection(in: packet, expectedTableID: 0x02)
            let map = try ProgramMap(section.bytes)
            for stream in map.streams {
                if stream.streamType == StreamType.sampleAESH264 { videoPIDs.insert(UInt16(stream.pid)) }
                if stream.streamType == StreamType.sampleAESAAC { audioPIDs.insert(UInt16(stream.pid)) }
            }
            let rewritten = try SegmentTransformer.rewrite(packet, section, map, encrypting: false, audioConfigs: [:])
            out.replaceSubrange(index * size ..< (index + 1) * size, with: rewritten)
        }
        guard tables > 0 else { throw SampleAESError(.malformedProgramTable, "the segment has no PMT") }
        guard !videoPIDs.isEmpty || !audioPIDs.isEmpty else { return out }

        // PES payloads of the protected streams, back to back in `scratch`; where each piece
        // came from; the encrypted blocks (scratch offsets) and where each CBC unit begins.
        var scratch: [UInt8] = []
        scratch.reserveCapacity(segment.count)
        var pieces: [(segment: Int, scratch: Int, length: Int)] = []
        var blocks: [Int] = []
        var unitStarts: [Int] = []
        var videoUnits: [(start: Int, end: Int, firstBlock: Int, blockCount: Int)] = []
        let ok = try segment.withUnsafeBufferPointer { bytes throws(SampleAESError) -> Bool in
            for pid in videoPIDs.union(audioPIDs).sorted() {
                let isVideo = videoPIDs.contains(pid)
                var unitBegin: Int?  // scratch offset of the PES being gathered
                func finish(_ begin: Int) throws(SampleAESError) -> Bool {
                    let pes = begin ..< scratch.count
                    guard pes.count >= 9, scratch[begin] == 0, scratch[begin + 1] == 0, scratch[begin + 2] == 1 else { return false }
                    let headerLength = 9 + Int(scratch[begin + 8])
                    let packetLength = Int(scratch[begin + 4]) << 8 | Int(scratch[begin + 5])
                    guard headerLength <= pes.count, packetLength == 0 || packetLength == pes.count - 6 else { return false }
                    let stream = begin + headerLength ..< pes.upperBound
                    return isVideo ? videoBlocks(stream) : audioBlocks(stream)
                }
                func videoBlocks(_ stream: Range<Int>) -> Bool {
                    scratch.withUnsafeBufferPointer { es in
                        for unit in NALScanner.units(es, stream) {
                            let type = es[unit.lowerBound] & 0x1F
                            guard H264SampleEncryption.isProtected(type: type, length: unit.count) else { continue }
                            // Unescaping and escaping must both be the identity for this unit.
                            guard !NALScanner.needsEscaping(es, unit, positions: unit.lowerBound + 2 ..< unit.upperBound) else { return false }
                            let first = blocks.count
                            unitStarts.append(first)
                            for offset in H264SampleEncryption.encryptedBlockOffsets(length: unit.count) {
                                blocks.append(unit.lowerBound + offset)
                            }
                            videoUnits.append((unit.lowerBound, unit.upperBound, first, blocks.count - first))
                        }
                        return true
                    }
                }
                func audioBlocks(_ stream: Range<Int>) -> Bool {
                    guard let frames = try? ADTSSampleEncryption.frames(scratch[stream]) else { return false }
                    for frame in frames {
                        let offsets = ADTSSampleEncryption.encryptedBlockOffsets(frame)
                        guard !offsets.isEmpty else { continue }
                        unitStarts.append(blocks.count)
                        for offset in offsets { blocks.append(stream.lowerBound + frame.start + offset) }
                    }
                    return true
                }
                for index in 0..<count where pids[index] == pid && Int(payloadOffsets[index]) < size {
                    if starts[index] {
                        if let begin = unitBegin, try !finish(begin) { return false }
                        unitBegin = scratch.count
                    } else if unitBegin == nil {
                        continue  // a PES begun in an earlier segment: left as it is
                    }
                    let from = index * size + Int(payloadOffsets[index])
                    let length = (index + 1) * size - from
                    pieces.append((from, scratch.count, length))
                    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[from ..< from + length]))
                }
                if let begin = unitBegin, try !finish(begin) { return false }
            }
            return true
        }
        guard ok else { return nil }

        // One CBC pass over every encrypted block, then each unit's first block re-based on the IV.
        if !blocks.isEmpty {
            let ciphertext = [UInt8](unsafeUninitializedCapacity: blocks.count * 16) { buffer, initialized in
                scratch.withUnsafeBufferPointer { source in
                    for (index, offset) in blocks.enumerated() {
                        (buffer.baseAddress! + index * 16).update(from: source.baseAddress! + offset, count: 16)
                    }
                }
                initialized = blocks.count * 16
            }
            let plain: [UInt8]
            do {
                let symmetric = SymmetricKey(data: key)
                plain = [UInt8](try AES._CBC.decrypt(ciphertext, using: symmetric, iv: try AES._CBC.IV(ivBytes: iv), noPadding: true))
            } catch {
                throw SampleAESError(.cipherFailure, "AES-CBC failed: \(error)", underlying: error)
            }
            guard plain.count == ciphertext.count else { throw SampleAESError(.cipherFailure, "AES-CBC returned \(plain.count) bytes") }
            scratch.withUnsafeMutableBufferPointer { target in
                plain.withUnsafeBufferPointer { source in
                    for (index, offset) in blocks.enumerated() {
                        (target.baseAddress! + offset).update(from: source.baseAddress! + index * 16, count: 16)
                    }
                }
                for start in unitStarts where start > 0 {
                    let offset = blocks[start]
                    for byte in 0..<16 { target[offset + byte] ^= ciphertext[(start - 1) * 16 + byte] ^ iv[byte] }
                }
            }
        }

        // The clear units must need no emulation prevention where decryption changed bytes.
        let escapes = scratch.withUnsafeBufferPointer { es in
            videoUnits.contains { unit in
                (unit.firstBlock ..< unit.firstBlock + unit.blockCount).contains { block in
                    let offset = blocks[block]
                    let positions = max(unit.start + 2, offset) ..< min(unit.end, offset + 18)
                    return NALScanner.needsEscaping(es, unit.start ..< unit.end, positions: positions)
                }
            }
        }
        guard !escapes else { return nil }

        out.withUnsafeMutableBufferPointer { target in
            scratch.withUnsafeBufferPointer { source in
                for piece in pieces {
                    (target.baseAddress! + piece.segment).update(from: source.baseAddress! + piece.scratch, count: piece.length)
                }
            }
        }
        return out
    }
}

/// H.264 Annex B scanning on a buffer, with `H264SampleEncryption.nalUnits`'s exact boundaries.
enum NALScanner {
    /// Whether any of the eight bytes of `word` is zero.
    @inline(__always)
    static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0
    }

    /// The NAL units (header to end, start codes excluded) of `range` in `bytes`.
    static func units(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> [Range<Int>] {
        var units: [Range<Int>] = []
        var index = range.lowerBound
        var current: Int?
        let end = range.upperBound
        let base = bytes.baseAddress!
        while index + 2 < end {
            // Eight bytes without a zero: no start code begins among them.
            if index + 10 < end, !hasZeroByte(UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)) {
                index += 8
                continue
            }
            if bytes[index + 1] != 0 {
                index += 2
                continue
            }
            if bytes[index] == 0 {
                var codeLength = 0
                if bytes[index + 2] == 1 { codeLength = 3 } else if bytes[index + 2] == 0, index + 3 < end, bytes[index + 3] == 1 { codeLength = 4 }
                if codeLength > 0 {
                    if let start = current, start < index { units.append(start ..< index) }
                    current = index + codeLength
                    index += codeLength
                    continue
                }
            }
            index += 1
        }
        if let start = current, start < end { units.append(start ..< end) }
        return units
    }

    /// Whether `escape` would insert a byte (or `unescape` remove one) in `unit` at any of
    /// `positions`: two zeros followed by 0…3, but for a final 0x03.
    static func needsEscaping(_ bytes: UnsafeBufferPointer<UInt8>, _ unit: Range<Int>, positions: Range<Int>) -> Bool {
        var index = max(positions.lowerBound, unit.lowerBound + 2)
        let last = unit.upperBound - 1
        let base = bytes.baseAddress!
        while index < positions.upperBound {
            // No zero among bytes index-2 ... index+5: no window ending in index ... index+5 matches.
            if index + 6 <= positions.upperBound, !hasZeroByte(UnsafeRawPointer(base + index - 2).loadUnaligned(as: UInt64.self)) {
                index += 6
                continue
            }
            let byte = bytes[index]
            if byte <= 3, bytes[index - 1] == 0, bytes[index - 2] == 0, !(byte == 3 && index == last) { return true }
            // A window ending at index + 1 or index + 2 needs this byte to be zero.
            index += byte == 0 ? 1 : 3
        }
        return false
    }
}
