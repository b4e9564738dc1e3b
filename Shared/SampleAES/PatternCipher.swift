import Crypto
import _CryptoExtras
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// AES-128-CBC without padding over a set of 16-byte blocks scattered through a buffer.
/// SAMPLE-AES chains CBC only through the *encrypted* blocks of one protected unit (a NAL
/// unit, an ADTS frame), restarting from the IV for each unit: the blocks are gathered,
/// run through one CBC call, and scattered back in place.
package struct PatternCipher: Sendable {
    /// Encrypt or decrypt.
    package enum Direction: Sendable { case encrypt, decrypt }

    let key: SymmetricKey
    let iv: AES._CBC.IV
    let direction: Direction

    /// A cipher for `key` and `iv` (16 bytes each).
    package init(key: [UInt8], iv: [UInt8], direction: Direction) throws(SampleAESError) {
        guard key.count == 16 else { throw SampleAESError(.invalidKey, "the key is \(key.count) bytes; SAMPLE-AES needs 16") }
        guard iv.count == 16 else { throw SampleAESError(.invalidKey, "the IV is \(iv.count) bytes; SAMPLE-AES needs 16") }
        self.key = SymmetricKey(data: key)
        do {
            self.iv = try AES._CBC.IV(ivBytes: iv)
        } catch {
            throw SampleAESError(.invalidKey, "the IV is not usable: \(error)", underlying: error)
        }
        self.direction = direction
    }

    /// Transforms the 16-byte blocks starting at each of `offsets` (ascending, in bounds)
    /// in `bytes`, as one CBC chain starting from the IV.
    package func apply(to bytes: inout [UInt8], blocksAt offsets: [Int]) throws(SampleAESError) {
        guard !offsets.isEmpty else { return }
        var gathered: [UInt8] = []
        gathered.reserveCapacity(offsets.count * 16)
        for offset in offsets { gathered.append(contentsOf: bytes[offset ..< offset + 16]) }
        let output: Data
        do {
            switch direction {
            case .encrypt: output = try AES._CBC.encrypt(gathered, using: key, iv: iv, noPadding: true)
            case .decrypt: output = try AES._CBC.decrypt(gathered, using: key, iv: iv, noPadding: true)
            }
        } catch {
            throw SampleAESError(.cipherFailure, "AES-CBC failed: \(error)", underlying: error)
        }
        guard output.count == gathered.count else {
            throw SampleAESError(.cipherFailure, "AES-CBC returned \(output.count) bytes for \(gathered.count)")
        }
        let result = [UInt8](output)
        for (index, offset) in offsets.enumerated() {
            bytes.replaceSubrange(offset ..< offset + 16, with: result[index * 16 ..< index * 16 + 16])
        }
    }
}
