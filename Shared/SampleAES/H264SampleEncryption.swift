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
        var position = 32
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
        return offsets
    }

    /// Removes emulation-prevention bytes: the 0x03 of 00 00 03 when another byte follows
    /// (a final 00 00 03 is kept, as ffmpeg keeps it).
    package static func unescape(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        let end = bytes.endIndex
        while index < end {
            if end - index > 3, bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 3 {
                out.append(0)
                out.append(0)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }

    /// Inserts emulation-prevention bytes: 0x03 after two zeros when the next byte is 0…3,
    /// except before a final 0x03 (the mirror of `unescape`, so `unescape(escape(x)) == x`).
    package static func escape(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 64)
        var zeros = 0
        for (index, byte) in bytes.enumerated() {
            if zeros >= 2, byte <= 3, !(byte == 3 && index == bytes.count - 1) {
                out.append(3)
                zeros = 0
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
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
