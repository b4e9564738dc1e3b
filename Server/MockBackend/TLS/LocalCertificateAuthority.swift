import Crypto
import Foundation
import MicroHTTP
import SwiftASN1
import X509

/// HTTPS without a real certificate: a certificate authority made once per data directory
/// (`tls/ca.pem`, the file to trust on a device or simulator) and a server certificate it
/// signs for every name the server is reached by, both kept and reused. A server certificate
/// that lacks a name asked for, expires within 30 days or was signed by another CA is made
/// again by the same CA, so a device that trusts the CA keeps trusting the server.
///
/// Validity follows what Apple's platforms accept from a locally trusted CA: a server
/// certificate lives 397 days with `serverAuth` and every name in subjectAltName.
struct LocalCertificateAuthority {
    /// The folder: `ca.pem`, `ca-key.pem`, `server.pem` (the server's, then the CA's), `server-key.pem`.
    let directory: URL

    var caFile: URL { directory.appendingPathComponent("ca.pem") }
    private var caKeyFile: URL { directory.appendingPathComponent("ca-key.pem") }
    private var serverFile: URL { directory.appendingPathComponent("server.pem") }
    private var serverKeyFile: URL { directory.appendingPathComponent("server-key.pem") }

    static let serverLifetime: TimeInterval = 397 * 86400
    static let caLifetime: TimeInterval = 10 * 365 * 86400
    static let renewBefore: TimeInterval = 30 * 86400

