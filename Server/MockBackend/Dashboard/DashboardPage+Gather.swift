import Foundation

extension MockBackendApp {
    /// What the dashboard shows now: read once from the same state the admin API lists.
    /// `formToken`: the session's, for every form.
    func dashboardPage(flash: DashboardSession.Flash?, formToken: String) -> DashboardPage {
        let now = clock.now()
        let catalog = self.catalog
        // Every video of the document (the one catalog), those without media yet too.
        let document = live.document
        let accounts = document.accounts.map { account in
            DashboardPage.Account(id: account.id, name: account.name, fairPlay: account.fairplay,
                                  videos: document.videos.filter { $0.accountID == account.id }.map { entry in
                let media = catalog.videos[entry.id]
                return DashboardPage.Video(id: entry.id, name: entry.name, protection: entry.protection.rawValue,
                                           thumbnail: media.map { Links.imagePath($0, width: 160, height: 90) }, referenceID: entry.referenceID,
                                           offlineEnabled: entry.offlineEnabled, lengthMilliseconds: media?.durationMilliseconds)
            })
        }
        var licenseList: [AdminLicense] = []
        var devices: [RegisteredDevice] = []
        var problem: String?
        var analyticsEvents = 0
        var ingestJobs: [IngestJob] = []
        do {
            ingestJobs = try store.recentIngestJobs(limit: 50)
            analyticsEvents = try tracker.trackerEventCount()
            licenseList = try licenses.licenses(LicenseFilter(), now: now, limit: 200).map { AdminLicense($0, now: now) }
            for account in accounts { devices += try licenses.registeredDevices(accountID: account.id, userID: nil) }
        } catch {
            problem = "\(error)"
        }
        return DashboardPage(now: now, offset: clock.offset, baseURL: baseURL, formToken: formToken,
                             flash: flash, accounts: accounts, licenses: licenseList,
                             videoNames: catalog.videos.mapValues(\.name), devices: devices, storageProblem: problem,
                             faultSeed: configuration.faultSeed, faults: faults.rules,
                             requests: requestLog.entries(limit: 100), requestLogCapacity: requestLog.capacity,
                             analyticsEvents: analyticsEvents, ingestJobs: ingestJobs)
    }
}
