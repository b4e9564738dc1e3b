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
    private let digest: (@Sendable (_ lower: UInt64, _ upper: UInt64) -> String?)?

    /// A body of `length` bytes; `make` gives the bytes from `lower` to `upper` (inclusive, within
    /// the length) as bytes or, for a long range, a stream of exactly that many bytes. `digest`,
    /// when given, gives the `Content-Digest` field value (RFC 9530) of the bytes `lower ... upper`
    /// should be: a `206` sends it, so a client can check the range it received, which the whole
    /// representation's `Repr-Digest` cannot tell it.
    package init(length: UInt64, make: @escaping @Sendable (_ lower: UInt64, _ upper: UInt64) -> HTTPResponse.Body,
                 digest: (@Sendable (_ lower: UInt64, _ upper: UInt64) -> String?)? = nil) {
        self.length = length
        self.make = make
        self.digest = digest
    }

    /// The `Content-Digest` field value of bytes `lower ... upper`, when the body has a digest.
    package func contentDigest(_ lower: UInt64, _ upper: UInt64) -> String? {
        guard lower <= upper, upper < length else { return nil }
        return digest?(lower, upper)
    }

    /// The body of bytes `lower ... upper`.
    package func body(_ lower: UInt64, _ upper: UInt64) -> HTTPResponse.Body {
        guard lower <= upper, upper < length else { return .empty }
        return make(lower, upper)
    }

    /// The whole body.
    package var whole: HTTPResponse.Body { length == 0 ? .empty : body(0, length - 1) }

    /// The same body with `transform` applied to each range made (a fault that cuts or corrupts
    /// it); its digests stay those of the bytes as they should be, so a client can tell.
    package func mapping(_ transform: @escaping @Sendable (HTTPResponse.Body) -> HTTPResponse.Body) -> RangedBody {
        RangedBody(length: length, make: { [make] lower, upper in transform(make(lower, upper)) }, digest: digest)
    }
}

extension RangedBody: Equatable {
    /// Ranged bodies are equal only to themselves.
    package static func == (lhs: RangedBody, rhs: RangedBody) -> Bool { lhs === rhs }
}
