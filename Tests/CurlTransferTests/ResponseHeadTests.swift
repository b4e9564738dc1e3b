import CCurl
import Testing
@testable import CurlTransfer

@Suite("Response head parsing")
struct ResponseHeadTests {
    private func head(_ lines: [String]) -> ResponseHead {
        var head = ResponseHead()
        for line in lines { head.consume(line: line + "\r\n") }
        return head
    }

    @Test func statusLineAndFieldsAreParsedWithCaseInsensitiveLookup() {
        let parsed = head(["HTTP/1.1 206 Partial Content", "Content-Length: 10", "content-range: bytes 5-14/100", ""])
        #expect(parsed.status == 206)
        #expect(parsed.isComplete)
        #expect(parsed.value("CONTENT-LENGTH") == "10")
        #expect(parsed.contentLength == 10)
        #expect(parsed.contentRange == ContentRange(range: 5...14, completeLength: 100))
    }

    @Test func eachStatusLineStartsANewResponse() {
        let parsed = head(["HTTP/1.1 302 Found", "Location: /b", "Content-Length: 0", "",
                           "HTTP/1.1 200 OK", "Content-Length: 3", ""])
        #expect(parsed.status == 200)
        #expect(parsed.fields.map(\.name) == ["Content-Length"])
        #expect(parsed.contentLength == 3)
    }

    @Test func http2StatusLineAndRepeatedAndFoldedFields() {
        let parsed = head(["HTTP/2 200", "Set-Cookie: a=1", "Set-Cookie: b=2", "X-Long: one", "\ttwo", ""])
        #expect(parsed.status == 200)
        #expect(parsed.fields.filter { $0.name == "Set-Cookie" }.map(\.value) == ["a=1", "b=2"])
        #expect(parsed.value("x-long") == "one two")
    }

    @Test func malformedLengthsAreIgnored() {
        #expect(head(["HTTP/1.1 200 OK", "Content-Length: -3"]).contentLength == nil)
        #expect(head(["HTTP/1.1 200 OK", "Content-Length: ten"]).contentLength == nil)
    }

    @Test(arguments: [
        ("bytes 0-99/1000", ContentRange(range: 0...99, completeLength: 1000)),
        ("bytes 10-19/*", ContentRange(range: 10...19, completeLength: nil)),
        ("bytes */1000", ContentRange(range: nil, completeLength: 1000)),
        ("BYTES 1-1/2", ContentRange(range: 1...1, completeLength: 2)),
    ])
    func contentRangeParses(_ text: String, _ expected: ContentRange) {
        #expect(ContentRange(parsing: text) == expected)
    }

    @Test(arguments: ["bytes 5-4/10", "bytes 0-10/10", "bytes */*", "items 0-1/2", "bytes 0-1", "bytes a-b/3"])
    func malformedContentRangeIsRejected(_ text: String) {
        #expect(ContentRange(parsing: text) == nil)
    }
}

@Suite("Download plan")
struct DownloadPlanTests {
    private func head(_ status: Int, _ fields: [(String, String)] = []) -> ResponseHead {
        var head = ResponseHead()
        head.consume(line: "HTTP/1.1 \(status) X\r\n")
        for (name, value) in fields { head.consume(line: "\(name): \(value)\r\n") }
        head.consume(line: "\r\n")
        return head
    }

    @Test func wholeFileReplacesWhateverWasThere() {
        #expect(DownloadPlan.decide(resumeOffset: 0, head: head(200, [("Content-Length", "50")])) == .replace(expectedTotal: 50))
        #expect(DownloadPlan.decide(resumeOffset: 70, head: head(200, [("Content-Length", "50")])) == .replace(expectedTotal: 50))
        #expect(DownloadPlan.decide(resumeOffset: 0, head: head(200)) == .replace(expectedTotal: nil))
    }

    @Test func partialContentForTheAskedOffsetAppends() {
        let answer = head(206, [("Content-Length", "60"), ("Content-Range", "bytes 40-99/100")])
        #expect(DownloadPlan.decide(resumeOffset: 40, head: answer) == .append(expectedTotal: 100))
    }

