/// Decrypts the samples of one segment where they lie in its output buffer. Reads records
/// and IVs from the input (never from the buffer being decrypted) and keeps one scratch
/// buffer and one subsample list for the whole segment.
struct SampleDecryptor {
    let input: [UInt8]
    let protection: ProtectedTrackInfo
    let cipher: SampleCipher
    private var scratch: [UInt8] = []
    private var subsamples: [Subsample] = []

    init(input: [UInt8], protection: ProtectedTrackInfo, cipher: SampleCipher) {
        self.input = input
        self.protection = protection
        self.cipher = cipher
    }

    /// Decrypts every protected sample of `plan`; each must lie in one of `media` (the
    /// `mdat` payloads, input indices).
    mutating func decrypt(_ plan: TrackFragmentPlan, media: [Range<Int>], into buffer: UnsafeMutableRawBufferPointer,
                          layout: BoxEdits.Layout) throws(CMAFError) {
        guard !plan.isClear, !plan.samples.isEmpty else { return }
        var patterns: [SampleCipher.Pattern?] = []
        for parameters in plan.parameters {
            patterns.append(parameters.isProtected && protection.scheme == .cbcs
                ? try SampleCipher.Pattern(crypt: parameters.cryptByteBlock, skip: parameters.skipByteBlock) : nil)
        }
        var container = 0 ..< 0
        for (index, range) in plan.samples.enumerated() {
            if !(container.lowerBound <= range.lowerBound && range.upperBound <= container.upperBound) {
                guard let found = media.first(where: { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }) else {
                    throw CMAFError(.malformedBox, "sample \(index) (\(range.count) bytes at offset \(range.lowerBound)) lies outside every 'mdat'")
                }
                container = found
            }
            let which = plan.sampleParameters?[index] ?? 0
            let parameters = plan.parameters[which]
            guard parameters.isProtected, !range.isEmpty else { continue }
            guard parameters.keyID == protection.keyID else {
                throw CMAFError(.invalidKey, "sample \(index) is encrypted under another key id than the track's")
            }
            let record = plan.records.isEmpty ? nil : plan.records[index]
            var iv: [UInt8]
            if parameters.perSampleIVSize > 0 {
                guard let record else {
                    throw CMAFError(.malformedBox, "sample \(index) needs a per-sample IV and the fragment has no 'senc' or 'saiz'/'saio'")
                }
                iv = Array(input[record.ivStart ..< record.ivStart + record.ivSize])
            } else {
                guard let constant = parameters.constantIV else { throw CMAFError(.malformedBox, "sample \(index) has neither a per-sample nor a constant IV") }
                iv = constant
            }
            var entries: [Subsample]?
            if let record, record.subsampleCount >= 0 {
                subsamples.removeAll(keepingCapacity: true)
                var at = record.subsampleStart
                for _ in 0 ..< record.subsampleCount {
                    let clear = Int(input[at]) << 8 | Int(input[at + 1])
                    let protected = Int(FieldReader.u32(input, at: at + 2))
                    subsamples.append(Subsample(clear: clear, protected: protected))
                    at += 6
                }
                entries = subsamples
            }
            let start = layout.position(range.lowerBound)
            let sample = UnsafeMutableRawBufferPointer(rebasing: buffer[start ..< start + range.count])
            do throws(CMAFError) {
                switch protection.scheme {
                case .cbcs:
                    // An 8-byte IV is the first half of the CBC IV, the rest zero (as FFmpeg reads it).
                    if iv.count == 8 { iv += [UInt8](repeating: 0, count: 8) }
                    try cipher.cbcs(in: sample, subsamples: entries, iv: iv, pattern: patterns[which] ?? .wholeBlocks, .decrypt, scratch: &scratch)
                case .cenc:
                    try cipher.cenc(in: sample, subsamples: entries, iv: iv, scratch: &scratch)
                }
            } catch {
                throw CMAFError(error.code, "sample \(index): \(error.message)", underlying: error.underlying)
            }
        }
    }
}
