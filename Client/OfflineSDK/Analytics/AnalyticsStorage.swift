import Foundation

/// Where analytics events wait for their collector: the offline store's `+Analytics` concern,
/// as the analytics see it. A test gives `OfflineAnalytics` one of its own to fake a store
/// that refuses one step (as the server's per-concern store protocols let its tests do).
/// Every call may block: off the cooperative pool only.
protocol AnalyticsStorage: Sendable {
    /// Stores an event, then drops the oldest until all take at most `limit` bytes, in one
    /// transaction; returns how many were dropped.
    func addAnalyticsEvent(_ event: AnalyticsRecord, limit: Int) throws -> Int
    /// The collectors that have events waiting, the one with the oldest event first.
    func analyticsOrigins() throws -> [String]
    /// The oldest events waiting for `origin`: at most `count`, and no more than `bytes` bytes
    /// of JSON together (always at least one).
    func pendingAnalytics(origin: String, count: Int, bytes: Int) throws -> [AnalyticsRecord]
    /// How many events are waiting.
    func analyticsCount() throws -> Int
    /// Forgets events the collector accepted (or refused for good).
    func removeAnalytics(_ seqs: [Int64]) throws
    /// Counts a failed upload of the events.
    func countAnalyticsAttempt(_ seqs: [Int64]) throws
}

extension OfflineStore: AnalyticsStorage {}
