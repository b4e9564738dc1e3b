import ArgumentParser
import Foundation
import CurlTransfer
import OfflineSDK
import WireModels

/// The exit codes of `offline` (also in `offline --help` and docs/sdk.md).
enum ExitStatus {
    /// Something unexpected failed.
    static let failure: Int32 = 1
    /// The request was refused (unknown video or token, bad terms, a video already downloaded,
    /// not enough space, the storage folder in use, the Playback API or license server said no).
    static let refused: Int32 = 3
    /// A download ended with an error.
    static let downloadFailed: Int32 = 4
    /// Playback was refused (license expired, missing or edited, clock set back, files missing).
    static let playbackRefused: Int32 = 5
    /// Interrupted with Ctrl-C (downloads are paused, nothing is lost).
    static let interrupted: Int32 = 130

    static let help = """
        Exit status: 0 done; 1 unexpected failure; 3 request refused; 4 download failed; \
        5 playback refused; 130 interrupted (downloads paused); 64 bad command line.
        """
}

/// A failure the command has already put into words.
struct CommandFailure: Error {
    var status: Int32
    var message: String
    var hint: String?
    var details: [String: String] = [:]
}

/// Runs a command's body; turns what it throws into a sentence on standard error (or, with
/// `--json`, a JSON document on standard output) and the matching exit status.
func runCommand(json: Bool, refusal: Int32 = ExitStatus.refused, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        let failure = describe(error, refusal: refusal)
        if json {
            var document: [String: Any] = ["error": failure.message, "exit_status": failure.status]
            if let hint = failure.hint { document["hint"] = hint }
            for (key, value) in failure.details { document[key] = value }
            JSONOutput.print(document)
        } else {
            warn(Terminal.standard.styled("error:", .red) + " " + failure.message)
            if let hint = failure.hint { warn(hint) }
        }
        throw ExitCode(failure.status)
    }
}

/// Words and an exit status for an error of the SDK, the Playback API or the command line.
func describe(_ error: any Error, refusal: Int32) -> CommandFailure {
    switch error {
    case let failure as CommandFailure:
        return failure
    case let error as OfflineVideoError:
        var failure = CommandFailure(status: refusal, message: sentence(error.message), hint: hint(for: error),
                                     details: ["code": "\(error.code.rawValue)", "reason": error.reason.rawValue])
        switch error.code {
        case .expiredLicense, .invalidLicense: failure.status = ExitStatus.playbackRefused
        default: break
        }
        if error.reason == .filesMissing && refusal == ExitStatus.playbackRefused { failure.status = ExitStatus.playbackRefused }
        return failure
    case let error as PlaybackServiceError:
        if error.code == .transport, let transfer = error.underlying as? TransferError, transfer.code == .untrustedCertificate {
            return CommandFailure(status: refusal, message: sentence("The Playback API's HTTPS certificate is not trusted: \(transfer.message)"),
                                  hint: "Give the CA that signed it with --ca-file (OFFLINE_CA_FILE); mock-backend prints its own as `tls ca FILE`.")
        }
        if error.code == .transport {
            return CommandFailure(status: refusal, message: sentence("Cannot reach the Playback API: \(error.message)"),
                                  hint: "Is the backend running at the --base-url given (OFFLINE_BASE_URL)? `make serve` starts the mock.")
        }
        let detail = error.errors.first.map { "\($0.errorCode)\($0.errorSubcode.map { "/" + $0 } ?? ""): \($0.message ?? "")" } ?? error.message
        var hint: String?
        switch error.status {
        case 401: hint = "Check --policy-key (OFFLINE_POLICY_KEY) or --jwt."
        case 403: hint = "The key or token is not allowed this: a search needs a search-enabled policy key."
        case 404: hint = "Check the id (`offline search` lists an account's videos)."
        default: break
        }
        return CommandFailure(status: refusal, message: sentence("The Playback API answered \(error.status.map(String.init) ?? "?"): \(detail)"),
                              hint: hint, details: ["http_status": error.status.map(String.init) ?? ""])
    default:
        return CommandFailure(status: ExitStatus.failure, message: sentence("\(error)"), hint: nil)
    }
}

/// The next step for an SDK error, when there is an obvious one.
private func hint(for error: OfflineVideoError) -> String? {
    switch error.reason {
    case .unknownToken: "`offline list` shows the tokens (a unique prefix is enough)."
    case .alreadyDownloaded: "`offline list` shows it; `offline delete TOKEN` first to download it again."
    case .invalidLicenseParameters: "FairPlay videos need --purchase or --rental DURATION (e.g. --rental 48h --play-duration 6h)."
    case .notEligible: "Only videos with offline_enabled can be downloaded (`offline video ID` shows it)."
    case .hlseNotSupported: "AES-128 (HLSe) videos cannot be downloaded; choose a clear or FairPlay one."
    case .insufficientStorage: "Free some space, or lower --reserve-mb."
    case .licenseExpired: "Renew it: `offline renew TOKEN --purchase` or `--rental 48h`."
    case .license: error.code == .invalidLicense ? "Get a new license: `offline renew TOKEN --purchase` or `--rental 48h`." : nil
    case .filesMissing: "Delete it (`offline delete TOKEN`) and download it again."
    case .notDownloaded: "Download it first: `offline download VIDEO`."
    case .invalidState: "`offline status TOKEN` shows where it stands."
    case .network: "Check the network and that the backend is running; `offline resume` continues later."
    case .readOnly: "Another `offline` command owns the storage folder; wait for it or stop it."
    case .storageBusy: "Another process held the offline store too long; try again."
    case .storageReadOnly: "The storage folder cannot be written; give a writable one with --storage (OFFLINE_STORAGE)."
    case .storageCorrupt: "The offline store is damaged; give another storage folder with --storage (OFFLINE_STORAGE)."
    default: nil
    }
}

/// A message as a sentence: capitalised, ending with a full stop.
func sentence(_ text: String) -> String {
    var text = text.trimmingCharacters(in: .whitespacesAndNewlines)
    if let first = text.first, first.isLowercase { text = first.uppercased() + text.dropFirst() }
    if let last = text.last, !".!?".contains(last) { text += "." }
    return text
}

/// JSON documents and lines on standard output.
enum JSONOutput {
    static func print(_ document: Any) {
        guard JSONSerialization.isValidJSONObject(document),
              let data = try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]) else { return }
        say(String(decoding: data, as: UTF8.self))
    }
}
