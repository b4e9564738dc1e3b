/// A rewrite of a buffer of boxes as byte ranges removed and fields patched, applied in one
/// copy. Sizes and offsets are patched from where things end up once every removal is known
/// (a container's new size, a data offset's new distance), so callers record what to remove
/// and which fields depend on it in any order and never recompute a layout by hand.
struct BoxEdits {
    /// What a patched field becomes.
    enum Value {
        /// A fixed value.
        case constant(UInt64)
        /// The box's size once the removals inside it are gone.
        case size(Box)
        /// The distance from one position of the input to another, once the removals between
        /// them are gone (a `trun` data offset, a `sidx` reference size, a base data offset from 0).
        case distance(from: Int, to: Int)
    }

    private struct Patch {
        var offset: Int
        var width: Int
        var signed: Bool
        /// The field's top bit is a flag (a `sidx` reference type): kept, the value gets the rest.
        var keepsTopBit = false
        var value: Value
    }

    private var removals: [Range<Int>] = []
    private var patches: [Patch] = []
    private var fixedDistances: [(from: Int, to: Int, what: String)] = []

    /// Nothing removed, nothing patched: the input stands as it is.
    var isEmpty: Bool { removals.isEmpty && patches.isEmpty }

    /// Leaves `range` (a whole box, never overlapping another removal) out of the output.
    mutating func remove(_ range: Range<Int>) {
        if !range.isEmpty { removals.append(range) }
    }

    /// Sets the size field of `box` to its size after the removals (a box whose size was 0,
    /// "to the end", keeps 0, which stays true).
    mutating func resize(_ box: Box) {
        guard !box.extendsToEnd else { return }
        if box.hasLargeSize {
            patches.append(Patch(offset: box.start + 8, width: 8, signed: false, value: .size(box)))
        } else {
            patches.append(Patch(offset: box.start, width: 4, signed: false, value: .size(box)))
        }
    }

    /// Writes `value` (big-endian, `width` bytes) at `offset` of the input; with
    /// `keepingTopBit` the field's top bit stays as it was and the value fills the others.
    mutating func patch(at offset: Int, width: Int, signed: Bool = false, keepingTopBit: Bool = false, _ value: Value) {
        patches.append(Patch(offset: offset, width: width, signed: signed, keepsTopBit: keepingTopBit, value: value))
    }

    /// Requires the distance from `from` to `to` to survive the removals: what a field that
    /// is implied (a `trun` without a data offset) cannot be patched to follow.
    mutating func requireFixedDistance(from: Int, to: Int, _ what: String) {
        fixedDistances.append((from, to, what))
    }

    /// Where the input's positions land in the output.
    struct Layout {
        /// The removals, sorted, each with the bytes removed before it.
        fileprivate let removals: [Range<Int>]
        fileprivate let removedBefore: [Int]

        /// The output index of input index `position` (a removed byte maps to where its
        /// removal was).
        func position(_ position: Int) -> Int {
            var low = 0, high = removals.count
            while low < high {
                let middle = (low + high) / 2
                if removals[middle].lowerBound < position { low = middle + 1 } else { high = middle }
            }
            // removals[0 ..< low] start before `position`.
            guard low > 0 else { return position }
            let last = removals[low - 1]
            return position - removedBefore[low - 1] - min(last.count, position - last.lowerBound)
        }
    }

    /// The output: `bytes` without the removals, with every patch applied. Throws when a
    /// patched value does not fit its field or an implied distance changed.
    func apply(to bytes: [UInt8]) throws(CMAFError) -> (bytes: [UInt8], layout: Layout) {
        let sorted = removals.sorted { $0.lowerBound < $1.lowerBound }
        var before: [Int] = []
        before.reserveCapacity(sorted.count)
        var total = 0
        var previousEnd = 0
        for range in sorted {
            guard range.lowerBound >= previousEnd, range.upperBound <= bytes.count else {
                throw CMAFError(.malformedBox, "boxes to remove overlap at offset \(range.lowerBound)")
            }
            before.append(total)
            total += range.count
            previousEnd = range.upperBound
        }
        let layout = Layout(removals: sorted, removedBefore: before)
        for check in fixedDistances where layout.position(check.to) - layout.position(check.from) != check.to - check.from {
            throw CMAFError(.unsupportedStream, "\(check.what) is implied, so it cannot follow the boxes removed before it")
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count - total)
        var copied = 0
        for range in sorted {
            output.append(contentsOf: bytes[copied ..< range.lowerBound])
            copied = range.upperBound
        }
        output.append(contentsOf: bytes[copied...])
        for patch in patches {
            let value: Int64
            switch patch.value {
            case let .constant(constant):
                try Self.write(constant, width: patch.width, at: layout.position(patch.offset), in: &output)
                continue
            case let .size(box): value = Int64(layout.position(box.end) - layout.position(box.start))
            case let .distance(from, to): value = Int64(layout.position(to) - layout.position(from))
            }
            let bits = patch.width * 8 - (patch.keepsTopBit ? 1 : 0)
            let fits = patch.signed
                ? bits >= 64 || (value >= -(Int64(1) << (bits - 1)) && value < Int64(1) << (bits - 1))
                : value >= 0 && (bits >= 64 || value < Int64(1) << bits)
            guard fits else { throw CMAFError(.malformedBox, "the value \(value) does not fit the \(bits)-bit field at offset \(patch.offset)") }
            var field = UInt64(bitPattern: value)
            if patch.keepsTopBit, patch.offset < bytes.count, bytes[patch.offset] & 0x80 != 0 { field |= UInt64(1) << UInt64(bits) }
            try Self.write(field, width: patch.width, at: layout.position(patch.offset), in: &output)
        }
        return (output, layout)
    }

    /// Writes the low `width` bytes of `value`, big-endian, at `offset`.
    private static func write(_ value: UInt64, width: Int, at offset: Int, in output: inout [UInt8]) throws(CMAFError) {
        guard offset >= 0, offset + width <= output.count else {
            throw CMAFError(.malformedBox, "a field to patch at offset \(offset) lies outside the output")
        }
        for index in 0 ..< width {
            output[offset + index] = UInt8(truncatingIfNeeded: value >> UInt64(8 * (width - 1 - index)))
        }
    }
}
