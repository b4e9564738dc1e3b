/// SAMPLE-AES for AAC in ADTS (Apple's spec, section 2.3.2): in every frame the ADTS header
/// (7 bytes, or 9 with a CRC) and the next 16 bytes stay clear, then every whole 16-byte
/// block is encrypted and a trailing partial block stays clear. CBC runs through one frame
/// and restarts from the IV for the next, so lengths never change.
package enum ADTSSampleEncryption {
    /// One ADTS frame within a PES payload.
    package struct Frame: Sendable, Equatable {
        package var start: Int
        package var length: Int
        package var headerLength: Int
    }

    /// The frames of `bytes`, which must be whole ADTS frames back to back (as a muxer
    /// writes them into a PES packet).
    package static func frames(_ bytes: ArraySlice<UInt8>) throws(SampleAESError) -> [Frame] {
        var frames: [Frame] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            guard bytes.endIndex - index >= 7, bytes[index] == 0xFF, bytes[index + 1] & 0xF0 == 0xF0 else {
                throw SampleAESError(.malformedElementaryStream, "no ADTS sync word at byte \(index - bytes.startIndex) of an audio PES")
            }
            let headerLength = bytes[index + 1] & 0x01 != 0 ? 7 : 9
            let length = Int(bytes[index + 3] & 0x03) << 11 | Int(bytes[index + 4]) << 3 | Int(bytes[index + 5] >> 5)
            guard length >= headerLength, index + length <= bytes.endIndex else {
                throw SampleAESError(.malformedElementaryStream,
                                     "ADTS frame at byte \(index - bytes.startIndex) claims \(length) bytes; \(bytes.endIndex - index) are left")
            }
            frames.append(Frame(start: index - bytes.startIndex, length: length, headerLength: headerLength))
            index += length
        }
        return frames
    }

    /// Appends to `offsets` those of the encrypted blocks of `frame` when it starts at `base`.
    package static func appendEncryptedBlockOffsets(_ frame: Frame, from base: Int, to offsets: inout [Int]) {
        let first = frame.headerLength + 16
        guard frame.length > first else { return }
        for block in 0 ..< (frame.length - first) / 16 { offsets.append(base + first + block * 16) }
    }

    /// The 2-byte AudioSpecificConfig an ADTS header describes (object type, sampling
    /// frequency index, channel configuration), for the PMT's audio setup information.
    package static func audioSpecificConfig(header bytes: ArraySlice<UInt8>) -> [UInt8] {
        let b = Array(bytes.prefix(4))
        guard b.count == 4 else { return [] }
        let objectType = (b[2] >> 6) + 1
        let frequencyIndex = (b[2] >> 2) & 0x0F
        let channels = (b[2] & 0x01) << 2 | b[3] >> 6
        return [objectType << 3 | frequencyIndex >> 1, (frequencyIndex & 0x01) << 7 | channels << 3]
    }

    /// Encrypts or decrypts every frame of one PES payload.
    package static func transform(_ payload: ArraySlice<UInt8>, cipher: PatternCipher) throws(SampleAESError) -> [UInt8] {
        var out = Array(payload)
        for frame in try frames(payload) {
            var offsets: [Int] = []
            appendEncryptedBlockOffsets(frame, from: frame.start, to: &offsets)
            try cipher.apply(to: &out, blocksAt: offsets)
        }
        return out
    }
}
