import Foundation

/// Why an offline-video operation failed. `code` is the reference's stable number (domain
/// "OfflineVideoManager" 693xx, license exchange 694xx); `reason` narrows it down for code
/// that wants to react (disk full, token expired, …) without parsing messages; `underlying`
/// keeps the error underneath.
///
/// A failure of the storage folder or the offline store (SQLite) gets its reason from what
/// happened and its code from what the SDK was doing; `underlying` is the database's or the
/// system's error:
///
/// | what happened | reason |
/// |---|---|
/// | the database stayed locked by another connection or process (SQLITE_BUSY, SQLITE_LOCKED) | `storageBusy` |
/// | the disk or quota is full (SQLITE_FULL, ENOSPC, EDQUOT) | `diskFull` |
/// | it cannot be written (SQLITE_READONLY, SQLITE_PERM, EROFS, EACCES, EPERM) | `storageReadOnly` |
/// | the database file is damaged or not a database (SQLITE_CORRUPT, SQLITE_NOTADB) | `storageCorrupt` |
/// | another manager runs the folder's downloads (`owner.lock` held) | `storageInUse` |
/// | anything else | `storage` |
///
/// | what the SDK was doing | code |
/// |---|---|
/// | opening the manager (the store, its locks, reading what the last run left) | `invalidParameter` (69300) |
/// | requesting, running or changing a download (pause, resume, cancel, delete, preload) | `downloadFailure` (69302) |
/// | a status query, a list, progress, playback, a license renewal, certificates | `storageFailure` (69305) |
/// | reading the device id or key of a license request | `contentKeyGenerationFailed` (69403) |
public struct OfflineVideoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reference's error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// A parameter or call was refused before any work (69300).
        public static let invalidParameter = Code(rawValue: 69300)
        /// The video or operation is not supported offline (69301).
        public static let unsupported = Code(rawValue: 69301)
        /// Fetching media failed (69302).
        public static let downloadFailure = Code(rawValue: 69302)
        /// The license has expired (69303).
        public static let expiredLicense = Code(rawValue: 69303)
        /// The license is missing, damaged or not for this video (69304).
        public static let invalidLicense = Code(rawValue: 69304)
        /// The offline store could not be read or written outside a download: a status query,
        /// a list, playback, a license report (69305). This SDK's own: the reference has no such code.
        public static let storageFailure = Code(rawValue: 69305)
        /// The FairPlay application certificate could not be fetched (69401).
        public static let applicationCertificateRequestFailed = Code(rawValue: 69401)
        /// The license server refused or could not be reached (69402).
        public static let contentKeyRequestFailed = Code(rawValue: 69402)
        /// The license request could not be built (69403).
        public static let contentKeyGenerationFailed = Code(rawValue: 69403)
        /// A protected rendition names no key request URL (69404).
        public static let noKeyRequestURLForRendition = Code(rawValue: 69404)

        public var description: String { "\(rawValue)" }
    }

    /// A finer cause, for code that reacts to what happened. Its `rawValue` is a stable
    /// string, persisted with failed downloads. A struct, not an enum: reasons are added over
    /// time, so compare with `==` or switch with a `default`. A string this SDK does not know
    /// (written by a newer one) is kept as it is.
    public struct Reason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The stable string.
        public let rawValue: String
        /// The reason with this string.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The video is not offline-enabled.
        public static let notEligible = Reason(rawValue: "not_eligible")
        /// AES-128 (HLSe) content cannot be downloaded.
        public static let hlseNotSupported = Reason(rawValue: "hlse_not_supported")
        /// The video is already downloaded or downloading.
        public static let alreadyDownloaded = Reason(rawValue: "already_downloaded")
        /// The license terms asked for are missing or wrong.
        public static let invalidLicenseParameters = Reason(rawValue: "invalid_license_parameters")
        /// The video has no HLS source.
        public static let noHLSSource = Reason(rawValue: "no_hls_source")
        /// A live or event stream (a media playlist without `EXT-X-ENDLIST`, or of type `EVENT`)
        /// cannot be downloaded: it would be stored as a truncated video.
        public static let liveNotSupported = Reason(rawValue: "live_not_supported")
        /// No offline video has the token.
        public static let unknownToken = Reason(rawValue: "unknown_token")
        /// The call does not apply to the download's state.
        public static let invalidState = Reason(rawValue: "invalid_state")
        /// A parameter was refused.
        public static let invalidParameter = Reason(rawValue: "invalid_parameter")
        /// The download would leave less free space than `minimumFreeSpace`.
        public static let insufficientStorage = Reason(rawValue: "insufficient_storage")
        /// The disk (or the quota) is full: media files or the offline store could not be written.
        public static let diskFull = Reason(rawValue: "disk_full")
        /// The network failed.
        public static let network = Reason(rawValue: "network")
        /// A server answered with an HTTP error (`httpStatus`).
        public static let http = Reason(rawValue: "http")
        /// The video's URLs expired and could not be renewed.
        public static let tokenExpired = Reason(rawValue: "token_expired")
        /// A playlist could not be read.
        public static let malformedPlaylist = Reason(rawValue: "malformed_playlist")
        /// No rendition matches what was asked for.
        public static let noMatchingRendition = Reason(rawValue: "no_matching_rendition")
        /// The download was cancelled.
        public static let cancelled = Reason(rawValue: "cancelled")
        /// Files of the package are missing.
        public static let filesMissing = Reason(rawValue: "files_missing")
        /// The storage folder or the offline store failed for another reason (`underlying` says which).
        public static let storage = Reason(rawValue: "storage")
        /// Another manager (in this or another process) runs the downloads of the storage folder.
        public static let storageInUse = Reason(rawValue: "storage_in_use")
        /// The offline store stayed locked by another connection or process longer than the
        /// store waits (SQLite busy or locked); trying again later may work.
        public static let storageBusy = Reason(rawValue: "storage_busy")
        /// The storage folder or the offline store cannot be written (read-only file system,
        /// no permission).
        public static let storageReadOnly = Reason(rawValue: "storage_read_only")
        /// The offline store's file is damaged or not a database.
        public static let storageCorrupt = Reason(rawValue: "storage_corrupt")
        /// The manager was opened as a reader and cannot change what is stored.
        public static let readOnly = Reason(rawValue: "read_only")
        /// The license is missing, damaged, or the license exchange failed.
        public static let license = Reason(rawValue: "license")
        /// The license has ended (rental end, or the play window after the first play).
        public static let licenseExpired = Reason(rawValue: "license_expired")
        /// The device clock stands behind the latest trusted time: licensed playback is refused.
        public static let clockRollback = Reason(rawValue: "clock_rollback")
        /// A stored value that decides a license's expiry (its terms, first play, the
        /// trusted-time mark) was edited outside the SDK: licensed playback is refused.
        public static let recordAltered = Reason(rawValue: "record_altered")
        /// The license was stored on another device (the storage folder was copied): renew it
        /// here with `renewFairPlayLicense`, as a lost one.
        public static let otherDevice = Reason(rawValue: "other_device")
        /// The device secret (`OfflineVideoManagerConfiguration.deviceSecretFile`) cannot be
        /// read or made, is damaged, or may be read by other users.
        public static let deviceSecret = Reason(rawValue: "device_secret")
        /// The license server revoked the license (403 `LICENSE_REVOKED`): the SDK forgot it;
        /// `renewFairPlayLicense` acquires a new one.
        public static let licenseRevoked = Reason(rawValue: "license_revoked")
        /// Nothing of the video is on disk to play (a preloaded license, a cancelled download).
        public static let notDownloaded = Reason(rawValue: "not_downloaded")
        /// A playback session was closed.
        public static let closed = Reason(rawValue: "closed")
        /// No persistent key has that key id (`LicenseFetcher`).
        public static let unknownKey = Reason(rawValue: "unknown_key")
        /// The content already holds a key that has not expired: renew it to change its terms.
        public static let keyAlreadyHeld = Reason(rawValue: "key_already_held")
        /// Anything else.
        public static let other = Reason(rawValue: "other")

        /// Decodes the string.
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        /// Encodes the string.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        /// The stable string.
        public var description: String { rawValue }
    }

    /// The stable number.
    public var code: Code
    /// The finer cause.
    public var reason: Reason
    /// A sentence for people.
    public var message: String
    /// The HTTP status behind it, when there was one.
    public var httpStatus: Int?
    /// The server's answer body, when it refused (device-limit errors reach the app this way).
    public var responseBody: [UInt8]?
    /// The error underneath, when there is one: the database's or the file system's for
    /// storage failures, the `PlaybackServiceError` or transfer error for network ones.
    /// Not compared by `==`.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The stable number.
    ///   - reason: The finer cause.
    ///   - message: A sentence for people.
    ///   - httpStatus: The HTTP status behind it; nil by default.
    ///   - responseBody: The server's answer body, when it refused; nil by default.
    ///   - underlying: The error underneath; nil by default.
    public init(_ code: Code, _ reason: Reason, _ message: String, httpStatus: Int? = nil, responseBody: [UInt8]? = nil,
                underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.reason = reason
        self.message = message
        self.httpStatus = httpStatus
        self.responseBody = responseBody
        self.underlying = underlying
    }

    /// Equal when code, reason, message, HTTP status and response body are; the underlying
    /// error is not compared.
    public static func == (lhs: OfflineVideoError, rhs: OfflineVideoError) -> Bool {
        lhs.code == rhs.code && lhs.reason == rhs.reason && lhs.message == rhs.message
            && lhs.httpStatus == rhs.httpStatus && lhs.responseBody == rhs.responseBody
    }

    public var description: String { "OfflineVideoManager error \(code.rawValue) (\(reason.rawValue)): \(message)" }
}
