/// A track played `passCount` times in a row (the catalog's long videos repeat their asset):
/// the fragments of one pass, and those of any later pass with times moved on by whole passes,
/// so timestamps keep increasing across repetitions as one long encode's would.
///
/// A pass lasts `passLength` ticks, the video's one-pass duration in this track's timescale,
/// the same for every track of the asset. An audio pass runs a little longer than the video's
/// (its frames do not end on the video's boundary): a sample of a pass before the last that
/// would end after the next pass begins is left out, so tracks never drift apart or overlap.
package struct RepeatedTrack: Sendable {
    package let pass: [Fragment]
    package let passLength: UInt64
    package let passCount: Int

    package init(pass: [Fragment], passLength: UInt64, passCount: Int) {
        self.pass = pass
        self.passLength = passLength
        self.passCount = max(1, passCount)
    }

    /// Fragments in all passes.
    package var count: Int { pass.count * passCount }

    /// The fragment at `index` over all passes (0 ..< count).
    package func fragment(_ index: Int) -> Fragment {
        var fragment = pass[index % pass.count]
        let kept = keptSamples(index)
        if kept < fragment.samples.count {
            let bytes = fragment.samples.prefix(kept).reduce(0) { $0 + Int($1.size) }
            fragment = Fragment(baseDecodeTime: fragment.baseDecodeTime, samples: Array(fragment.samples.prefix(kept)),
                                data: Array(fragment.data.prefix(bytes)))
        }
        fragment.baseDecodeTime += UInt64(index / pass.count) * passLength
        return fragment
    }

    /// Where fragment `index` starts (its `tfdt`), how long it lasts and when its first frame
    /// is presented, in ticks, without copying its bytes.
    package func timing(_ index: Int) -> (start: UInt64, duration: UInt64, earliestPresentation: UInt64) {
        let fragment = pass[index % pass.count]
        let shift = UInt64(index / pass.count) * passLength
        let duration = fragment.samples.prefix(keptSamples(index)).reduce(0) { $0 + UInt64($1.duration) }
        return (fragment.baseDecodeTime + shift, duration, fragment.earliestPresentationTime + shift)
    }

    /// How far fragment `index` reaches on the timeline: to where the next one starts (a pass's
    /// last fragment, short of its left-out sample, reaches the next pass), the last one its own
    /// duration. What playlists list (EXTINF, `S@d`), so every track's timeline adds up to the
    /// video's, as Apple's rule 8.3 asks, and a player summing durations never drifts.
    package func span(_ index: Int) -> UInt64 {
        let current = timing(index)
        guard index + 1 < count else { return current.duration }
        return timing(index + 1).earliestPresentation - current.earliestPresentation
    }

    /// How many samples of fragment `index` are served: all, but in a pass's last fragment
    /// before the last pass, those that end by the time the next pass begins.
    private func keptSamples(_ index: Int) -> Int {
        let fragment = pass[index % pass.count]
        guard index / pass.count < passCount - 1, index % pass.count == pass.count - 1 else { return fragment.samples.count }
        let end = (pass.first?.baseDecodeTime ?? 0) + passLength
        var time = fragment.baseDecodeTime
        var kept = 0
        for sample in fragment.samples {
            guard time + UInt64(sample.duration) <= end else { break }
            time += UInt64(sample.duration)
            kept += 1
        }
        return max(kept, 1)
    }
}
