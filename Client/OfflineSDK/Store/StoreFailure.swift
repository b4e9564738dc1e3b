import Foundation
import GRDB
import SQLiteSupport

/// What the SDK was doing with the storage folder or the offline store when it failed; it
/// picks the error's code (`OfflineVideoError` lists the mapping).
enum StoreOperation: Sendable {
    /// Opening the store and reading what the last run left (the manager's init): 69300.
    case open
    /// Requesting, running or changing a download (its plan, progress, state, end): 69302.
    case download
    /// Everything else: status queries, lists, progress, playback, license reports: 69305.
    case query
    /// Reading the device id or key a license request is made with: 69403.
    case licenseRequest

    var code: OfflineVideoError.Code {
        switch self {
        case .open: .invalidParameter
        case .download: .downloadFailure
        case .query: .storageFailure
        case .licenseRequest: .contentKeyGenerationFailed
        }
    }
}

extension OfflineVideoError {
    /// A failure of the storage folder or the offline store as an `OfflineVideoError`: the
    /// one place database and file-system errors are read. `OfflineVideoError`s pass through
    /// unchanged; anything else keeps `error` as `underlying`, gets the reason of what happened
    /// and the code of `operation`, and the message "`context`: what the system said"
    /// (a lock file's own sentence when the lock failed).
    static func storeFailure(_ error: any Error, during operation: StoreOperation, _ context: String) -> OfflineVideoError {
        if let error = error as? OfflineVideoError { return error }
        let message = error is LockFileError ? "\(error)" : "\(context): \(OfflineVideoError.systemReason(of: error))"
        return OfflineVideoError(operation.code, storageReason(of: error), message, underlying: error)
    }

    /// `storeFailure` for a failed system call's `errno`.
    static func storeFailure(systemError code: Int32, during operation: StoreOperation, _ context: String) -> OfflineVideoError {
        storeFailure(POSIXErrorCode(rawValue: code).map { POSIXError($0) } ?? NSError(domain: NSPOSIXErrorDomain, code: Int(code)),
                     during: operation, context)
    }

    /// What a database or file-system error says happened.
    static func storageReason(of error: any Error) -> Reason {
        if let database = error as? DatabaseError {
            switch database.resultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED: return .storageBusy
            case .SQLITE_FULL: return .diskFull
            case .SQLITE_READONLY, .SQLITE_PERM: return .storageReadOnly
            case .SQLITE_CORRUPT, .SQLITE_NOTADB: return .storageCorrupt
            default: return .storage
            }
        }
        switch systemError(of: error) {
        case ENOSPC, EDQUOT: return .diskFull
        case EROFS, EACCES, EPERM: return .storageReadOnly
        default: return .storage
        }
    }

    /// A file system error in words: the system's reason (`No such file or directory`)
    /// rather than Foundation's wrapper around it; other errors as they describe themselves.
    static func systemReason(of error: any Error) -> String {
        if let code = systemError(of: error) { return String(cString: strerror(code)) }
        return "\(error)"
    }

    /// The `errno` behind a file-system error: a `POSIXError`, a Foundation error wrapping
    /// one, or a lock file's.
    static func systemError(of error: any Error) -> Int32? {
        if let lock = error as? LockFileError { return lock.systemError }
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain { return Int32(nsError.code) }
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? any Error {
            let posix = underlying as NSError
            if posix.domain == NSPOSIXErrorDomain { return Int32(posix.code) }
        }
        return nil
    }
}

/// Runs a store call, turning a database failure into a storage error with the code of
/// `operation` (a status query is not a download failure). The one way the manager and its
/// parts (licenses, playback, downloads) call the store.
@discardableResult
func storeCall<T>(_ operation: StoreOperation = .query, _ body: () throws -> T) throws(OfflineVideoError) -> T {
    do { return try body() } catch {
        throw OfflineVideoError.storeFailure(error, during: operation, "The offline store failed")
    }
}

extension OfflineStore {
    /// The record of `token`; `unknownToken` when there is none.
    func existingDownload(_ token: OfflineVideoToken) throws(OfflineVideoError) -> DownloadRecord {
        guard let record = try storeCall(.query, { try download(token) }) else {
            throw OfflineVideoError(.invalidParameter, .unknownToken, "No offline video has the token \(token)")
        }
        return record
    }
}
