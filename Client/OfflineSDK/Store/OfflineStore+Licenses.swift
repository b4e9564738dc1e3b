import Foundation
import GRDB

/// Licenses on the device: first plays and their reports, the trusted-time mark, adopting an older SDK's store.
extension OfflineStore {
    /// Records the first play of `token` at `time` (seconds since 1970) and queues its report,
    /// in one transaction; false when a first play was already recorded.
    func recordFirstPlay(_ token: String, at time: Double, report: LicenseReport) throws -> Bool {
        try write { db in
            guard let before = try DownloadRecord.fetchOne(db, key: token), before.initialPlaybackAt == nil else { return false }
            var record = before
            record.initialPlaybackAt = time
            try save(record, before: before, db)
            var report = report
            try report.insert(db)
            return true
        }
    }

    func addReport(_ report: LicenseReport) throws {
        try write { db in
            var report = report
            try report.insert(db)
        }
    }

    /// Reports not yet sent, oldest first.
    func pendingReports() throws -> [LicenseReport] {
        try read { db in try LicenseReport.order(Column("id")).fetchAll(db) }
    }

    func removeReport(_ id: Int64) throws {
        _ = try write { db in try LicenseReport.deleteOne(db, key: id) }
    }

    func countReportAttempt(_ id: Int64) throws {
        try write { db in try db.execute(sql: "UPDATE license_report SET attempts = attempts + 1 WHERE id = ?", arguments: [id]) }
    }


    /// Raises this device's trusted-time mark to `time` (seconds since 1970; never lowers it)
    /// and returns the mark as it was, in one transaction: every wall time the SDK observes
    /// goes through here before any decision is taken on it. The mark is stamped by the device:
    /// an edited mark, or none while a license this device stamped is stored (the mark is
    /// raised before a license is stored), throws 69304 `recordAltered`, unless `signed`: a
    /// license server's signed issue time replaces a mark that cannot be trusted.
    @discardableResult
    func observeTime(_ time: Double, signed: Bool = false) throws -> Double? {
        guard let device else { throw OfflineVideoError(.invalidLicense, .deviceSecret, "The offline store was opened without the device secret") }
        return try write { db in
            var previous: Double?
            if let stored = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [device.markSetting]) {
                previous = device.openMark(stored)
                if previous == nil && !signed {
                    throw OfflineVideoError(.invalidLicense, .recordAltered,
                                            "The trusted-time mark in the offline store was edited: licensed playback is refused until a license is renewed")
                }
            } else if !signed, try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM download WHERE license_seal LIKE ?)",
                                                   arguments: [device.binding + ".%"]) == true {
                throw OfflineVideoError(.invalidLicense, .recordAltered,
                                        "The trusted-time mark was removed from the offline store: licensed playback is refused until a license is renewed")
            }
            if time.isFinite, previous.map({ time > $0 }) ?? true {
                try db.execute(sql: "INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)",
                               arguments: [device.markSetting, device.stampMark(time)])
            }
            return previous
        }
    }

    /// A store an SDK before device binding wrote kept its license key in the store
    /// (`device_key`): its licenses are sealed again with this device's key (`reseal` gets the
    /// sealed license and the old key; nil leaves it, to read as altered), every record is
    /// stamped, the trusted-time mark and the device id become this device's, and the old key
    /// is deleted, in one transaction; nothing to do on a store without `device_key`. A store
    /// copied to another machine before its first owner ran this SDK is adopted there too: the
    /// one case binding cannot catch.
    ///
    /// Only a store that was never stamped is adopted: one with a stamped record or a stamped mark
    /// (of any device) was written by this SDK, so legacy rows in it were planted (to lower the
    /// mark, say) and are deleted without effect.
    func adoptLegacyDeviceKey(reseal: (Data, Data) -> Data?) throws {
        guard let device else { return }
        try write { db in
            guard let legacyKey = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'device_key'") else { return }
            let stamped = try Bool.fetchOne(db, sql: """
                SELECT EXISTS(SELECT 1 FROM download WHERE license_seal IS NOT NULL)
                    OR EXISTS(SELECT 1 FROM setting WHERE name LIKE 'trusted_time.%')
                """) ?? false
            guard !stamped else {
                try db.execute(sql: "DELETE FROM setting WHERE name IN ('device_key', 'trusted_time', 'device_id')")
                return
            }
            for before in try DownloadRecord.fetchAll(db) {
                guard let sealed = before.license, let resealed = reseal(sealed, legacyKey) else { continue }
                var record = before
                record.license = resealed
                try save(record, before: before, freshLicense: true, db)  // a license that would not open stays unstamped
            }
            if let mark = try Data.fetchOne(db, sql: "SELECT value FROM setting WHERE name = 'trusted_time'")
                .flatMap({ Double(String(decoding: $0, as: UTF8.self)) }) {
                try db.execute(sql: "INSERT OR REPLACE INTO setting (name, value) VALUES (?, ?)", arguments: [device.markSetting, device.stampMark(mark)])
            }
            try db.execute(sql: "UPDATE OR IGNORE setting SET name = ? WHERE name = 'device_id'", arguments: [device.deviceIDSetting])
            try db.execute(sql: "DELETE FROM setting WHERE name IN ('device_key', 'trusted_time', 'device_id')")
        }
    }
}
