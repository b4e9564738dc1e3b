import Testing
import WireModels

@Suite("Hex")
struct HexTests {
    @Test("bytes as two lowercase digits each; 16 bytes as a UUID with dashes after 4, 6, 8 and 10 bytes")
    func encodes() {
        #expect(Hex.lowercase([]) == "")
        #expect(Hex.lowercase([0x00, 0x0f, 0x10, 0xab, 0xff]) == "000f10abff")
        #expect(Hex.lowercase((0...255).map { UInt8($0) }) == (0...255).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
        let bytes: [UInt8] = [0x3e, 0x87, 0xb8, 0x8f, 0x8d, 0x3d, 0x5f, 0x03, 0x92, 0x96, 0xa4, 0xdc, 0x8b, 0xc4, 0x4f, 0xf4]
        #expect(Hex.uuid(bytes) == "3e87b88f-8d3d-5f03-9296-a4dc8bc44ff4")
        #expect(Hex.uuid(bytes[...]) == Hex.uuid(bytes))
    }
}
