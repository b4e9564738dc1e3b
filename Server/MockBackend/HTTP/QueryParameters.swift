import MicroHTTP
import WireModels

/// Typed query parameters: the one place every route reads a number or a choice from the
/// query. A parameter that is absent takes its default; one that is present and does not
/// parse as its type (`limit=abc`, `limit=null`, `limit=`, out of range, not one of the
/// choices) is a 400 `BAD_REQUEST` with the error array, never silently the default.
extension HTTPRequest {
    /// The `limit` of an admin listing (licenses, analytics events): 1-10000, default 1000;
    /// anything else is a 400 `INVALID_LIMIT`.
    func listingLimit() throws(HTTPError) -> Int {
        try integerParameter("limit", in: 1...10_000, default: 1000, subcode: "INVALID_LIMIT")
    }

    /// A whole number in `range`, or `fallback` when the parameter is absent.
    func integerParameter(_ name: String, in range: ClosedRange<Int>, default fallback: Int,
                          subcode: String = QueryParameter.invalidSubcode) throws(HTTPError) -> Int {
        try integerParameter(name, in: range, subcode: subcode) ?? fallback
    }

    /// A whole number in `range`, or nil when the parameter is absent.
    func integerParameter(_ name: String, in range: ClosedRange<Int>,
                          subcode: String = QueryParameter.invalidSubcode) throws(HTTPError) -> Int? {
        guard let text = queryValue(name) else { return nil }
        // Digits only (an optional minus): `Int` would also take "+5".
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(text), range.contains(value) else {
            let upper = range.upperBound == Int.max ? "" : "\(range.upperBound)"
            throw QueryParameter.invalid(name, text, "an integer in \(range.lowerBound)...\(upper)", subcode: subcode)
        }
        return value
    }

    /// One of `choices`, or nil when the parameter is absent.
    func choiceParameter(_ name: String, _ choices: [String],
                         subcode: String = QueryParameter.invalidSubcode) throws(HTTPError) -> String? {
        guard let text = queryValue(name) else { return nil }
        guard choices.contains(text) else {
            throw QueryParameter.invalid(name, text, "one of \(choices.joined(separator: ", "))", subcode: subcode)
        }
        return text
    }
}

/// The refusal of a query parameter that does not parse.
enum QueryParameter {
    /// The subcode when a route names none of its own.
    static let invalidSubcode = "INVALID_PARAMETER"

    static func invalid(_ name: String, _ text: String, _ expected: String, subcode: String) -> HTTPError {
        HTTPError(400, PlaybackAPIErrorCode.badRequest, subcode, "\(name) must be \(expected), not '\(text)'")
    }
}
