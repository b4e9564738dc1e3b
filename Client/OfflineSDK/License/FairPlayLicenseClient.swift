import Crypto
import CurlTransfer
import Foundation
import LicenseProtocol
import Locking
import WireModels

/// The SDK's side of the license exchange (docs/license-protocol.md): application
/// certificates fetched once per URL and kept in the store, a stable device id, and the
/// SPC/CKC round trips for acquiring, renewing and releasing licenses.
///
/// The key that seals stored licenses comes from the device identity (`DeviceIdentity`: a
/// secret outside the store, bound to the machine); it stands in for a platform keychain. Only
/// the sealed license (CKC + wrapped client key) is ever written.
struct FairPlayLicenseClient: Sendable {
    var store: OfflineStore
    /// This device, or why it cannot be had (every license operation then fails with that).
    var device: Result<DeviceIdentity, OfflineVideoError>
    var client: HTTPClient
    var clock: @Sendable () -> Date
    /// How failed certificate and license requests are tried again (5xx, 429, 408, transport
    /// failures; `Retry-After` honoured).
    var retry = RetryPolicy()
    /// The app's hook on the two network steps (`OfflineVideoManager.authProxy`, first from
    /// `OfflineVideoManagerConfiguration.keyExchange`), read at each request: a hook set while
    /// the manager runs takes effect for the next request.
    let keyExchange: Locked<(any FairPlayKeyExchange)?>

    /// Sends a key-exchange request with the SDK's HTTP client.
    var send: KeyExchangeSender {
        { [client] request in
            // A POST carries an SPC, which the server takes once: never sent twice by curl itself.
            let response = try await client.send(HTTPClientRequest(url: request.url, method: .init(request.method), headers: request.headers,
                                                                   body: request.body.isEmpty ? nil : request.body,
                                                                   sendOnce: request.method == "POST"))
            return KeyExchangeResponse(status: response.status, headers: response.headers.fields.map { ($0.name, $0.value) }, body: response.body)
        }
    }

    /// This device's id for the license server (its device limit), made on first use and kept
    /// per device: a copied storage folder is a new device to the server.
    func deviceID() throws(OfflineVideoError) -> String {
        let setting = try device.get().deviceIDSetting
        do {
            let data = try store.setting(setting) { Data(UUID().uuidString.lowercased().utf8) }
            return String(decoding: data, as: UTF8.self)
        } catch {
            throw OfflineVideoError.storeFailure(error, during: .licenseRequest, "Cannot read the device id")
        }
    }

    /// The 256-bit key stored licenses are sealed with.
    func deviceKey() throws(OfflineVideoError) -> SymmetricKey {
        try device.get().licenseKey
    }

    /// The certificate for a video of `accountID` whose certificate URL is `url`: one fetched or
    /// added before under the URL, else one added for the account id, else one added under the
    /// default identifier (`addFairPlayApplicationCertificate`); else fetched now (through the
    /// key-exchange hook) and kept under the URL.
    func certificate(at url: String, accountID: String) async throws(OfflineVideoError) -> ApplicationCertificate {
        let store = self.store
        let kept = await BlockingWork.run { () -> ApplicationCertificate? in
            for identifier in [url, accountID, OfflineVideoManager.defaultFairPlayApplicationCertificateIdentifier] {
                guard let stored = try? store.certificate(identifier) else { continue }
                do { return try ApplicationCertificate(derEncoded: Array(stored)) } catch {
                    try? store.setCertificate(nil, identifier: identifier)  // damaged: look further, or fetch it again
                }
            }
            return nil
        }
        if let kept { return kept }
        let request = KeyExchangeRequest(purpose: .certificate, url: url, method: "GET", headers: [("Accept", "application/octet-stream")],
                                         accountID: accountID)
        let response = try await retry.retrying { _ -> Attempt<KeyExchangeResponse, OfflineVideoError> in
            let response: KeyExchangeResponse
            do {
                response = try await deliver(request)
            } catch {
                let failure = OfflineVideoError(.applicationCertificateRequestFailed, .network,
                                                "Cannot fetch the application certificate: \(Self.describe(error))", underlying: error)
                return Self.mayPass(error) ? .again(failure, retryAfter: nil) : .failed(failure)
            }
            guard response.status == 200 else {
                let failure = OfflineVideoError(.applicationCertificateRequestFailed, .http,
                                                "The application certificate request answered HTTP \(response.status)",
                                                httpStatus: response.status, responseBody: response.body)
                guard RetryPolicy.isRetryable(status: response.status) else { return .failed(failure) }
                return .again(failure, retryAfter: RetryPolicy.retryAfter(response.header("Retry-After")))
            }
            return .done(response)
        }
        let certificate: ApplicationCertificate
        do { certificate = try ApplicationCertificate(derEncoded: response.body) } catch {
            throw OfflineVideoError(.applicationCertificateRequestFailed, .license, "The application certificate is not valid: \(error)")
        }
        let body = Data(response.body)
        await BlockingWork.run { try? store.setCertificate(body, identifier: url) }
        return certificate
    }

