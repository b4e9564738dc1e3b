import Dispatch
import Foundation
import LicenseProtocol

// Writes N ready license-request bodies, one JSON object per line, for benchmarks/license.sh.
// Every body holds a fresh SPC (own nonce and client key), so none is a replay.
//   license-requests CERTIFICATE.der ACCOUNT KEY_ID COUNT OUTPUT

let arguments = CommandLine.arguments
guard arguments.count == 6, let count = Int(arguments[4]), count > 0 else {
    FileHandle.standardError.write(Data("usage: license-requests CERTIFICATE.der ACCOUNT KEY_ID COUNT OUTPUT\n".utf8))
    exit(2)
}
let certificate = try ApplicationCertificate(derEncoded: Array(try Data(contentsOf: URL(fileURLWithPath: arguments[1]))))
let account = arguments[2], keyID = arguments[3]
let now = Date()

/// One slot per body, each written by exactly one concurrentPerform iteration through the
/// buffer's pointer (distinct elements, no shared array value), read after it has returned.
final class Lines: @unchecked Sendable {
    let slots: UnsafeMutableBufferPointer<[UInt8]>
    init(_ count: Int) {
        slots = .allocate(capacity: count)
        slots.initialize(repeating: [])
    }
}
let lines = Lines(count)
let chunks = ProcessInfo.processInfo.activeProcessorCount * 4
DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
    for index in stride(from: chunk, to: count, by: chunks) {
        // The device id spreads requests over 1,000 devices, as a real audience would.
        let request = try? LicenseClient.makeRequest(.acquire, certificate: certificate, accountID: account, contentKeyID: keyID,
                                                     deviceID: "bench-device-\(index % 1000)", now: now)
        lines.slots[index] = request?.body() ?? []
    }
}
var output = [UInt8]()
output.reserveCapacity(count * 800)
for line in lines.slots where !line.isEmpty {
    output += line
    output.append(UInt8(ascii: "\n"))
}
try Data(output).write(to: URL(fileURLWithPath: arguments[5]))
