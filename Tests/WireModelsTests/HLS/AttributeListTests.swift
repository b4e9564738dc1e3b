import Testing
import WireModels

@Suite("Attribute lists")
struct AttributeListTests {
    @Test("quoted strings may contain commas and '=', and the original order is kept")
    func parsesQuotedStrings() throws {
        let text = #"TYPE=SUBTITLES,CHARACTERISTICS="a.b,c.d",URI="s.m3u8?token=YQ%3D%3D&x=1",FORCED=NO"#
        let list = try AttributeList(parsing: text)
        #expect(list.names == ["TYPE", "CHARACTERISTICS", "URI", "FORCED"])
        #expect(list["CHARACTERISTICS"] == "a.b,c.d")
        #expect(list["URI"] == "s.m3u8?token=YQ%3D%3D&x=1")
        #expect(list["FORCED"] == "NO")
        #expect(list.description == text)
    }

    @Test("the formatter quotes by attribute name, and CLOSED-CAPTIONS=NONE stays unquoted")
    func quotingFollowsNames() {
        var list = AttributeList()
        list["BANDWIDTH"] = "1000"
        list["CODECS"] = "avc1.64001f,mp4a.40.2"
        list["RESOLUTION"] = "1280x720"
        list["CLOSED-CAPTIONS"] = "NONE"
        list["KEYFORMATVERSIONS"] = "1"
        list["IV"] = "0x01"
        list["X-CUSTOM"] = "plain"
        #expect(list.description
            == #"BANDWIDTH=1000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720,CLOSED-CAPTIONS=NONE,KEYFORMATVERSIONS="1",IV=0x01,X-CUSTOM=plain"#)
        list["CLOSED-CAPTIONS"] = "cc1"
        #expect(list.description.contains(#"CLOSED-CAPTIONS="cc1""#))
    }

    @Test("an unknown attribute keeps the quoting it was read with")
    func unknownQuotingSurvives() throws {
        let text = #"X-A="quoted",X-B=bare,URI="u""#
        #expect(try AttributeList(parsing: text).description == text)
    }

    @Test("setting replaces in place, appends new names, and nil removes")
    func mutation() throws {
        var list = try AttributeList(parsing: "A=1,B=2,C=3")
        list["B"] = "20"
        list["D"] = "4"
        list["A"] = nil
        #expect(list.description == "B=20,C=3,D=4")
        #expect(list.remove("C")?.value == "3")
        #expect(list.names == ["B", "D"])
    }

    @Test("typed accessors read integers, decimals, YES/NO, resolutions and byte ranges")
    func typedAccessors() throws {
        let list = try AttributeList(parsing: #"BANDWIDTH=800000,FRAME-RATE=29.970,DEFAULT=YES,RESOLUTION=640x360,BYTERANGE="100@20",X=abc"#)
        #expect(list.decimalInteger("BANDWIDTH") == 800_000)
        #expect(list.decimalFloat("FRAME-RATE") == 29.97)
        #expect(list.yesNo("DEFAULT") == true)
        #expect(list.resolution("RESOLUTION") == Resolution(width: 640, height: 360))
        #expect(list.byteRange("BYTERANGE") == ByteRange(length: 100, offset: 20))
        #expect(list.decimalInteger("X") == nil)
        #expect(list.decimalInteger("MISSING") == nil)
    }

    @Test("malformed attribute lists are rejected with the given line", arguments: [
        #"URI="never closed"#, "BANDWIDTH", "=1", "A=1,A=2", "A=", #"A=1"x"#, "A B=1",
    ])
    func rejects(text: String) {
        #expect(throws: HLSParseError.self) { try AttributeList(parsing: text, line: 7) }
        do {
            _ = try AttributeList(parsing: text, line: 7)
        } catch {
            #expect(error.line == 7)
        }
    }
}
