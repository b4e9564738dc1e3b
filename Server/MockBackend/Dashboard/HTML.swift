/// A piece of the dashboard's HTML. Literal text in a template is markup; every interpolated
/// `String` or number goes through `HTML.escape`, so data (a video's name, a request path, a
/// fault rule's id) can never become markup. Only another `HTML` value is inserted as is.
///
/// ```swift
/// let row: HTML = "<td class=\"name\">\(video.name)</td>"   // <script> in the name comes out as &lt;script&gt;
/// ```
struct HTML: ExpressibleByStringInterpolation, Sendable, Equatable {
    /// The markup.
    private(set) var text: String

    /// Markup written in the source (trusted).
    init(stringLiteral value: String) { text = value }

    /// Markup written in the source, with data interpolated (escaped).
    init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    /// Escapes `&`, `<`, `>`, `"` and `'`: safe in element content and in quoted attribute values.
    /// The one escaping function of the dashboard.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Builds markup from literals (as is) and data (escaped).
    struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + 16 * interpolationCount) }

        mutating func appendLiteral(_ literal: String) { text += literal }

        /// Data: escaped.
        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }

        /// A number, as text.
        mutating func appendInterpolation(_ value: Int) { text += String(value) }

        /// Markup already built (its own data already escaped).
        mutating func appendInterpolation(_ fragment: HTML) { text += fragment.text }

        /// Pieces of markup one after another.
        mutating func appendInterpolation(_ fragments: [HTML]) { for fragment in fragments { text += fragment.text } }
    }
}

