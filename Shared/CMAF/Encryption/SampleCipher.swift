import Crypto
import _CryptoExtras
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Common Encryption (ISO/IEC 23001-7) of one sample in place, both ways, with one
/// AES-128 key:
/// - `cbcs` (10.4): AES-128-CBC without padding over the whole 16-byte blocks a crypt:skip
///   pattern picks in each subsample's protected range, chained through those blocks only
///   and restarted from the constant IV at every subsample; a trailing partial block stays
///   clear and an incomplete last pattern is followed until the range runs out. Audio uses
///   "whole-block full sample": every whole block of the sample in one chain, no subsamples.
/// - `cenc` (10.1): AES-128-CTR whose keystream runs on through all protected ranges of a
///   sample (it is not restarted per subsample); an 8-byte IV is the counter block's upper
///   half, the lower 64 bits counting blocks from 0. CTR is its own inverse.
///
/// Blocks are gathered into one buffer per chain, run through one cipher call and
/// scattered back, so a whole segment costs a handful of allocations per sample.
package struct SampleCipher: Sendable {
    /// Encrypt or decrypt (CBC only: CTR is the same both ways).
    package enum Direction: Sendable { case encrypt, decrypt }

    /// A `cbcs` pattern: of every crypt + skip blocks of a protected range, the first
    /// crypt are encrypted. 0:0 means every whole block (the audio rule).
    package struct Pattern: Sendable, Equatable {
        package let cryptBlocks: Int
        package let skipBlocks: Int

        /// 1:9, what `tenc` version 1 signals for NAL video (default_crypt_byte_block 1,
        /// default_skip_byte_block 9).
        package static let video = Pattern(checked: 1, 9)
        /// 0:0: every whole block.
        package static let wholeBlocks = Pattern(checked: 0, 0)

        /// A pattern of `crypt` encrypted then `skip` clear blocks. Both are 4-bit fields
        /// in `tenc`; a pattern with skipped blocks but none encrypted protects nothing and
        /// is refused.
        package init(crypt: Int, skip: Int) throws(CMAFError) {
            guard (0 ... 15).contains(crypt), (0 ... 15).contains(skip) else {
                throw CMAFError(.invalidPattern, "crypt:skip \(crypt):\(skip) does not fit two 4-bit fields")
            }
            guard crypt > 0 || skip == 0 else { throw CMAFError(.invalidPattern, "crypt:skip 0:\(skip) encrypts nothing") }
            self.init(checked: crypt, skip)
        }

        private init(checked crypt: Int, _ skip: Int) {
            cryptBlocks = crypt
            skipBlocks = skip
        }

        /// Calls `body(firstBlock, count)` for each run of encrypted blocks among the first
        /// `blocks` whole blocks of a range, in order.
        func forEachRun(blocks: Int, _ body: (Int, Int) -> Void) {
            guard blocks > 0 else { return }
            guard cryptBlocks > 0, skipBlocks > 0 else { return body(0, blocks) }
            var start = 0
            while start < blocks {
                body(start, min(cryptBlocks, blocks - start))
                start += cryptBlocks + skipBlocks
            }
        }
    }

    let key: SymmetricKey

    /// A cipher with the AES-128 `key` (16 bytes).
    package init(key: [UInt8]) throws(CMAFError) {
        guard key.count == 16 else { throw CMAFError(.invalidKey, "the key is \(key.count) bytes; AES-128 needs 16") }
        self.key = SymmetricKey(data: key)
    }

    // MARK: cbcs

    /// `cbcs` on a video sample: the pattern over each subsample's protected range, CBC
    /// restarted from `iv` (16 bytes, the constant IV) at every subsample. `subsamples` must
    /// add up to the sample's size.
    package func cbcs(_ sample: inout [UInt8], subsamples: [Subsample], iv: [UInt8], pattern: Pattern = .video,
                      _ direction: Direction) throws(CMAFError) {
        let cbcIV = try Self.cbcIV(iv)
        try Self.check(subsamples, cover: sample.count)
        var buffer: [UInt8] = []
        var offset = 0
        for subsample in subsamples {
            offset += subsample.clear
            try cbc(&sample, start: offset, length: subsample.protected, pattern: pattern, iv: cbcIV, direction, buffer: &buffer)
            offset += subsample.protected
        }
    }

    /// `cbcs` "whole-block full sample" (audio, `tenc` 0:0): every whole 16-byte block of
    /// the sample in one CBC chain from `iv`; the trailing bytes stay clear.
    package func cbcsFullSample(_ sample: inout [UInt8], iv: [UInt8], _ direction: Direction) throws(CMAFError) {
        let cbcIV = try Self.cbcIV(iv)
        var buffer: [UInt8] = []
        try cbc(&sample, start: 0, length: sample.count, pattern: .wholeBlocks, iv: cbcIV, direction, buffer: &buffer)
    }

    /// One CBC chain over the pattern's blocks of `sample[start ..< start + length]`.
    private func cbc(_ sample: inout [UInt8], start: Int, length: Int, pattern: Pattern, iv: AES._CBC.IV,
                     _ direction: Direction, buffer: inout [UInt8]) throws(CMAFError) {
        let blocks = length / 16
        guard blocks > 0 else { return }
        buffer.removeAll(keepingCapacity: true)
        pattern.forEachRun(blocks: blocks) { first, count in
            let from = start + first * 16
            buffer.append(contentsOf: sample[from ..< from + count * 16])
        }
        let output: Data
        do {
            switch direction {
            case .encrypt: output = try AES._CBC.encrypt(buffer, using: key, iv: iv, noPadding: true)
            case .decrypt: output = try AES._CBC.decrypt(buffer, using: key, iv: iv, noPadding: true)
            }
        } catch {
            throw CMAFError(.cipherFailure, "AES-CBC failed: \(error)", underlying: error)
        }
        guard output.count == buffer.count else {
            throw CMAFError(.cipherFailure, "AES-CBC returned \(output.count) bytes for \(buffer.count)")
        }
        Self.scatter(output, into: &sample) { place in
            pattern.forEachRun(blocks: blocks) { first, count in place(start + first * 16, count * 16) }
        }
    }

    // MARK: cenc

    /// `cenc` on a sample with subsamples: one CTR keystream from `iv` (8 or 16 bytes) run
    /// through the protected ranges in order. `subsamples` must add up to the sample's size.
    package func cenc(_ sample: inout [UInt8], subsamples: [Subsample], iv: [UInt8]) throws(CMAFError) {
        let counter = try Self.counterBlock(iv)
        try Self.check(subsamples, cover: sample.count)
        let protectedTotal = subsamples.reduce(0) { $0 + $1.protected }
        guard protectedTotal > 0 else { return }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(protectedTotal)
        Self.forEachProtectedRange(subsamples) { start, length in buffer.append(contentsOf: sample[start ..< start + length]) }
        let output = try ctr(buffer, counter: counter)
        Self.scatter(output, into: &sample) { place in Self.forEachProtectedRange(subsamples, place) }
    }

    /// `cenc` on a whole sample (audio, or video without subsamples): CTR from `iv` over
    /// every byte.
    package func cencFullSample(_ sample: inout [UInt8], iv: [UInt8]) throws(CMAFError) {
        let counter = try Self.counterBlock(iv)
        guard !sample.isEmpty else { return }
        let output = try ctr(sample, counter: counter)
        let count = sample.count
        Self.scatter(output, into: &sample) { place in place(0, count) }
    }

    /// AES-128-CTR of `input` from the counter block `counter`, the block counter being its
    /// lower 64 bits (a 16-byte IV whose lower half would overflow wraps there, the upper
    /// half untouched, as FFmpeg's CENC decryptor counts).
    func ctr<Input: DataProtocol>(_ input: Input, counter: [UInt8]) throws(CMAFError) -> Data where Input.Index == Int {
        let low = counter[8 ..< 16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let blocksBeforeWrap = (UInt64.max - low) &+ 1  // 0 means 2^64: no wrap possible
        let splitAt = blocksBeforeWrap == 0 || blocksBeforeWrap >= UInt64(input.count / 16 + 1) ? input.count : Int(blocksBeforeWrap) * 16
        let start = input.startIndex
        do {
            var output = try AES._CTR.encrypt(input[start ..< start + splitAt], using: key, nonce: AES._CTR.Nonce(nonceBytes: counter))
            if splitAt < input.count {
                let wrapped = Array(counter[0 ..< 8]) + [UInt8](repeating: 0, count: 8)
                output += try AES._CTR.encrypt(input[(start + splitAt)...], using: key, nonce: AES._CTR.Nonce(nonceBytes: wrapped))
            }
            return output
        } catch {
            throw CMAFError(.cipherFailure, "AES-CTR failed: \(error)", underlying: error)
        }
    }

    // MARK: helpers

    /// The 16-byte counter block an 8- or 16-byte `cenc` IV starts from.
    static func counterBlock(_ iv: [UInt8]) throws(CMAFError) -> [UInt8] {
        switch iv.count {
        case 8: return iv + [UInt8](repeating: 0, count: 8)
        case 16: return iv
        default: throw CMAFError(.invalidKey, "the IV is \(iv.count) bytes; cenc needs 8 or 16")
        }
    }

    /// The constant `cbcs` IV (16 bytes).
    static func cbcIV(_ iv: [UInt8]) throws(CMAFError) -> AES._CBC.IV {
        guard iv.count == 16 else { throw CMAFError(.invalidKey, "the IV is \(iv.count) bytes; cbcs needs 16") }
        do {
            return try AES._CBC.IV(ivBytes: iv)
        } catch {
            throw CMAFError(.invalidKey, "the IV is not usable: \(error)", underlying: error)
        }
    }

    /// Checks that `subsamples` (none negative) add up to `size`, as `senc` requires.
    static func check(_ subsamples: [Subsample], cover size: Int) throws(CMAFError) {
        var total = 0
        for (index, subsample) in subsamples.enumerated() {
            guard subsample.clear >= 0, subsample.protected >= 0 else {
                throw CMAFError(.malformedSample, "subsample \(index) has a negative size (\(subsample.clear), \(subsample.protected))")
            }
            total += subsample.clear + subsample.protected
        }
        guard total == size else {
            throw CMAFError(.malformedSample, "the subsamples cover \(total) bytes of a \(size)-byte sample")
        }
    }

    /// Calls `body(start, length)` for each non-empty protected range, in order.
    static func forEachProtectedRange(_ subsamples: [Subsample], _ body: (Int, Int) -> Void) {
        var offset = 0
        for subsample in subsamples {
            offset += subsample.clear
            if subsample.protected > 0 { body(offset, subsample.protected) }
            offset += subsample.protected
        }
    }

    /// Copies `output` back into `sample`, piece by piece where `ranges` places them
    /// (`place(start, length)` for each, in the order they were gathered).
    private static func scatter(_ output: Data, into sample: inout [UInt8], _ ranges: ((Int, Int) -> Void) -> Void) {
        output.withUnsafeBytes { source in
            sample.withUnsafeMutableBytes { target in
                var read = 0
                ranges { start, length in
                    UnsafeMutableRawBufferPointer(rebasing: target[start ..< start + length])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[read ..< read + length]))
                    read += length
                }
            }
        }
    }
}

/// The per-sample IVs of a `cenc` track with 8-byte IVs (CMAF 8.2.3.1): a starting value,
/// then one more per sample (big-endian, wrapping at 2^64), as Shaka Packager numbers them.
/// A decryptor must take each sample's IV from `senc`, never predict it.
package struct CENCIVSequence: Sendable, Equatable {
    /// The IV the next call to `next()` gives, as a number.
    package private(set) var current: UInt64

    /// A sequence starting at the 8 bytes `start`.
    package init(start: [UInt8]) throws(CMAFError) {
        guard start.count == 8 else { throw CMAFError(.invalidKey, "the starting IV is \(start.count) bytes; cenc's per-sample IVs are 8") }
        current = start.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// A sequence starting at `start`.
    package init(start: UInt64) { current = start }

    /// The IV of the next sample (8 bytes), then advances by one.
    package mutating func next() -> [UInt8] {
        defer { current &+= 1 }
        return (0 ..< 8).map { UInt8(truncatingIfNeeded: current >> (56 - 8 * UInt64($0))) }
    }
}
