import Foundation
import Locking
import WireModels

/// The catalog the backend serves: the catalog file, with the admin API's edits on top.
///
/// Edits (a video, playlist or account created, replaced or deleted) are kept in the store
/// (`catalog_edit`, one row per thing edited) and laid over the file at every start, so they
/// survive restarts and a changed file still shows wherever nobody edited. Each edit is
/// validated by building the whole catalog with it; one that would leave it invalid is
/// refused and changes nothing. Requests read an immutable snapshot: an edit swaps it whole.
final class LiveCatalog: Sendable {
    /// What requests read: the catalog and the content keys of its protected videos.
    struct Snapshot: Sendable {
        var catalog: Catalog
        var contentKeys: [String: ContentKey]
    }

    /// One thing edited, as stored: its new form, or nil for deleted.
    enum Edit: Sendable {
        case account(CatalogFile.Account)
        case video(id: String, CatalogFile.Video?)
        case playlist(id: String, CatalogFile.Playlist?)

        /// The subcode of a refusal of this edit.
        var invalidSubcode: String {
            switch self {
            case .account: "INVALID_ACCOUNT"
            case .video: "INVALID_VIDEO"
            case .playlist: "INVALID_PLAYLIST"
            }
        }
    }

    private let file: URL
    let assets: MediaAssets
    private let store: any CatalogEditStorage & SecretStorage & SharedStateStorage & StoreMaintenance
    private let defaultTTL: TimeInterval
    /// The document the snapshot was built from, and the snapshot; replaced together.
    private let state: Locked<(document: CatalogFile, snapshot: Snapshot)>
    /// Held across an edit (validate, store, swap), so edits apply one at a time while
    /// requests go on reading the current snapshot.
    private let editing = Locked<Void>(())
    /// Builds made so far (each edit is one more; see `CatalogVideo.generation`).
    private let generation: Locked<Int>

    /// Reads the file, lays the stored edits over it and builds the first snapshot. Throws
    /// when the result is not a valid catalog (say, the file lost an asset an edit uses; the
    /// message names `--reset`).
    init(file: URL, assets: MediaAssets, store: any CatalogEditStorage & SecretStorage & SharedStateStorage & StoreMaintenance, defaultManifestTokenTTL: TimeInterval, now: Date) throws(CatalogError) {
        self.file = file
        self.assets = assets
        self.store = store
        defaultTTL = defaultManifestTokenTTL
        var document = try CatalogFile.read(from: file)
        let edits: [Edit]
        do { edits = try store.catalogEdits() } catch {
            throw CatalogError(.storageFailed, "cannot read the catalog edits: \(error)", underlying: error)
        }
        for edit in edits { document.apply(edit) }
        let catalog: Catalog
        do throws(CatalogError) {
            catalog = try Catalog.build(document, assets: assets, defaultManifestTokenTTL: defaultManifestTokenTTL, generation: 1)
        } catch {
            guard !edits.isEmpty else { throw error }
            throw CatalogError(error.code, "\(error.message) (with the \(edits.count) edits stored in the data directory; mock-backend --reset forgets them)",
                               underlying: error.underlying)
        }
        state = Locked((document, try LiveCatalog.snapshot(catalog, previous: [:], store: store, now: now)))
        generation = Locked(1)
    }

    /// The catalog and keys as of now.
    var snapshot: Snapshot { state.withLock { $0.snapshot } }
    /// The document (file plus edits) in its admin form.
    var document: CatalogFile { state.withLock { $0.document } }

    /// Applies `edit` if the catalog stays valid with it, stores it, and swaps the snapshot.
    /// `make` reads the current document to build the edit (under the edit lock, so two edits
    /// never build on the same state).
    @discardableResult
    func edit(now: Date, _ make: (CatalogFile) throws(CatalogEditError) -> Edit) throws(CatalogEditError) -> Edit {
        try editing.withLock { _ throws(CatalogEditError) -> Edit in
            let current = state.withLock { $0 }
            let edit = try make(current.document)
            var document = current.document
            document.apply(edit)
            let catalog: Catalog
            do throws(CatalogError) {
                catalog = try Catalog.build(document, assets: assets, defaultManifestTokenTTL: defaultTTL, generation: nextGeneration())
            } catch {
                throw CatalogEditError(.invalid, edit.invalidSubcode, error.message, underlying: error)
            }
            let snapshot: Snapshot
            do {
                snapshot = try LiveCatalog.snapshot(catalog, previous: current.snapshot.contentKeys, store: store, now: now)
                try store.storeCatalogEdit(edit)
                try store.publish(.catalog, value: nil)
            } catch {
                throw CatalogEditError(.storageFailed, "STORAGE_FAILED", "cannot store the edit: \(error)", underlying: error)
            }
            state.withLock { $0 = (document, snapshot) }
            return edit
        }
    }

