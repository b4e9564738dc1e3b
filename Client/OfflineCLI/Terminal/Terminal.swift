import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the standard output is: a terminal (bars redrawn in place, colour unless NO_COLOR)
/// or a file or pipe (plain lines).
struct Terminal: Sendable {
    let isTTY: Bool
    let colour: Bool

    static let standard: Terminal = {
        let tty = isatty(STDOUT_FILENO) == 1
        let noColour = ProcessInfo.processInfo.environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        let dumb = ProcessInfo.processInfo.environment["TERM"] == "dumb"
        return Terminal(isTTY: tty, colour: tty && !noColour && !dumb)
    }()

    /// Columns of the terminal (80 when unknown).
    var width: Int {
        var size = winsize()
        guard isTTY, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    enum Style: String {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", blue = "34", cyan = "36"
    }

    /// `text` in `style` when colour is on, else as it is.
    func styled(_ text: String, _ style: Style) -> String {
        colour ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }
}

/// Writes to standard output and flushes at once, so a log file or a pipe sees each line as it happens.
func say(_ line: String) {
    print(line)
    fflush(nil)  // `stdout` itself is a C global Swift 6 will not touch
}

/// Writes a line to standard error.
func warn(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