    @Test func partialContentForAnotherOffsetFails() {
        let answer = head(206, [("Content-Length", "60"), ("Content-Range", "bytes 0-59/100")])
        guard case .fail(let error) = DownloadPlan.decide(resumeOffset: 40, head: answer) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .lengthMismatch)
    }

    @Test func partialContentWithoutRangeOrWithInconsistentLengthFails() {
        for answer in [head(206), head(206, [("Content-Length", "5"), ("Content-Range", "bytes 40-99/100")])] {
            guard case .fail(let error) = DownloadPlan.decide(resumeOffset: 40, head: answer) else {
                Issue.record("expected a failure")
                continue
            }
            #expect(error.code == .lengthMismatch)
        }
    }

    @Test func rangeNotSatisfiableOnResumeRestartsButOtherwiseFails() {
        #expect(DownloadPlan.decide(resumeOffset: 100, head: head(416, [("Content-Range", "bytes */100")])) == .alreadyComplete(total: 100))
        #expect(DownloadPlan.decide(resumeOffset: 120, head: head(416, [("Content-Range", "bytes */100")])) == .restartFromZero)
        #expect(DownloadPlan.decide(resumeOffset: 100, head: head(416)) == .restartFromZero)
        #expect(DownloadPlan.decide(resumeOffset: 0, head: head(416)) == .fail(TransferError(.http(416), "the server answered 416")))
    }

    @Test(arguments: [204, 304, 404, 500])
    func otherStatusesFailWithTheirStatus(_ status: Int) {
        guard case .fail(let error) = DownloadPlan.decide(resumeOffset: 0, head: head(status)) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .http(status))
        #expect(error.code.httpStatus == status)
    }

    @Test func verificationComparesTheBytesOnDiskWithTheAnnouncedTotal() {
        #expect(DownloadPlan.verify(bytesOnDisk: 10, expectedTotal: 10) == nil)
        #expect(DownloadPlan.verify(bytesOnDisk: 10, expectedTotal: nil) == nil)
        #expect(DownloadPlan.verify(bytesOnDisk: 9, expectedTotal: 10)?.code == .lengthMismatch)
        #expect(DownloadPlan.verify(bytesOnDisk: 11, expectedTotal: 10)?.code == .lengthMismatch)
    }
}

@Suite("Errors and small helpers")
struct TransferErrorTests {
    @Test func curlCodesMapToStableKinds() {
        let cases: [(CURLcode, TransferError.Code)] = [
            (CURLE_URL_MALFORMAT, .invalidURL), (CURLE_UNSUPPORTED_PROTOCOL, .invalidURL),
            (CURLE_COULDNT_RESOLVE_HOST, .couldNotResolveHost), (CURLE_COULDNT_CONNECT, .couldNotConnect),
            (CURLE_OPERATION_TIMEDOUT, .timedOut), (CURLE_PARTIAL_FILE, .lengthMismatch),
            (CURLE_RECV_ERROR, .connectionLost), (CURLE_GOT_NOTHING, .connectionLost),
            (CURLE_TOO_MANY_REDIRECTS, .tooManyRedirects), (CURLE_WRITE_ERROR, .writeFailed),
            (CURLE_HTTP_RETURNED_ERROR, .http(503)), (CURLE_SSL_CONNECT_ERROR, .tlsFailed),
            (CURLE_PEER_FAILED_VERIFICATION, .untrustedCertificate), (CURLE_SSL_CACERT_BADFILE, .tlsFailed), (CURLE_SEND_FAIL_REWIND, .other(65)),
        ]
        for (curlCode, expected) in cases {
            let error = TransferError(curlCode: curlCode, detail: "detail", status: 503)
            #expect(error.code == expected)
            #expect(error.curlCode == Int(curlCode.rawValue))
            #expect(error.message.hasSuffix(": detail"))
        }
    }

    @Test func codesDescribeThemselves() {
        #expect("\(TransferError.Code.http(404))" == "http(404)")
        #expect("\(TransferError(.diskFull, "no space"))" == "diskFull: no space")
        #expect(TransferError.Code.timedOut.httpStatus == nil)
    }

    @Test func durationsBecomeAtLeastOneMillisecond() {
        #expect(Duration.seconds(2).milliseconds == 2000)
        #expect(Duration.microseconds(1500).milliseconds == 1)
        #expect(Duration.zero.milliseconds == 1)
    }

    @Test func emptyHeaderValuesUseCurlsSemicolonForm() {
        #expect(Transfer.headerLines([("A", "1"), ("B", "")]) == ["A: 1", "B;"])
    }

    @Test func transferIDsAreUnique() {
        let ids = (0..<100).map { _ in TransferID() }
        #expect(Set(ids).count == 100)
    }
}