    /// Forgets every edit, and with them (one transaction) every license, device, nonce and
    /// analytics event: the file's catalog again.
    func reset(now: Date) throws {
        try editing.withLock { _ in
            let document = try CatalogFile.read(from: file)
            let catalog = try Catalog.build(document, assets: assets, defaultManifestTokenTTL: defaultTTL, generation: nextGeneration())
            try store.forgetState()
            try store.publish(.catalog, value: nil)
            let snapshot = try LiveCatalog.snapshot(catalog, previous: state.withLock { $0.snapshot.contentKeys }, store: store, now: now)
            state.withLock { $0 = (document, snapshot) }
        }
    }

    /// Builds the catalog again from the file and the stored edits: another instance sharing
    /// the store edited it. Requests go on reading the old snapshot until the new one is in.
    func reload(now: Date) throws {
        try editing.withLock { _ in
            var document = try CatalogFile.read(from: file)
            for edit in try store.catalogEdits() { document.apply(edit) }
            let catalog = try Catalog.build(document, assets: assets, defaultManifestTokenTTL: defaultTTL, generation: nextGeneration())
            let snapshot = try LiveCatalog.snapshot(catalog, previous: state.withLock { $0.snapshot.contentKeys }, store: store, now: now)
            state.withLock { $0 = (document, snapshot) }
        }
    }

    /// A snapshot of `catalog`, with a content key for every protected video (kept from
    /// `previous`, else read or made in the database).
    private func nextGeneration() -> Int {
        generation.withLock { $0 += 1; return $0 }
    }

    private static func snapshot(_ catalog: Catalog, previous: [String: ContentKey], store: any SecretStorage,
                                 now: Date) throws(CatalogError) -> Snapshot {
        var keys: [String: ContentKey] = [:]
        for video in catalog.videos.values where video.protection != .clear {
            if let key = previous[video.id] {
                keys[video.id] = key
            } else {
                do { keys[video.id] = try store.contentKey(videoID: video.id, now: now) } catch {
                    throw CatalogError(.storageFailed, "cannot make the content key of video \(video.id): \(error)", underlying: error)
                }
            }
        }
        return Snapshot(catalog: catalog, contentKeys: keys)
    }
}

/// Why the admin API refused an edit: a stable `code` (it sets the status and the error
/// code), the subcode the admin API documents, a sentence, and the storage error underneath.
struct CatalogEditError: HTTPResponseError {
    var code: Code
    /// The `error_subcode`: `INVALID_BODY`, `ACCOUNT_NOT_FOUND`, …
    var subcode: String
    var message: String
    /// The database's error, for `.storageFailed`; the catalog's, for an edit it refused.
    var underlying: (any Error & Sendable)?

    init(_ code: Code, _ subcode: String, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.subcode = subcode
        self.message = message
        self.underlying = underlying
    }

    var status: Int { code.status }
    var apiError: APIError { APIError(errorCode: code.errorCode, errorSubcode: subcode, message: message) }

    /// The kinds of refusal.
    struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable { case invalid, notFound, conflict, storageFailed }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// 400 `BAD_REQUEST`: the body or the edit is not valid.
        static let invalid = Code(.invalid)
        /// 404 `NOT_FOUND`: no such account, item, license, device or rule.
        static let notFound = Code(.notFound)
        /// 409 `CONFLICT`: it exists already, or something still needs it.
        static let conflict = Code(.conflict)
        /// 500 `SERVER_ERROR`: the database failed.
        static let storageFailed = Code(.storageFailed)

        var status: Int {
            switch base {
            case .invalid: 400
            case .notFound: 404
            case .conflict: 409
            case .storageFailed: 500
            }
        }

        var errorCode: String {
            switch base {
            case .invalid: PlaybackAPIErrorCode.badRequest
            case .notFound: PlaybackAPIErrorCode.notFound
            case .conflict: "CONFLICT"
            case .storageFailed: PlaybackAPIErrorCode.serverError
            }
        }

        var description: String { base.rawValue }
    }
}

extension CatalogEditError {
    /// Runs a database call; a failure is a 500 `STORAGE_FAILED` saying what went wrong.
    static func storage<T>(_ call: () throws -> T) throws(CatalogEditError) -> T {
        do { return try call() } catch { throw CatalogEditError(.storageFailed, "STORAGE_FAILED", "\(error)", underlying: error) }
    }
}

extension CatalogFile {
    /// The document with `edit` laid over it: a thing replaced where it is, added at the end,
    /// or removed.
    mutating func apply(_ edit: LiveCatalog.Edit) {
        switch edit {
        case .account(let account):
            if let index = accounts.firstIndex(where: { $0.id == account.id }) { accounts[index] = account }
        case .video(let id, let video):
            CatalogFile.place(video, id: id, in: &videos, id: \.id)
        case .playlist(let id, let playlist):
            CatalogFile.place(playlist, id: id, in: &playlists, id: \.id)
        }
    }

    private static func place<T>(_ thing: T?, id: String, in list: inout [T], id key: KeyPath<T, String>) {
        let index = list.firstIndex { $0[keyPath: key] == id }
        switch (thing, index) {
        case (let thing?, let index?): list[index] = thing
        case (let thing?, nil): list.append(thing)
        case (nil, let index?): list.remove(at: index)
        case (nil, nil): break
        }
    }
}
