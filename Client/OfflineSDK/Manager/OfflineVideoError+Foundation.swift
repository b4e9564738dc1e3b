public import Foundation

/// What an app shows and matches: `localizedDescription` is the message, `(error as NSError).code`
/// the reference's number (69300 …) in the domain `OfflineVideoError.errorDomain`, on Linux as on
/// Apple platforms. A ported alert (`error.localizedDescription`) and a ported expired-license
/// branch (`(error as NSError).code == 69303`) work unchanged.
extension OfflineVideoError: LocalizedError, CustomNSError {
    /// The domain of every `OfflineVideoError` (the reference's `kBCOVOfflineVideoManagerErrorDomain`
    /// has this role; the string is this SDK's own and never changes).
    public static let errorDomain = "OfflineSDK.OfflineVideoManager"

    /// The reference's number: `code.rawValue`.
    public var errorCode: Int { code.rawValue }

    /// The message and the recovery suggestion (written out: swift-corelibs-foundation reads
    /// them only from here), `reason` (its stable string), the HTTP status when there was one,
    /// and the underlying error.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message, OfflineVideoError.reasonUserInfoKey: reason.rawValue]
        if let recoverySuggestion { info[NSLocalizedRecoverySuggestionErrorKey] = recoverySuggestion }
        if let httpStatus { info[OfflineVideoError.httpStatusUserInfoKey] = httpStatus }
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return info
    }

    /// The key of `reason` in `errorUserInfo`.
    public static let reasonUserInfoKey = "OfflineSDKReason"
    /// The key of `httpStatus` in `errorUserInfo`.
    public static let httpStatusUserInfoKey = "OfflineSDKHTTPStatus"

    /// The message.
    public var errorDescription: String? { message }

    /// What to do next, where there is something to do; nil where the error is final (a video
    /// that is not offline-enabled) or the call was simply wrong.
    public var recoverySuggestion: String? {
        switch reason {
        case .licenseExpired:
            "Renew the license with renewFairPlayLicense; the video need not be downloaded again."
        case .license where code == .invalidLicense, .otherDevice, .licenseRevoked:
            "Acquire a new license with renewFairPlayLicense; the video need not be downloaded again."
        case .clockRollback:
            "Set the device's clock to the current time, then play again."
        case .insufficientStorage:
            "Free some space (or lower minimumFreeSpace), then request the download again."
        case .diskFull:
            "Free some space, then resume the download."
        case .network, .http:
            "Check the network connection, then try again (a failed download resumes with resumeVideoDownload)."
        case .tokenExpired:
            "Find the video again with PlaybackService and request the download again."
        case .alreadyDownloaded:
            "Delete the offline video (deleteOfflineVideo) to download it again."
        case .cancelled, .filesMissing, .notDownloaded:
            "Delete the offline video and request the download again."
        case .keyAlreadyHeld:
            "Renew the license to change its terms."
        case .storageBusy:
            "Try again in a moment: another connection or process holds the offline store."
        case .storageInUse:
            "Close the other manager of this storage folder, or open this one as a reader."
        case .storageReadOnly:
            "Make the storage folder writable."
        case .readOnly:
            "Make the change through the manager that owns the storage folder."
        case .deviceSecret:
            "Check the device secret file: readable by this user only (mode 0600)."
        default:
            nil
        }
    }
}
