/// SAMPLE-AES for H.264 in Annex B byte-stream form (Apple's spec, section 2.2): in NAL units
/// of type 1 (non-IDR slice) and 5 (IDR slice) longer than 48 bytes, after a 32-byte clear
/// lead, one 16-byte block in ten is encrypted (one encrypted, up to nine clear); a last
/// block of 16 bytes or fewer stays clear, so the final byte of a NAL unit is always clear.
/// CBC runs through the encrypted blocks of one NAL unit and restarts from the IV for each.
///
/// Offsets count in the NAL unit *without* emulation-prevention bytes: they are removed
/// before encryption and inserted again afterwards for the ciphertext, so the encrypted
/// unit can be longer or shorter than the clear one. Decryption removes them, decrypts and
/// inserts them again, which gives back the clear unit exactly when the encoder escaped it
/// canonically (every encoder does); `encrypt` checks that and refuses a unit it could not
/// restore.
package enum H264SampleEncryption {
    /// One NAL unit inside an access unit: `start` is its first byte (the header, after the
    /// start code), `end` one past its last.
    package struct NALUnit: Sendable, Equatable {
        package var start: Int
        package var end: Int
        package var type: UInt8
        package var length: Int { end - start }
    }

    /// NAL units of `bytes` split at 3- and 4-byte start codes, as ffmpeg's SAMPLE-AES
    /// decryptor does (so both sides agree on every boundary). Bytes before the first start
    /// code belong to no unit.
    package static func nalUnits(_ bytes: [UInt8]) -> [NALUnit] {
        var units: [NALUnit] = []
        var index = 0
        var current: Int?
        let count = bytes.count
        while index + 2 < count {
            if bytes[index] == 0, bytes[index + 1] == 0 {
                var codeLength = 0
                if bytes[index + 2] == 1 { codeLength = 3 }
                else if bytes[index + 2] == 0, index + 3 < count, bytes[index + 3] == 1 { codeLength = 4 }
                if codeLength > 0 {
                    if let start = current, start < index {
                        units.append(NALUnit(start: start, end: index, type: bytes[start] & 0x1F))
                    }
                    current = index + codeLength
                    index += codeLength
                    continue
                }
            }
            index += 1
        }
        if let start = current, start < count {
            units.append(NALUnit(start: start, end: count, type: bytes[start] & 0x1F))
        }
        return units
    }

    /// Whether a unit of `type` and escaped `length` is one SAMPLE-AES protects.
    package static func isProtected(type: UInt8, length: Int) -> Bool { (type == 1 || type == 5) && length > 48 }

    /// Offsets of the encrypted 16-byte blocks in an unescaped NAL unit of `length` bytes.
    package static func encryptedBlockOffsets(length: Int) -> [Int] {
        var offsets: [Int] = []
        appendEncryptedBlockOffsets(length: length, from: 0, to: &offsets)
        return offsets
    }

    /// Appends to `offsets` those of the encrypted blocks of an unescaped NAL unit of `length`
    /// bytes that starts at `base`.
    package static func appendEncryptedBlockOffsets(length: Int, from base: Int, to offsets: inout [Int]) {
        var position = base + 32
        var remaining = length - 32
        while remaining > 0 {
            if remaining > 16 {
                offsets.append(position)
                position += 16
                remaining -= 16
            }
            let clear = min(144, remaining)
            position += clear
            remaining -= clear
        }
    }

    /// Removes emulation-prevention bytes: the 0x03 of 00 00 03 when another byte follows
    /// (a final 00 00 03 is kept, as ffmpeg keeps it).
    package static func unescape(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        bytes.withUnsafeBufferPointer { input in
            [UInt8](unsafeUninitializedCapacity: input.count) { output, written in
                written = output.baseAddress.map { unescape(input, into: $0) } ?? 0
            }
        }
    }

    /// `unescape`, appending the result to `out`.
    package static func unescape(_ input: UnsafeBufferPointer<UInt8>, appendingTo out: inout [UInt8]) {
        let start = out.count
        // Grown with zeros first (an array's elements past its count cannot be written), then cut.
        out.append(contentsOf: repeatElement(0, count: input.count))
        let written = out.withUnsafeMutableBufferPointer { unescape(input, into: $0.baseAddress! + start) }
        out.removeLast(input.count - written)
    }

    /// Writes `input` without its emulation-prevention bytes to `target` (room for
    /// `input.count` bytes); returns how many it wrote.
    private static func unescape(_ input: UnsafeBufferPointer<UInt8>, into target: UnsafeMutablePointer<UInt8>) -> Int {
        guard let source = input.baseAddress else { return 0 }
        let end = input.count
        var index = 0, copied = 0, length = 0
        while index < end {
            // Eight bytes without a zero: no 00 00 03 begins among them.
            if index + 8 <= end, !NALScanner.hasZeroByte(UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self)) {
                index += 8
                continue
            }
            if end - index > 3, source[index] == 0, source[index + 1] == 0, source[index + 2] == 3 {
                (target + length).update(from: source + copied, count: index + 2 - copied)
                length += index + 2 - copied
                index += 3
                copied = index
            } else {
                index += 1
            }
        }
        (target + length).update(from: source + copied, count: end - copied)
        return length + end - copied
    }

    /// Inserts emulation-prevention bytes: 0x03 after two zeros when the next byte is 0…3,
    /// except before a final 0x03 (the mirror of `unescape`, so `unescape(escape(x)) == x`).
    package static func escape(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBufferPointer { escape($0) }
    }

    /// `escape` of the bytes `input` points at.
    package static func escape(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        // At most one byte inserted for every two of the input.
        [UInt8](unsafeUninitializedCapacity: input.count + input.count / 2 + 1) { output, written in
            guard let source = input.baseAddress, let target = output.baseAddress else { written = 0; return }
            let end = input.count
            var index = 0, copied = 0, length = 0, zeros = 0
            while index < end {
                // Eight bytes without a zero after a byte that is not one: nothing to insert there.
                if zeros == 0, index + 8 <= end,
                   !NALScanner.hasZeroByte(UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self)) {
                    index += 8
                    continue
                }
                let byte = source[index]
                if zeros >= 2, byte <= 3, !(byte == 3 && index == end - 1) {
                    (target + length).update(from: source + copied, count: index - copied)
                    length += index - copied
                    target[length] = 3
                    length += 1
                    copied = index
                    zeros = 0
                }
                zeros = byte == 0 ? zeros + 1 : 0
                index += 1
            }
            (target + length).update(from: source + copied, count: end - copied)
            written = length + end - copied
        }
    }

    /// Encrypts or decrypts every protected NAL unit of one access unit (a PES payload).
    package static func transform(_ accessUnit: ArraySlice<UInt8>, cipher: PatternCipher) throws(SampleAESError) -> [UInt8] {
        let bytes = Array(accessUnit)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 16)
        var copied = 0
        for unit in nalUnits(bytes) where isProtected(type: unit.type, length: unit.length) {
            var clear = unescape(bytes[unit.start ..< unit.end])
            guard clear.count > 48 else { continue }
            if cipher.direction == .encrypt, escape(clear) != Array(bytes[unit.start ..< unit.end]) {
                throw SampleAESError(.unsupportedLayout,
                                     "NAL unit at byte \(unit.start) is not canonically escaped; its encryption could not be undone exactly")
            }
            try cipher.apply(to: &clear, blocksAt: encryptedBlockOffsets(length: clear.count))
            out.append(contentsOf: bytes[copied ..< unit.start])
            out.append(contentsOf: escape(clear))
            copied = unit.end
        }
        out.append(contentsOf: bytes[copied...])
        return out
    }
}
