import Crypto
import Foundation
import GRDB
import LicenseProtocol
@testable import MockBackend
@testable import OfflineSDK
import Testing
import TestKit

/// What the device enforces against its own user: a clock set back, the offline store edited,
/// the storage folder copied to another machine. Each test is a hole that was open before.
@Suite("Licenses a device cannot bend: trusted time, stamped records, a device-bound key, live")
struct DeviceSecurityTests {
    static let rentalVideo = "6415818918104"

    /// A configuration whose clock is the backend's, with its own device secret (and, when
    /// given, another machine id).
    static func configuration(_ server: MockBackendServer, _ format: PackageFormat = .transportStream, storage: URL, secret: URL,
                              machineID: URL? = nil) -> OfflineVideoManagerConfiguration {
        var configuration = OfflineVideoManagerConfiguration(storageDirectory: storage)
        format.configure(&configuration)
        configuration.minimumFreeSpace = 0
        configuration.retryInitialDelay = .milliseconds(20)
        configuration.clock = { server.app.clock.now() }
        configuration.deviceSecretFile = secret
        if let machineID { configuration.machineIDFiles = [machineID.path] }
        return configuration
    }

    /// A backend whose account packages CMAF in `format`'s addressing.
    static func withPackagingBackend(_ format: PackageFormat, _ body: (MockBackendServer) async throws -> Void) async throws {
        try await OfflineSDKTests.withBackend { server in
            try await format.prepare(server)
            try await body(server)
        }
    }

    static func service(_ server: MockBackendServer) -> PlaybackService {
        PlaybackService(baseURL: server.baseURL, accountID: Catalog.account, policyKey: Catalog.playKey)
    }

    /// Downloads `id` with `license` on a new manager; returns the manager (open) and the token.
    static func download(_ server: MockBackendServer, _ configuration: OfflineVideoManagerConfiguration, _ id: String,
                         _ license: RequestedLicense) async throws -> (OfflineVideoManager, OfflineVideoToken) {
        let manager = try await OfflineVideoManager(configuration: configuration)
        let events = EventRecorder(manager)
        let token = try await manager.requestVideoDownload(try await service(server).findVideo(id: id), mediaSelections: nil,
                                                           parameters: DownloadParameters(license: license))
        #expect(try await events.finished(token) == nil)
        let fragmented = try await manager.store.offPool { try $0.hasInitSegments(token) }
        #expect(fragmented == (configuration.sourcePreference == .prefer(.cmaf)), "downloaded in the format asked for")
        return (manager, token)
    }

    /// Why `token` does not open, or nil when it opens and its first video segment reads clear.
    static func refusal(_ manager: OfflineVideoManager, _ token: OfflineVideoToken) async -> OfflineVideoError? {
        let playback: OfflinePlayback
        do { playback = try await manager.openPlayback(token) } catch { return error }
        do {
            var segments = playback.segments(of: playback.tracks[0]).makeAsyncIterator()
            var first = try await segments.next()
            while first?.isInitSegment == true { first = try await segments.next() }  // a CMAF track's first media segment, decrypted
            #expect(first?.bytes.isEmpty == false)
            await playback.close()
            return nil
        } catch {
            await playback.close()
            Issue.record("opened, but its first segment does not read: \(error)")
            return error as? OfflineVideoError
        }
    }

