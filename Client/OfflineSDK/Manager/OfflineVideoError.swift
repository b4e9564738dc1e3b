import Foundation

/// Why an offline-video operation failed. `code` is the reference's stable number (domain
/// "OfflineVideoManager" 693xx, license exchange 694xx); `reason` narrows it down for code
/// that wants to react (disk full, token expired, …) without parsing messages.
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

    /// Finer causes, stable strings (persisted with failed downloads).
    public enum Reason: String, Sendable, Codable, Equatable {
        case notEligible = "not_eligible"
        case hlseNotSupported = "hlse_not_supported"
        case alreadyDownloaded = "already_downloaded"
        case invalidLicenseParameters = "invalid_license_parameters"
        case noHLSSource = "no_hls_source"
        case unknownToken = "unknown_token"
        case invalidState = "invalid_state"
        case invalidParameter = "invalid_parameter"
        case insufficientStorage = "insufficient_storage"
        case diskFull = "disk_full"
        case network = "network"
        case http = "http"
        case tokenExpired = "token_expired"
        case malformedPlaylist = "malformed_playlist"
        case noMatchingRendition = "no_matching_rendition"
        case cancelled = "cancelled"
        case filesMissing = "files_missing"
        case storage = "storage"
        /// Another manager (in this or another process) runs the downloads of the storage folder.
        case storageInUse = "storage_in_use"
        /// The manager was opened as a reader and cannot change what is stored.
        case readOnly = "read_only"
        case license = "license"
        /// The license has ended (rental end, or the play window after the first play).
        case licenseExpired = "license_expired"
        /// The device clock stands behind the latest trusted time: licensed playback is refused.
        case clockRollback = "clock_rollback"
        /// The license server revoked the license (403 `LICENSE_REVOKED`): the SDK forgot it;
        /// `renewFairPlayLicense` acquires a new one.
        case licenseRevoked = "license_revoked"
        /// Nothing of the video is on disk to play (a preloaded license, a cancelled download).
        case notDownloaded = "not_downloaded"
        /// A playback session was closed.
        case closed = "closed"
        case other = "other"
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

    /// Creates an error.
    public init(_ code: Code, _ reason: Reason, _ message: String, httpStatus: Int? = nil, responseBody: [UInt8]? = nil) {
        self.code = code
        self.reason = reason
        self.message = message
        self.httpStatus = httpStatus
        self.responseBody = responseBody
    }

    public var description: String { "OfflineVideoManager error \(code.rawValue) (\(reason.rawValue)): \(message)" }
}
