import Crypto
import _CryptoExtras
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SAMPLE-AES decryption of a whole segment in one AES pass, copying every TS packet it can
/// verbatim. The output is byte for byte what `SegmentTransformer` (the general path, kept for
/// encryption and as the reference) gives; where the input is malformed or a layout this does
/// not take (a PES outgrowing its length field, a packet with a PCR that would be left empty),
/// this gives up (`nil`) and the caller takes the general path, which says what is wrong.
///
/// One pass over the packet headers; the PES payloads of the protected streams gathered into one
/// scratch buffer; the encrypted blocks of the whole segment through a single AES-CBC call (CBC
/// decryption of a block needs only the ciphertext before it, so each unit's first block is
/// corrected from the previous unit's last ciphertext block to the IV); the payloads scattered
/// back into a copy of the segment. H.264 NAL units come in two kinds:
/// - without emulation-prevention bytes (nearly all): their blocks are decrypted where they lie;
/// - with them: unescaped into a side buffer (appended to the scratch) and decrypted there, then
///   escaped again (`H264SampleEncryption`'s exact rules), which may change their length.
/// A decrypted unit that needs emulation prevention, or an escaped one whose length changed,
/// changes its PES's length: only that PES is laid out again (`PESUnit.layout`, the one rule
/// both directions share) and the continuity counters of its PID after it shifted
/// (`PESUnit.Layout.write`); every other packet of the segment is copied as it is.
enum SegmentDecryption {
    /// A PES gathered into the scratch buffer: its pieces (one per TS packet) and its header.
    private struct GatheredPES {
        var pieces: Range<Int>
        var scratch: Range<Int>
        var headerLength = 0
        var packetLength = 0
    }

    /// A protected NAL unit whose bytes change length once decrypted and escaped again.
    private struct Replacement {
        var pes: Int
        var unit: Range<Int>
        var bytes: [UInt8]
    }

    /// A PES payload's piece: the bytes of one TS packet's payload, copied to the scratch buffer.
    private struct Piece {
        var segment: Int
        var scratch: Int
        var length: Int
    }

    /// A protected NAL unit decrypted where it lies in the scratch buffer: its blocks are
    /// `blocks[firstBlock ..< firstBlock + blockCount]`.
    private struct DirectUnit {
        var pes: Int
        var unit: Range<Int>
        var firstBlock: Int
        var blockCount: Int
    }

    /// A protected NAL unit with emulation-prevention bytes: `raw` is where it lies, unescaped,
    /// in the side buffer.
    private struct EscapedUnit {
        var pes: Int
        var unit: Range<Int>
        var raw: Range<Int>
    }

    /// The gather phase: the PES payloads of the protected streams back to back in `scratch`,
    /// where each piece came from, and the encrypted blocks (scratch offsets) with where each
    /// CBC unit begins. Units with emulation-prevention bytes are unescaped into `side`
    /// (offsets there), to be decrypted once `side` follows the scratch. A value with mutating
    /// methods: no closure captures its buffers, so accessing them costs no dynamic
    /// exclusivity checks.
    private struct Gather {
        var scratch: [UInt8] = []
        var pieces: [Piece] = []
        var gathered: [GatheredPES] = []
        var blocks: [Int] = []
        var unitStarts: [Int] = []
        var directUnits: [DirectUnit] = []
        var escapedUnits: [EscapedUnit] = []
        var side: [UInt8] = []

        init(capacity: Int) {
            scratch.reserveCapacity(capacity)
        }

