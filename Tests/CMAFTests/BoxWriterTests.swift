@testable import CMAF
import Testing

@Suite struct BoxWriterTests {
    @Test func nestedBoxesCarryTheirSizes() {
        var writer = BoxWriter()
        writer.box("moov") { moov in
            moov.fullBox("mvhd", version: 1, flags: 0x000102) { $0.u32(7) }
            moov.box("free") { _ in }
        }
        #expect(writer.bytes == [0, 0, 0, 32, 0x6D, 0x6F, 0x6F, 0x76,
                                 0, 0, 0, 16, 0x6D, 0x76, 0x68, 0x64, 1, 0, 1, 2, 0, 0, 0, 7,
                                 0, 0, 0, 8, 0x66, 0x72, 0x65, 0x65])
    }
}