    /// The server's key and chain for `names` (host names and IP literals), made or reused.
    /// `now` is the real time: clients check certificates against their own clocks, never
    /// against the mock's movable one.
    func serverCredentials(names: [String], now: Date = Date()) throws -> TLSCredentials {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (ca, caKey) = try loadOrMakeCA(now: now)
        let wanted = try Self.generalNames(names)
        if let existing = try? reusableServer(ca: ca, wanted: wanted, now: now) { return existing }

        let key = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(key.publicKey)
        let authorityKeyID = try ca.extensions.subjectKeyIdentifier?.keyIdentifier
        let subject = try DistinguishedName {
            CommonName(names.first ?? "localhost")
            OrganizationName("Mock Video Cloud (local)")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(Self.serverLifetime),
            issuer: ca.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(wanted)
                SubjectKeyIdentifier(hash: publicKey)
                AuthorityKeyIdentifier(keyIdentifier: authorityKeyID)
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))
        let chain = try certificate.serializeAsPEM().pemString + "\n" + ca.serializeAsPEM().pemString + "\n"
        try Self.write(key.pemRepresentation + "\n", to: serverKeyFile, secret: true)
        try Self.write(chain, to: serverFile, secret: false)
        return TLSCredentials(privateKeyPEM: key.pemRepresentation, certificateChainPEM: chain)
    }

    /// The names a server bound to `host` is reached by: localhost, the loopback addresses,
    /// the machine's host name, the bound address when it is a specific one, and `extra`.
    static func defaultNames(host: String, extra: [String]) -> [String] {
        var names = ["localhost", "127.0.0.1", "::1"]
        let hostName = ProcessInfo.processInfo.hostName
        if !hostName.isEmpty { names.append(hostName) }
        if !["0.0.0.0", "::", ""].contains(host) { names.append(host) }
        names += extra
        var seen = Set<String>()
        return names.filter { seen.insert($0.lowercased()).inserted }
    }

    // MARK: The CA

    private func loadOrMakeCA(now: Date) throws -> (Certificate, P256.Signing.PrivateKey) {
        if FileManager.default.fileExists(atPath: caFile.path) {
            do {
                let certificate = try Certificate(pemEncoded: String(contentsOf: caFile, encoding: .utf8))
                let key = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOf: caKeyFile, encoding: .utf8))
                guard certificate.publicKey == Certificate.PublicKey(key.publicKey) else {
                    throw TLSSetupError(.unreadableCredentials, "\(caKeyFile.path) is not the key of \(caFile.path)")
                }
                return (certificate, key)
            } catch let error as TLSSetupError {
                throw error
            } catch {
                throw TLSSetupError(.unreadableCredentials, "cannot read the local CA in \(directory.path) (\(error)); remove the folder to make a new one",
                                    underlying: error)
            }
        }
        let key = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(key.publicKey)
        let name = try DistinguishedName {
            CommonName("Mock Video Cloud local CA (\(ProcessInfo.processInfo.hostName))")
            OrganizationName("Mock Video Cloud (local)")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(Self.caLifetime),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: publicKey)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        try Self.write(key.pemRepresentation + "\n", to: caKeyFile, secret: true)
        try Self.write(certificate.serializeAsPEM().pemString + "\n", to: caFile, secret: false)
        return (certificate, key)
    }

    // MARK: The server certificate

    /// The kept server credentials when they still do: signed by `ca`, every wanted name,
    /// not expiring soon, key matching.
    private func reusableServer(ca: Certificate, wanted: [GeneralName], now: Date) throws -> TLSCredentials? {
        let chain = try String(contentsOf: serverFile, encoding: .utf8)
        let keyPEM = try String(contentsOf: serverKeyFile, encoding: .utf8)
        // The file is the server's certificate then the CA's: read the first.
        let end = "-----END CERTIFICATE-----"
        guard let first = chain.range(of: end) else { return nil }
        let certificate = try Certificate(pemEncoded: String(chain[..<first.upperBound]))
        let key = try P256.Signing.PrivateKey(pemRepresentation: keyPEM)
        let names = try certificate.extensions.subjectAlternativeNames.map(Array.init) ?? []
        guard certificate.publicKey == Certificate.PublicKey(key.publicKey),
              certificate.issuer == ca.subject,
              ca.publicKey.isValidSignature(certificate.signature, for: certificate),
              certificate.notValidAfter > now.addingTimeInterval(Self.renewBefore),
              certificate.notValidBefore <= now,
              wanted.allSatisfy(names.contains)
        else { return nil }
        return TLSCredentials(privateKeyPEM: keyPEM, certificateChainPEM: chain)
    }

    /// A DNS name or an IP address (v4 or v6 literal) for each name.
    static func generalNames(_ names: [String]) throws -> [GeneralName] {
        try names.map { name in
            var v4 = in_addr()
            var v6 = in6_addr()
            let literal = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
            if inet_pton(AF_INET, literal, &v4) == 1 {
                return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(withUnsafeBytes(of: &v4) { Array($0) })))
            }
            if inet_pton(AF_INET6, literal, &v6) == 1 {
                return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(withUnsafeBytes(of: &v6) { Array($0) })))
            }
            guard !name.isEmpty, name.utf8.count <= 253,
                  name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "*") })
            else { throw TLSSetupError(.badConfiguration, "'\(name)' is neither a host name nor an IP address") }
            return .dnsName(name.lowercased())
        }
    }

    private static func write(_ text: String, to file: URL, secret: Bool) throws {
        let temporary = file.appendingPathExtension("tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8),
                                             attributes: [.posixPermissions: secret ? 0o600 : 0o644])
        else { throw TLSSetupError(.writeFailed, "cannot write \(temporary.path)") }
        guard rename(temporary.path, file.path) == 0 else {
            throw TLSSetupError(.writeFailed, "cannot write \(file.path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Why HTTPS could not be set up: a stable `code`, a message for a person (what went wrong and
/// what to do), and the file system's or the certificate parser's error underneath when one failed.
public typealias TLSSetupError = BackendError<TLSSetupErrorCode>

/// The kinds of ``TLSSetupError``. A struct over a private enum, so kinds can be added later
/// without breaking anyone's exhaustive switch.
public struct TLSSetupErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Hashable, Sendable { case tlsNotSupported, badConfiguration, unreadableCredentials, writeFailed }
    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// This libmicrohttpd was built without TLS.
    public static let tlsNotSupported = TLSSetupErrorCode(.tlsNotSupported)
    /// The TLS options cannot work: a certificate without its key, a name that is neither
    /// a host name nor an address.
    public static let badConfiguration = TLSSetupErrorCode(.badConfiguration)
    /// The certificate, key or local CA cannot be read, or do not belong together.
    public static let unreadableCredentials = TLSSetupErrorCode(.unreadableCredentials)
    /// A certificate or key file cannot be written.
    public static let writeFailed = TLSSetupErrorCode(.writeFailed)

    /// The stable name of the kind, e.g. "unreadableCredentials".
    public var description: String { base.rawValue }
}
