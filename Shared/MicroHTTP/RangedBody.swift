/// A body of known length whose bytes are made for the range a request asks for: a file
/// assembled from parts kept elsewhere (a single-file CMAF track laid out from its segments),
/// too large to make whole for every request. The server applies ranges and conditionals to it
/// as to a file (`HTTPResponse+Conditional`), then asks it for the bytes of the range it sends.
///
/// ```swift
/// let body = RangedBody(length: layout.size) { lower, upper in .bytes(layout.bytes(lower ... upper)) }
/// return HTTPResponse(status: 200, headers: headers, body: .ranged(body))
/// ```
package final class RangedBody: Sendable {
    /// The whole length (sent as Content-Length when no range applies).
    package let length: UInt64
    private let make: @Sendable (_ lower: UInt64, _ upper: UInt64) -> HTTPResponse.Body

    /// A body of `length` bytes; `make` gives the bytes from `lower` to `upper` (inclusive, within
    /// the length) as bytes or, for a long range, a stream of exactly that many bytes.
    package init(length: UInt64, make: @escaping @Sendable (_ lower: UInt64, _ upper: UInt64) -> HTTPResponse.Body) {
        self.length = length
        self.make = make
    }

    /// The body of bytes `lower ... upper`.
    package func body(_ lower: UInt64, _ upper: UInt64) -> HTTPResponse.Body {
        guard lower <= upper, upper < length else { return .empty }
        return make(lower, upper)
    }

    /// The whole body.
    package var whole: HTTPResponse.Body { length == 0 ? .empty : body(0, length - 1) }

    /// The same body with `transform` applied to each range made (a fault that cuts or corrupts it).
    package func mapping(_ transform: @escaping @Sendable (HTTPResponse.Body) -> HTTPResponse.Body) -> RangedBody {
        RangedBody(length: length) { [make] lower, upper in transform(make(lower, upper)) }
    }
}

extension RangedBody: Equatable {
    /// Ranged bodies are equal only to themselves.
    package static func == (lhs: RangedBody, rhs: RangedBody) -> Bool { lhs === rhs }
}