        /// Gathers every PES of `pid` begun in the segment; false for a layout this pass does
        /// not take.
        mutating func stream(pid: UInt16, isVideo: Bool, bytes: UnsafeBufferPointer<UInt8>, pids: [UInt16], payloadOffsets: [UInt8],
                             starts: [Bool]) -> Bool {
            let size = TransportPacket.size
            var current: GatheredPES?  // the PES being gathered
            for index in pids.indices where pids[index] == pid && Int(payloadOffsets[index]) < size {
                if starts[index] {
                    if let pes = current, !finish(pes, isVideo: isVideo) { return false }
                    current = GatheredPES(pieces: pieces.count ..< pieces.count, scratch: scratch.count ..< scratch.count)
                } else if current == nil {
                    continue  // a PES begun in an earlier segment: left as it is
                }
                let from = index * size + Int(payloadOffsets[index])
                let length = (index + 1) * size - from
                pieces.append(Piece(segment: from, scratch: scratch.count, length: length))
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[from ..< from + length]))
            }
            if let pes = current, !finish(pes, isVideo: isVideo) { return false }
            return true
        }

        private mutating func finish(_ pes: GatheredPES, isVideo: Bool) -> Bool {
            var pes = pes
            let begin = pes.scratch.lowerBound
            pes.scratch = begin ..< scratch.count
            pes.pieces = pes.pieces.lowerBound ..< pieces.count
            guard pes.scratch.count >= 9, scratch[begin] == 0, scratch[begin + 1] == 0, scratch[begin + 2] == 1 else { return false }
            pes.headerLength = 9 + Int(scratch[begin + 8])
            pes.packetLength = Int(scratch[begin + 4]) << 8 | Int(scratch[begin + 5])
            guard pes.headerLength <= pes.scratch.count,
                  pes.packetLength == 0 || pes.packetLength == pes.scratch.count - 6 else { return false }
            gathered.append(pes)
            let stream = begin + pes.headerLength ..< pes.scratch.upperBound
            if isVideo {
                videoBlocks(stream, pes: gathered.count - 1)
                return true
            }
            return audioBlocks(stream)
        }

        private mutating func videoBlocks(_ stream: Range<Int>, pes: Int) {
            let es = scratch  // the same storage, read only while `side` and the lists grow
            es.withUnsafeBufferPointer { es in
                for found in NALScanner.units(es, stream) {
                    let unit = found.range
                    let type = es[unit.lowerBound] & 0x1F
                    guard H264SampleEncryption.isProtected(type: type, length: unit.count) else { continue }
                    if found.hasZeroPair, NALScanner.needsEscaping(es, unit, positions: unit.lowerBound + 2 ..< unit.upperBound) {
                        // The general path's unit: unescaped, decrypted, escaped again.
                        let start = side.count
                        H264SampleEncryption.unescape(UnsafeBufferPointer(rebasing: es[unit]), appendingTo: &side)
                        guard side.count - start > 48 else {
                            side.removeSubrange(start...)
                            continue
                        }
                        escapedUnits.append(EscapedUnit(pes: pes, unit: unit, raw: start ..< side.count))
                        continue
                    }
                    let first = blocks.count
                    unitStarts.append(first)
                    H264SampleEncryption.appendEncryptedBlockOffsets(length: unit.count, from: unit.lowerBound, to: &blocks)
                    directUnits.append(DirectUnit(pes: pes, unit: unit, firstBlock: first, blockCount: blocks.count - first))
                }
            }
        }

        private mutating func audioBlocks(_ stream: Range<Int>) -> Bool {
            guard let frames = try? ADTSSampleEncryption.frames(scratch[stream]) else { return false }
            for frame in frames {
                let first = blocks.count
                ADTSSampleEncryption.appendEncryptedBlockOffsets(frame, from: stream.lowerBound + frame.start, to: &blocks)
                if blocks.count > first { unitStarts.append(first) }
            }
            return true
        }
    }

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
        guard videoPIDs.isDisjoint(with: audioPIDs) else { return nil }  // one PID announced as both: the general path's call

        // PES payloads of the protected streams, back to back in the scratch buffer; the
        // encrypted blocks found in them.
        // Room for the payloads and the unescaped units that follow them (a quarter more), so
        // appending those rarely moves the scratch buffer.
        var gather = Gather(capacity: segment.count + segment.count / 4)
        let ok = segment.withUnsafeBufferPointer { bytes in
            videoPIDs.union(audioPIDs).sorted().allSatisfy { pid in
                gather.stream(pid: pid, isVideo: videoPIDs.contains(pid), bytes: bytes, pids: pids, payloadOffsets: payloadOffsets,
                              starts: starts)
            }
        }
        guard ok else { return nil }
        // Taken out, not shared: the buffers that grow below stay uniquely owned (no copy).
        var scratch: [UInt8] = [], blocks: [Int] = [], unitStarts: [Int] = []
        swap(&scratch, &gather.scratch)
        swap(&blocks, &gather.blocks)
        swap(&unitStarts, &gather.unitStarts)
        let pieces = gather.pieces, gathered = gather.gathered, directUnits = gather.directUnits, escapedUnits = gather.escapedUnits
        let side = gather.side

        // The unescaped units follow the PES payloads, their blocks after all others.
        let sideBase = scratch.count
        scratch.append(contentsOf: side)
        for unit in escapedUnits {
            unitStarts.append(blocks.count)
            H264SampleEncryption.appendEncryptedBlockOffsets(length: unit.raw.count, from: sideBase + unit.raw.lowerBound, to: &blocks)
        }

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

        // A unit decrypted in place that now needs emulation prevention where decryption changed
        // bytes grows; an unescaped one is escaped again, in place when its length is the same.
        var replacements: [Replacement] = []
        scratch.withUnsafeBufferPointer { es in
            for unit in directUnits {
                let escapes = (unit.firstBlock ..< unit.firstBlock + unit.blockCount).contains { block in
                    let offset = blocks[block]
                    let positions = max(unit.unit.lowerBound + 2, offset) ..< min(unit.unit.upperBound, offset + 18)
                    return NALScanner.needsEscaping(es, unit.unit, positions: positions)
                }
                if escapes {
                    replacements.append(Replacement(pes: unit.pes, unit: unit.unit,
                                                    bytes: H264SampleEncryption.escape(UnsafeBufferPointer(rebasing: es[unit.unit]))))
                }
            }
        }
        for unit in escapedUnits {
            let raw = sideBase + unit.raw.lowerBound ..< sideBase + unit.raw.upperBound
            let escaped = scratch.withUnsafeBufferPointer { H264SampleEncryption.escape(UnsafeBufferPointer(rebasing: $0[raw])) }
            if escaped.count == unit.unit.count {
                scratch.replaceSubrange(unit.unit, with: escaped)
            } else {
                replacements.append(Replacement(pes: unit.pes, unit: unit.unit, bytes: escaped))
            }
        }

        out.withUnsafeMutableBufferPointer { target in
            scratch.withUnsafeBufferPointer { source in
                for piece in pieces {
                    (target.baseAddress! + piece.segment).update(from: source.baseAddress! + piece.scratch, count: piece.length)
                }
            }
        }
        guard !replacements.isEmpty else { return out }

        // The PES packets whose length changed, laid out again; everything else as it is.
        var layout = PESUnit.Layout()
        var byPES: [Int: [Replacement]] = [:]
        for replacement in replacements { byPES[replacement.pes, default: []].append(replacement) }
        for (index, changes) in byPES {
            let pes = gathered[index]
            var bytes: [UInt8] = []
            bytes.reserveCapacity(pes.scratch.count + changes.reduce(0) { $0 + $1.bytes.count - $1.unit.count })
            var copied = pes.scratch.lowerBound
            for change in changes.sorted(by: { $0.unit.lowerBound < $1.unit.lowerBound }) {
                bytes.append(contentsOf: scratch[copied ..< change.unit.lowerBound])
                bytes.append(contentsOf: change.bytes)
                copied = change.unit.upperBound
            }
            bytes.append(contentsOf: scratch[copied ..< pes.scratch.upperBound])
            if pes.packetLength != 0 {
                let length = pes.packetLength + bytes.count - pes.scratch.count
                guard length <= 0xFFFF else { return nil }  // the general path says why
                bytes[4] = UInt8(length >> 8)
                bytes[5] = UInt8(length & 0xFF)
            }
            // The unit's packets on their own, numbered from 0 for `PESUnit.layout`.
            let indices = pieces[pes.pieces].map { $0.segment / size }
            let packets = try indices.map { index throws(SampleAESError) in try TransportPacket(out, index: index) }
            guard let local = try? PESUnit(packetIndices: Array(packets.indices)).layout(bytes, in: packets) else { return nil }
            for (position, replaced) in local.replaced { layout.replaced[indices[position]] = replaced }
            for position in local.dropped { layout.dropped.insert(indices[position]) }
            for (position, inserted) in local.inserted { layout.inserted[indices[position]] = inserted }
        }
        return layout.write(segment: out)
    }
}

