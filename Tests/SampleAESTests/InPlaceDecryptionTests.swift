import Foundation
import Testing
@testable import SampleAES

@Suite("In-place SAMPLE-AES decryption: the general path's bytes, faster")
struct InPlaceDecryptionTests {
    static func general(_ segment: [UInt8], key: [UInt8] = Fixtures.key) -> Result<[UInt8], SampleAESError> {
        Result { () throws(SampleAESError) in
            try SegmentTransformer(cipher: PatternCipher(key: key, iv: Fixtures.iv, direction: .decrypt)).transform(segment)
        }
    }

    static func inPlace(_ segment: [UInt8], key: [UInt8] = Fixtures.key) -> Result<[UInt8]?, SampleAESError> {
        Result { () throws(SampleAESError) in try InPlaceDecryption.decrypt(segment, key: key, iv: Fixtures.iv) }
    }

    @Test("every fixture segment: the clear segment exactly, in place unless a NAL unit changes length")
    func fixtures() throws {
        var inPlace = 0
        for name in Fixtures.segments {
            let clear = try Fixtures.bytes(name)
            let encrypted = try SampleAES.encrypt(segment: clear, key: Fixtures.key, iv: Fixtures.iv)
            if let fast = try InPlaceDecryption.decrypt(encrypted, key: Fixtures.key, iv: Fixtures.iv) {
                inPlace += 1
                #expect(fast == clear, "\(name)")
            }
            #expect(try SampleAES.decrypt(segment: encrypted, key: Fixtures.key, iv: Fixtures.iv) == clear, "\(name)")
        }
        #expect(inPlace >= Fixtures.segments.count * 3 / 4, "\(inPlace) of \(Fixtures.segments.count) in place")
        // Clear segments (nothing to decrypt) come back unchanged.
        let clear = try Fixtures.bytes("video/416x234/seg_000.ts")
        #expect(try InPlaceDecryption.decrypt(clear, key: Fixtures.key, iv: Fixtures.iv) == clear)
    }

    @Test("a wrong key: the same garbage as the general path (or the general path), never a different answer")
    func wrongKey() throws {
        let wrong = [UInt8](repeating: 7, count: 16)
        for name in Fixtures.segments.prefix(12) {
            let encrypted = try SampleAES.encrypt(segment: try Fixtures.bytes(name), key: Fixtures.key, iv: Fixtures.iv)
            if case .success(let fast?) = Self.inPlace(encrypted, key: wrong) {
                #expect(Self.general(encrypted, key: wrong) == .success(fast), "\(name)")
            }
        }
    }

    @Test("damaged segments: where the in-place path answers, it is the general path's answer; where it throws, so does the general path")
    func damaged() throws {
        var generator = SystemRandomNumberGenerator()
        var answered = 0
        for name in ["video/640x360/seg_002.ts", "audio/fr/seg_004.ts"] {
            let encrypted = try SampleAES.encrypt(segment: try Fixtures.bytes(name), key: Fixtures.key, iv: Fixtures.iv)
            for _ in 0..<150 {
                var damaged = encrypted
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<damaged.count, using: &generator)
                    damaged[index] = UInt8.random(in: 0...255, using: &generator)
                }
                switch Self.inPlace(damaged) {
                case .success(let fast?):
                    answered += 1
                    #expect(Self.general(damaged) == .success(fast))
                case .success(nil):
                    break
                case .failure:
                    #expect(throws: SampleAESError.self) { try Self.general(damaged).get() }
                }
            }
        }
        #expect(answered > 100)
    }

    @Test("NAL unit boundaries are the general scanner's, on random bytes full of zeros")
    func scanner() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...3, using: &generator) }
            let expected = H264SampleEncryption.nalUnits(bytes).map { $0.start ..< $0.end }
            let found = bytes.withUnsafeBufferPointer { NALScanner.units($0, 0 ..< bytes.count) }
            #expect(found == expected, "\(bytes)")
            let escaping = bytes.withUnsafeBufferPointer { buffer in
                found.map { NALScanner.needsEscaping(buffer, $0, positions: $0) }
            }
            #expect(escaping == found.map { H264SampleEncryption.escape(Array(bytes[$0])) != Array(bytes[$0])
                || H264SampleEncryption.unescape(bytes[$0]) != Array(bytes[$0]) })
        }
    }
}