    /// Acquires (`licenseID` nil) or renews an offline license with `terms`; returns the
    /// verified license sealed with the device key, as the store keeps it.
    func offlineLicense(_ terms: RequestedLicense, fairPlay: KeySystem, contentKeyID: String, accountID: String,
                        licenseID: String? = nil, authToken: String?) async throws(OfflineVideoError) -> StoredLicense {
        let profile: LicenseProfile
        switch terms.kind {
        case .purchase: profile = LicenseProfile(.purchase)
        case .rental:
            profile = LicenseProfile(.rental(absoluteExpiration: clock().addingTimeInterval(terms.rentalDuration ?? 0), playDuration: terms.playDuration))
        }
        let (request, answer) = try await exchange(licenseID == nil ? .acquire : .renew, fairPlay: fairPlay, contentKeyID: contentKeyID,
                                                   accountID: accountID, licenseID: licenseID, authToken: authToken,
                                                   headers: [("X-BOLT-OFFLINE-LICENSE", "true"), ("X-BC-CRT-CONFIG", profile.headerValue)])
        return try await store(request, answer)
    }

    /// Reports the first playback of a license; returns the license with the server's updated
    /// terms (its first play and shortened expiry), sealed as stored.
    func firstPlay(licenseID: String, fairPlay: KeySystem, contentKeyID: String, accountID: String,
                   authToken: String?) async throws(OfflineVideoError) -> StoredLicense {
        let (request, answer) = try await exchange(.firstPlay, fairPlay: fairPlay, contentKeyID: contentKeyID, accountID: accountID,
                                                   licenseID: licenseID, authToken: authToken, headers: [])
        return try await store(request, answer)
    }

    /// Verifies a CKC against its request and seals it for the store; its signed issue time
    /// raises the trusted-time mark first (so a stored license always has a mark beside it),
    /// and replaces a mark that was edited.
    private func store(_ request: PendingLicenseRequest, _ answer: [UInt8]) async throws(OfflineVideoError) -> StoredLicense {
        let license: License
        do { license = try request.open(answer) } catch {
            throw OfflineVideoError(.contentKeyRequestFailed, .license, "The license server's answer does not verify: \(error)")
        }
        let key = try deviceKey()
        let store = self.store, issued = license.terms.issuedAt.timeIntervalSince1970
        do { _ = try await BlockingWork.run { try store.observeTime(issued, signed: true) } } catch {
            throw OfflineVideoError.storeFailure(error, during: .licenseRequest, "Cannot record the license's issue time")
        }
        return try StoredLicense(license, deviceKey: key)
    }

    /// Gives a license back to the server (frees its device slot). 204 expected.
    func release(licenseID: String, fairPlay: KeySystem, contentKeyID: String, accountID: String,
                 authToken: String?) async throws(OfflineVideoError) {
        _ = try await exchange(.release, fairPlay: fairPlay, contentKeyID: contentKeyID, accountID: accountID,
                               licenseID: licenseID, authToken: authToken, headers: [])
    }

