import Crypto
public import Foundation
public import _CryptoExtras

/// RSA keys for playback-restriction tokens, made once per test process (2048-bit
/// generation is slow), and JWTs signed with them.
public enum TestKeys {
    public static let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    public static let other = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    public static let kid = "test-key-1"
    /// `rsa`'s public half in PEM, as the admin API registers it.
    public static var publicKeyPEM: String { rsa.publicKey.pemRepresentation }

    public static func base64URL(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A compact JWS over `claims` (JSON text), RS256-signed with `key`.
    public static func jwt(_ claims: String, key: _RSA.Signing.PrivateKey = TestKeys.rsa, kid: String? = TestKeys.kid,
                           alg: String = "RS256") -> String {
        let header = kid.map { #"{"alg":"\#(alg)","typ":"JWT","kid":"\#($0)"}"# } ?? #"{"alg":"\#(alg)","typ":"JWT"}"#
        let input = base64URL(Array(header.utf8)) + "." + base64URL(Array(claims.utf8))
        let signature = try! key.signature(for: SHA256.hash(data: Array(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }

    public static var now: Int { Int(Date().timeIntervalSince1970) }
}