    @Test("an open refused as expired moves the trusted time: with the clock set back from +7 h to +1 h the rental is refused as a rollback, not played",
          arguments: PackageFormat.allCases)
    func refusedOpenMovesTrustedTime(format: PackageFormat) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try await Self.withPackagingBackend(format) { server in
            let configuration = Self.configuration(server, format, storage: folder.url.appendingPathComponent("storage"),
                                                   secret: folder.url.appendingPathComponent("secret/device-secret"))
            let (manager, token) = try await Self.download(server, configuration, Self.rentalVideo, .rental(duration: 2 * 86400, playDuration: 6 * 3600))
            await (try await manager.openPlayback(token)).close()  // starts the 6-hour play window

            server.app.clock.offset += 7 * 3600
            let expired = await Self.refusal(manager, token)
            #expect(expired?.code == .expiredLicense && expired?.reason == .licenseExpired, "\(String(describing: expired))")
            server.app.clock.offset -= 6 * 3600
            let rollback = await Self.refusal(manager, token)
            #expect(rollback?.code == .invalidLicense && rollback?.reason == .clockRollback, "\(String(describing: rollback))")
            // A license query is an observation too: from +8 h, +7 h is behind the mark.
            server.app.clock.offset += 7 * 3600
            _ = try await manager.licenseInfo(token)
            server.app.clock.offset -= 3600
            #expect(await Self.refusal(manager, token)?.reason == .licenseExpired)
            server.app.clock.offset -= 6 * 3600
            #expect(await Self.refusal(manager, token)?.reason == .clockRollback)
            await manager.close()
        }
    }

    @Test("each stored value that decides an expiry, edited in offline.sqlite, refuses the open 69304 recordAltered; put back it plays; a renewal mends an edited mark",
          arguments: PackageFormat.allCases)
    func editedStoreValues(format: PackageFormat) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try await Self.withPackagingBackend(format) { server in
            let configuration = Self.configuration(server, format, storage: folder.url.appendingPathComponent("storage"),
                                                   secret: folder.url.appendingPathComponent("secret/device-secret"))
            let (manager, token) = try await Self.download(server, configuration, Self.rentalVideo, .rental(duration: 2 * 86400, playDuration: 6 * 3600))
            let events = EventRecorder(manager)
            let other = try await manager.requestVideoDownload(try await Self.service(server).findVideo(id: Catalog.fairPlayVideo),
                                                               mediaSelections: nil, parameters: DownloadParameters(license: .purchase))
            #expect(try await events.finished(other) == nil)
            await (try await manager.openPlayback(token)).close()  // a first play is recorded
            // Its report answered, the server's license (with the first play) stored: nothing else writes the record.
            #expect(try await eventually { try await manager.store.offPool { try $0.pendingReports() }.isEmpty })
            let pool = await manager.store.pool
            let otherSeal = try #require(try await manager.store.offPool { try $0.download(other) }?.licenseSeal)

            let edits: [(String, String, StatementArguments)] = [
                ("first play removed", "UPDATE download SET initial_playback_at = NULL WHERE token = ?", [token]),
                ("first play moved a day on", "UPDATE download SET initial_playback_at = initial_playback_at + 86400 WHERE token = ?", [token]),
                ("expiry moved a day on", "UPDATE download SET license_expires_at = license_expires_at + 86400 WHERE token = ?", [token]),
                ("terms replaced", "UPDATE download SET license_terms = CAST('{}' AS BLOB) WHERE token = ?", [token]),
                ("stamp removed", "UPDATE download SET license_seal = NULL WHERE token = ?", [token]),
                ("another record's stamp", "UPDATE download SET license_seal = ? WHERE token = ?", [otherSeal, token]),
            ]
            for (name, sql, arguments) in edits {
                let original = try #require(try await pool.read { db -> (Double?, Double?, Data?, String?)? in
                    try Row.fetchOne(db, sql: "SELECT * FROM download WHERE token = ?", arguments: [token]).map {
                        ($0["initial_playback_at"], $0["license_expires_at"], $0["license_terms"], $0["license_seal"])
                    }
                })
                try await pool.write { db in try db.execute(sql: sql, arguments: arguments) }
                let refused = await Self.refusal(manager, token)
                #expect(refused?.code == .invalidLicense && refused?.reason == .recordAltered, "\(name): \(String(describing: refused))")
                try await pool.write { db in
                    try db.execute(sql: """
                        UPDATE download SET initial_playback_at = ?, license_expires_at = ?, license_terms = ?, license_seal = ? WHERE token = ?
                        """, arguments: [original.0, original.1, original.2, original.3, token])
                }
                #expect(await Self.refusal(manager, token) == nil, "\(name): put back, it plays")
            }

            // The trusted-time mark: edited, or removed, refuses every licensed open (fail closed).
            let marks = try await pool.read { db -> [String: Data] in
                Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT name, value FROM setting WHERE name LIKE 'trusted_time.%'")
                    .map { ($0["name"] as String, $0["value"] as Data) })
            }
            let (markName, markValue) = try #require(marks.first)
            for (name, sql) in [("mark lowered", "UPDATE setting SET value = CAST('1000 00' AS BLOB) WHERE name = ?"),
                                ("mark garbled", "UPDATE setting SET value = X'00FF' WHERE name = ?"),
                                ("mark removed", "DELETE FROM setting WHERE name = ?")] {
                try await pool.write { db in try db.execute(sql: sql, arguments: [markName]) }
                let refused = await Self.refusal(manager, other)
                #expect(refused?.code == .invalidLicense && refused?.reason == .recordAltered, "\(name): \(String(describing: refused))")
                try await pool.write { db in try db.execute(sql: "INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)", arguments: [markName, markValue]) }
                #expect(await Self.refusal(manager, other) == nil, "\(name): put back, it plays")
            }
            // A renewal's signed issue time replaces a mark that cannot be trusted.
            try await pool.write { db in try db.execute(sql: "DELETE FROM setting WHERE name = ?", arguments: [markName]) }
            #expect(await Self.refusal(manager, other)?.reason == .recordAltered)
            _ = try await manager.renewFairPlayLicense(other, video: try await Self.service(server).findVideo(id: Catalog.fairPlayVideo),
                                                       parameters: DownloadParameters(license: .purchase))
            #expect(await Self.refusal(manager, other) == nil, "renewed, it plays")
            await manager.close()
        }
    }

    @Test("a first play removed while its report waits offline stays refused once the report's answer (the server's later first play) is stored: the answer does not vouch for the edit")
    func answerDoesNotLaunderAnEdit() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let network = ManualNetworkMonitor(path: .wifi)
        try await withBackend { server in
            var configuration = Self.configuration(server, storage: folder.url.appendingPathComponent("storage"),
                                                   secret: folder.url.appendingPathComponent("secret/device-secret"))
            configuration.network = network
            let (manager, token) = try await Self.download(server, configuration, Self.rentalVideo, .rental(duration: 2 * 86400, playDuration: 3600))
            network.currentPath = .none
            await (try await manager.openPlayback(token)).close()  // the first play, its report queued
            #expect(try await manager.store.offPool { try $0.pendingReports() }.count == 1)
            try await manager.store.pool.write { db in
                try db.execute(sql: "UPDATE download SET initial_playback_at = NULL WHERE token = ?", arguments: [token])
            }
            server.app.clock.offset += 1800  // the server will record its own, later, first play
            network.currentPath = .wifi
            #expect(try await eventually { try await manager.store.offPool { try $0.pendingReports() }.isEmpty })
            #expect(try await eventually { try await manager.store.offPool { try $0.download(token) }.flatMap(StoredLicense.terms)?.firstPlay != nil })
            let refused = await Self.refusal(manager, token)
            #expect(refused?.code == .invalidLicense && refused?.reason == .recordAltered, "\(String(describing: refused))")
            await manager.close()
        }
    }

    @Test("a storage folder copied to another machine (another machine id, or another device secret) refuses its licenses as otherDevice; renewed there it plays, and the original still does",
          arguments: PackageFormat.allCases)
    func copiedFolder(format: PackageFormat) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try await Self.withPackagingBackend(format) { server in
            let secret = folder.url.appendingPathComponent("secret/device-secret")
            let original = folder.url.appendingPathComponent("storage")
            let configuration = Self.configuration(server, format, storage: original, secret: secret)
            let (manager, token) = try await Self.download(server, configuration, Catalog.fairPlayVideo, .purchase)
            await manager.close()

            let machineID = folder.url.appendingPathComponent("machine-id")
            try Data("0123456789abcdef0123456789abcdef\n".utf8).write(to: machineID)
            let otherSecret = folder.url.appendingPathComponent("other/device-secret")
            for (name, copyConfiguration) in [
                ("another machine id, the same secret", { (copy: URL) in Self.configuration(server, format, storage: copy, secret: secret, machineID: machineID) }),
                ("this machine, another device secret", { (copy: URL) in Self.configuration(server, format, storage: copy, secret: otherSecret) }),
            ] {
                let copy = folder.url.appendingPathComponent("copy-\(UUID().uuidString.prefix(8))")
                try FileManager.default.copyItem(at: original, to: copy)
                let copied = try await OfflineVideoManager(configuration: copyConfiguration(copy))
                let refused = await Self.refusal(copied, token)
                #expect(refused?.code == .invalidLicense && refused?.reason == .otherDevice, "\(name): \(String(describing: refused))")
                #expect(refused?.message.contains("renewFairPlayLicense") == true)
                _ = try await copied.renewFairPlayLicense(token, video: try await Self.service(server).findVideo(id: Catalog.fairPlayVideo),
                                                          parameters: DownloadParameters(license: .purchase))
                #expect(await Self.refusal(copied, token) == nil, "\(name): renewed on this device, it plays")
                await copied.close()
            }
            let back = try await OfflineVideoManager(configuration: configuration)
            #expect(await Self.refusal(back, token) == nil, "the original folder still plays on its own device")
            await back.close()
        }
    }

    @Test("the device secret lives outside the store, 0600 in a 0700 folder; one others may read refuses licensed opens 69304 deviceSecret, clear ones still play")
    func secretFile() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try await withBackend { server in
            let secret = folder.url.appendingPathComponent("secret/device-secret")
            let configuration = Self.configuration(server, storage: folder.url.appendingPathComponent("storage"), secret: secret)
            let (manager, token) = try await Self.download(server, configuration, Catalog.fairPlayVideo, .purchase)
            let events = EventRecorder(manager)
            let clear = try await manager.requestVideoDownload(try await Self.service(server).findVideo(id: Catalog.clearVideo), mediaSelections: nil,
                                                               parameters: nil)
            #expect(try await events.finished(clear) == nil)
            await manager.close()
            let attributes = try FileManager.default.attributesOfItem(atPath: secret.path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600 && (attributes[.size] as? Int) == 32)
            let folderMode = try FileManager.default.attributesOfItem(atPath: secret.deletingLastPathComponent().path)[.posixPermissions] as? Int
            #expect(folderMode == 0o700)
            let settings = try await DatabaseQueue(path: folder.url.appendingPathComponent("storage/offline.sqlite").path).read { db in
                try String.fetchAll(db, sql: "SELECT name FROM setting")
            }
            #expect(!settings.contains("device_key"), "no key in the store: \(settings)")

            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: secret.path)
            let exposed = try await OfflineVideoManager(configuration: configuration)
            let refused = await Self.refusal(exposed, token)
            #expect(refused?.code == .invalidLicense && refused?.reason == .deviceSecret, "\(String(describing: refused))")
            #expect(refused?.message.contains("chmod 600") == true)
            #expect(await Self.refusal(exposed, clear) == nil, "a clear video needs no secret")
            await exposed.close()
        }
    }

    @Test("a store an SDK before device binding wrote (its key inside) is adopted by its first owner: licenses sealed again, stamped, the old key gone; it plays")
    func legacyStoreAdopted() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try await withBackend { server in
            let storage = folder.url.appendingPathComponent("storage")
            let configuration = Self.configuration(server, storage: storage, secret: folder.url.appendingPathComponent("secret/device-secret"))
            let (manager, token) = try await Self.download(server, configuration, Catalog.fairPlayVideo, .purchase)
            await manager.close()
            // Made as the SDK before device binding left it: the key in `setting`, the license
            // sealed with it, no stamps, the mark and the device id under their old names.
            let source = configuration.deviceSource
            let device = try await BlockingWork.run { try DeviceIdentity.load(source) }
            let legacy = SymmetricKey(size: .bits256)
            let database = try DatabaseQueue(path: storage.appendingPathComponent("offline.sqlite").path)
            try await database.write { db in
                let sealed = try #require(try Data.fetchOne(db, sql: "SELECT license FROM download WHERE token = ?", arguments: [token]))
                let license = try License(sealed: Array(sealed), deviceKey: device.licenseKey)
                try db.execute(sql: "UPDATE download SET license = ?, license_seal = NULL WHERE token = ?",
                               arguments: [Data(try license.sealed(deviceKey: legacy)), token])
                try db.execute(sql: "INSERT INTO setting (name, value) VALUES ('device_key', ?)", arguments: [legacy.withUnsafeBytes { Data($0) }])
                try db.execute(sql: "DELETE FROM setting WHERE name = ?", arguments: [device.markSetting])
                try db.execute(sql: "INSERT INTO setting (name, value) VALUES ('trusted_time', ?)", arguments: [Data(String(Date().timeIntervalSince1970 - 60).utf8)])
                try db.execute(sql: "UPDATE setting SET name = 'device_id' WHERE name = ?", arguments: [device.deviceIDSetting])
            }
            try database.close()

            let adopted = try await OfflineVideoManager(configuration: configuration)
            #expect(await Self.refusal(adopted, token) == nil, "adopted, it plays")
            let settings = try await adopted.store.pool.read { db in try String.fetchAll(db, sql: "SELECT name FROM setting ORDER BY name") }
            #expect(!settings.contains("device_key") && !settings.contains("trusted_time") && !settings.contains("device_id"), "\(settings)")
            #expect(settings.contains(device.markSetting) && settings.contains(device.deviceIDSetting), "\(settings)")
            await adopted.close()
        }
    }

    @Test("legacy rows planted in a stamped store (device_key and a trusted_time of 0, after a refused rollback) are not adopted: the mark stays, the expired rental stays refused, the planted rows are gone")
    func plantedLegacyRowsIgnored() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try await withBackend { server in
            let storage = folder.url.appendingPathComponent("storage")
            let configuration = Self.configuration(server, storage: storage, secret: folder.url.appendingPathComponent("secret/device-secret"))
            let (manager, token) = try await Self.download(server, configuration, Self.rentalVideo, .rental(duration: 2 * 86400, playDuration: 6 * 3600))
            #expect(await Self.refusal(manager, token) == nil)  // the first play starts the 6-hour window
            server.app.clock.offset += 7 * 3600
            #expect(await Self.refusal(manager, token)?.reason == .licenseExpired)
            server.app.clock.offset -= 6 * 3600
            #expect(await Self.refusal(manager, token)?.reason == .clockRollback)
            await manager.close()

            // What an SDK before device binding left, planted in this SDK's store with sqlite3.
            let database = try DatabaseQueue(path: storage.appendingPathComponent("offline.sqlite").path)
            try await database.write { db in
                try db.execute(sql: "INSERT INTO setting (name, value) VALUES ('device_key', X'00'), ('trusted_time', CAST('0' AS BLOB))")
            }
            try database.close()
            let reopened = try await OfflineVideoManager(configuration: configuration)
            let refused = await Self.refusal(reopened, token)
            #expect(refused?.code == .invalidLicense && refused?.reason == .clockRollback, "\(String(describing: refused))")
            let settings = try await reopened.store.pool.read { db in try String.fetchAll(db, sql: "SELECT name FROM setting") }
            #expect(!settings.contains("device_key") && !settings.contains("trusted_time"), "the planted rows are deleted: \(settings)")
            server.app.clock.offset += 6 * 3600
            #expect(await Self.refusal(reopened, token)?.reason == .licenseExpired, "expired, as before the rows were planted")
            await reopened.close()
        }
    }
}