    private func exchange(_ kind: LicenseRequestKind, fairPlay: KeySystem, contentKeyID: String, accountID: String,
                          licenseID: String?, authToken: String?, headers extra: [(String, String)])
        async throws(OfflineVideoError) -> (PendingLicenseRequest, [UInt8]) {
        guard let keyURL = fairPlay.keyRequestURL, !keyURL.isEmpty else {
            throw OfflineVideoError(.noKeyRequestURLForRendition, .license, "The FairPlay source has no key_request_url")
        }
        guard let certificateURL = fairPlay.certificateURL, !certificateURL.isEmpty else {
            throw OfflineVideoError(.applicationCertificateRequestFailed, .license, "The FairPlay source has no certificate_url")
        }
        let certificate = try await certificate(at: certificateURL, accountID: accountID)
        var headers: [(String, String)] = [("Content-Type", "application/json"), ("Accept", "application/octet-stream")] + extra
        if let authToken { headers.append(("BCOV-Auth", authToken)) }
        // Every try of one acquisition carries the same key: a retry after an answer that was lost
        // on its way is given the license the lost answer held, so the server never holds two
        // for one download (docs/license-protocol.md, "Retries").
        if kind == .acquire { headers.append(("Idempotency-Key", UUID().uuidString.lowercased())) }
        let client = self
        let deviceID = try await BlockingWork.run { () throws(OfflineVideoError) in try client.deviceID() }
        return try await retry.retrying { attempt -> Attempt<(PendingLicenseRequest, [UInt8]), OfflineVideoError> in
            // A fresh SPC for every try: the server refuses one it has seen.
            let request: PendingLicenseRequest
            do {
                request = try LicenseClient.makeRequest(kind, certificate: certificate, accountID: accountID, contentKeyID: contentKeyID,
                                                        licenseID: licenseID, deviceID: deviceID, now: clock())
            } catch {
                return .failed(OfflineVideoError(.contentKeyGenerationFailed, .license, "Cannot build the license request: \(error)"))
            }
            let keyRequest = KeyExchangeRequest(purpose: Self.purpose(kind), url: keyURL, method: "POST", headers: headers, body: request.body(),
                                                accountID: accountID, contentKeyID: contentKeyID)
            let response: KeyExchangeResponse
            do {
                response = try await deliver(keyRequest)
            } catch {
                let failure = OfflineVideoError(.contentKeyRequestFailed, .network, "Cannot reach the license server: \(Self.describe(error))",
                                                underlying: error)
                return Self.mayPass(error) ? .again(failure, retryAfter: nil) : .failed(failure)
            }
            // Every answer's date raises the trusted-time mark, a refusal's too (never lowers it).
            if let date = response.header("Date").flatMap(HTTPDate.parse) {
                let store = self.store
                await BlockingWork.run { _ = try? store.observeTime(date.timeIntervalSince1970) }
            }
            // A release retried after its answer was lost finds the license released: done.
            if kind == .release, attempt > 1, response.status == 410 { return .done((request, [])) }
            do throws(OfflineVideoError) {
                return .done((request, try answer(response)))
            } catch {
                guard let status = error.httpStatus, RetryPolicy.isRetryable(status: status) else { return .failed(error) }
                return .again(error, retryAfter: RetryPolicy.retryAfter(response.header("Retry-After")))
            }
        }
    }

    /// The body of a license server's success; its refusal as the error it stands for.
    private func answer(_ response: KeyExchangeResponse) throws(OfflineVideoError) -> [UInt8] {
        guard (200...299).contains(response.status) else {
            let detail = (try? WireJSON.decoder().decode([APIError].self, from: Data(response.body)))?.first
            let reason: OfflineVideoError.Reason = switch (response.status, detail?.errorSubcode) {
            case (403, "TOKEN_EXPIRED"): .tokenExpired
            case (403, "LICENSE_REVOKED"): .licenseRevoked
            default: .license
            }
            throw OfflineVideoError(.contentKeyRequestFailed, reason,
                                    "The license server refused: HTTP \(response.status)"
                                        + (detail.map { " \($0.errorCode)/\($0.errorSubcode ?? "-"): \($0.message ?? "")" } ?? ""),
                                    httpStatus: response.status, responseBody: response.body)
        }
        return response.body
    }

    /// Sends a key-exchange request through the app's hook when there is one, else straight.
    private func deliver(_ request: KeyExchangeRequest) async throws -> KeyExchangeResponse {
        guard let keyExchange = keyExchange.withLock({ $0 }) else { return try await send(request) }
        return request.purpose == .certificate ? try await keyExchange.applicationCertificate(request, send: send)
                                               : try await keyExchange.contentKey(request, send: send)
    }

    /// Whether a failure to send may pass: a transport failure the retry rule retries (an app's
    /// key-exchange hook that throws something else is taken at its word).
    private static func mayPass(_ error: any Error) -> Bool {
        (error as? TransferError).map(RetryPolicy.isRetryable) ?? false
    }

    private static func purpose(_ kind: LicenseRequestKind) -> KeyExchangeRequest.Purpose {
        switch kind {
        case .acquire: .acquire
        case .renew: .renew
        case .firstPlay: .firstPlay
        case .release: .release
        }
    }

    /// A transport error's message, or any other error's description.
    private static func describe(_ error: any Error) -> String {
        (error as? TransferError)?.message ?? "\(error)"
    }
}
