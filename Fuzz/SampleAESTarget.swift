import SampleAES

/// `sample-aes`: MPEG-TS segments (packets, PAT/PMT, PES, H.264 NAL units, ADTS frames) as the
/// SDK decrypts them from disk and the backend encrypts them from the media folder.
///
/// Decryption never traps; encryption never traps, and what it returns decrypts back to its
/// input (its documented promise), through the same `decrypt` the SDK calls (in place when it can).
enum SampleAESTarget {
    static let key: [UInt8] = Array(0..<16)
    static let iv: [UInt8] = Array(16..<32)

    static let target = FuzzTarget(name: "sample-aes") { buffer in
        let segment = Array(buffer)
        _ = try? SampleAES.decrypt(segment: segment, key: key, iv: iv)
        guard let encrypted = try? SampleAES.encrypt(segment: segment, key: key, iv: iv) else { return }
        let restored = Result { () throws(SampleAESError) in try SampleAES.decrypt(segment: encrypted, key: key, iv: iv) }
        switch restored {
        case .success(let clear):
            FuzzCheck.expect(clear == segment, "decrypt(encrypt(segment)) is not the segment")
        case .failure(let error):
            FuzzCheck.expect(false, "an encrypted segment does not decrypt: \(error)")
        }
    }
}
