import Crypto
import Foundation
import MicroHTTP
import MockBackend
import Testing
import TestKit
import _CryptoExtras

extension MockBackendApp {
    /// Registers `key`'s public half as `id` for `account` through the admin API.
    @discardableResult
    func registerPlaybackKey(account: String = Fixture.northwind, id: String = TestKeys.kid,
                             key: _RSA.Signing.PrivateKey = TestKeys.rsa) throws -> HTTPResponse {
        let body = try JSONSerialization.data(withJSONObject: ["id": id, "public_key": key.publicKey.pemRepresentation])
        let response = try request("POST", "/_admin/v1/accounts/\(account)/playback-keys", body: Array(body))
        #expect(response.status == 201, "\(response.debugText)")
        return response
    }
}