/// H.264 Annex B scanning on a buffer, with `H264SampleEncryption.nalUnits`'s exact boundaries.
enum NALScanner {
    /// Whether any of the eight bytes of `word` is zero.
    @inline(__always)
    static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0
    }

    /// One NAL unit found by `units`: where it lies (header to end, start code excluded), and
    /// whether it may hold two zeros with another of its bytes after them (false: it holds
    /// none, so `needsEscaping` is false everywhere in it and most units need no second look).
    struct Unit: Equatable {
        var range: Range<Int>
        var hasZeroPair: Bool
    }

    /// The NAL units of `range` in `bytes`.
    static func units(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> [Unit] {
        var units: [Unit] = []
        var index = range.lowerBound
        var current: Int?
        var zeroPair = false
        let end = range.upperBound
        let base = bytes.baseAddress!
        while index + 2 < end {
            // Sixteen, else eight bytes without a zero: no start code (nor zero pair) begins among them.
            if index + 18 < end {
                let first = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                let second = UnsafeRawPointer(base + index + 8).loadUnaligned(as: UInt64.self)
                if !hasZeroByte(first), !hasZeroByte(second) {
                    index += 16
                    continue
                }
            }
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
                    if let start = current, start < index { units.append(Unit(range: start ..< index, hasZeroPair: zeroPair)) }
                    current = index + codeLength
                    zeroPair = false
                    index += codeLength
                    continue
                }
                zeroPair = true
            }
            index += 1
        }
        if let start = current, start < end { units.append(Unit(range: start ..< end, hasZeroPair: zeroPair)) }
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
