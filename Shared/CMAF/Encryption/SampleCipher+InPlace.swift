import Crypto
import _CryptoExtras
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The sample ciphers on a region of a larger buffer, in place: what the reader uses to
/// decrypt every sample of a segment where it lies in the segment's one output buffer,
/// without an array per sample. Same rules as the `inout [UInt8]` forms (which stay for the
/// encryptor and the tests): a cbcs chain per subsample restarted from the IV, the pattern
/// over each protected range's whole blocks; cenc one CTR keystream through the protected
/// ranges of the sample. `scratch` gathers the blocks of one chain (patterned or scattered
/// ranges); pass the same array from sample to sample so it is allocated once.
extension SampleCipher {
    /// `cbcs` on `sample` in place: the pattern over each subsample's protected range, or over
    /// the whole sample when `subsamples` is nil (0:0 then being "whole-block full sample",
    /// the audio rule). `iv` is 16 bytes; `subsamples` must add up to the sample's size.
    package func cbcs(in sample: UnsafeMutableRawBufferPointer, subsamples: [Subsample]?, iv: [UInt8], pattern: Pattern,
                      _ direction: Direction, scratch: inout [UInt8]) throws(CMAFError) {
        let cbcIV = try Self.cbcIV(iv)
        guard let subsamples else {
            return try cbc(sample, start: 0, length: sample.count, pattern: pattern, iv: cbcIV, direction, scratch: &scratch)
        }
        try Self.check(subsamples, cover: sample.count)
        var offset = 0
        for subsample in subsamples {
            offset += subsample.clear
            try cbc(sample, start: offset, length: subsample.protected, pattern: pattern, iv: cbcIV, direction, scratch: &scratch)
            offset += subsample.protected
        }
    }

    /// `cenc` on `sample` in place: one CTR keystream from `iv` (8 or 16 bytes) through the
    /// protected ranges, or over every byte when `subsamples` is nil.
    package func cenc(in sample: UnsafeMutableRawBufferPointer, subsamples: [Subsample]?, iv: [UInt8], scratch: inout [UInt8]) throws(CMAFError) {
        let counter = try Self.counterBlock(iv)
        guard let subsamples else {
            guard !sample.isEmpty else { return }
            let output = try ctr(UnsafeRawBufferPointer(sample), counter: counter)
            Self.scatter(output, into: sample) { place in place(0, sample.count) }
            return
        }
        try Self.check(subsamples, cover: sample.count)
        var ranges = 0
        var only = 0 ..< 0
        Self.forEachProtectedRange(subsamples) { start, length in
            ranges += 1
            only = start ..< start + length
        }
        guard ranges > 0 else { return }
        let output: Data
        if ranges == 1 {
            // One protected range (the usual slice): straight from the buffer, no gathering.
            output = try ctr(UnsafeRawBufferPointer(rebasing: sample[only]), counter: counter)
        } else {
            scratch.removeAll(keepingCapacity: true)
            Self.forEachProtectedRange(subsamples) { start, length in
                scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: sample[start ..< start + length]))
            }
            output = try ctr(scratch, counter: counter)
        }
        Self.scatter(output, into: sample) { place in Self.forEachProtectedRange(subsamples, place) }
    }

    /// One CBC chain over the pattern's blocks of `sample[start ..< start + length]`.
    private func cbc(_ sample: UnsafeMutableRawBufferPointer, start: Int, length: Int, pattern: Pattern, iv: AES._CBC.IV,
                     _ direction: Direction, scratch: inout [UInt8]) throws(CMAFError) {
        let blocks = length / 16
        guard blocks > 0 else { return }
        let contiguous = pattern.cryptBlocks == 0 || pattern.skipBlocks == 0 || blocks <= pattern.cryptBlocks
        let output: Data
        do {
            if contiguous {
                let input = UnsafeRawBufferPointer(rebasing: sample[start ..< start + blocks * 16])
                switch direction {
                case .encrypt: output = try AES._CBC.encrypt(input, using: key, iv: iv, noPadding: true)
                case .decrypt: output = try AES._CBC.decrypt(input, using: key, iv: iv, noPadding: true)
                }
            } else {
                scratch.removeAll(keepingCapacity: true)
                pattern.forEachRun(blocks: blocks) { first, count in
                    let from = start + first * 16
                    scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: sample[from ..< from + count * 16]))
                }
                switch direction {
                case .encrypt: output = try AES._CBC.encrypt(scratch, using: key, iv: iv, noPadding: true)
                case .decrypt: output = try AES._CBC.decrypt(scratch, using: key, iv: iv, noPadding: true)
                }
            }
        } catch {
            throw CMAFError(.cipherFailure, "AES-CBC failed: \(error)", underlying: error)
        }
        Self.scatter(output, into: sample) { place in
            if contiguous {
                place(start, blocks * 16)
            } else {
                pattern.forEachRun(blocks: blocks) { first, count in place(start + first * 16, count * 16) }
            }
        }
    }

    /// Copies `output` back into `sample` where `ranges` places it (`place(start, length)`
    /// for each piece, in the order they were gathered), never past either end.
    private static func scatter(_ output: Data, into sample: UnsafeMutableRawBufferPointer, _ ranges: ((Int, Int) -> Void) -> Void) {
        output.withUnsafeBytes { source in
            var read = 0
            ranges { start, length in
                guard read + length <= source.count else { return }
                UnsafeMutableRawBufferPointer(rebasing: sample[start ..< start + length])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[read ..< read + length]))
                read += length
            }
        }
    }
}
