import Foundation
import MicroHTTP
import Testing
import TestKit
import WireModels
@testable import MockBackend

/// The CMS API's custom field definitions (`/video_fields`), and how they govern the values a
/// video takes; on both stores.
@Suite("CMS API: custom fields")
struct CMSFieldTests {
    @Test("fields the catalog already uses are defined; an enum field is made, checked on videos, changed and deleted; a required one keeps a video from ACTIVE", arguments: StoreKind.allCases)
    func customFields(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { makeApp in
            let app = try makeApp()
            let token = try OAuthTests.token(app)
            let fields = try CMSVideoTests.object(CMSVideoTests.cms(app, "GET", "/video_fields", token: token))
            #expect((fields["custom_fields"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["genre", "rating"])
            #expect(fields["max_custom_fields"] as? Int == 10)
            #expect((fields["standard_fields"] as? [[String: Any]])?.isEmpty == false)

            let made = try CMSVideoTests.cms(app, "POST", "/video_fields/custom_fields", token: token,
                                             ["id": "subject", "display_name": "Subject", "type": "enum", "enum_values": ["Birds", "Fish"]])
            #expect(made.status == 201, "\(made.debugText)")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "POST", "/video_fields/custom_fields", token: token,
                                                                   ["id": "subject", "type": "string"]), 409, "CONFLICT")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "POST", "/video_fields/custom_fields", token: token,
                                                                   ["id": "Bad Id", "type": "string"]), 422, "VALIDATION_ERROR")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "POST", "/video_fields/custom_fields", token: token,
                                                                   ["id": "kind", "type": "enum"]), 422, "VALIDATION_ERROR")

            let video = Fixture.clearVideo
            let set = try CMSVideoTests.object(CMSVideoTests.cms(app, "PATCH", "/videos/\(video)", token: token, ["custom_fields": ["subject": "Birds"]]))
            #expect((set["custom_fields"] as? [String: String])?["subject"] == "Birds")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "PATCH", "/videos/\(video)", token: token,
                                                                   ["custom_fields": ["subject": "Cats"]]), 422, "VALIDATION_ERROR")
            #expect(try app.video(video).customFields["subject"] == "Birds", "the Playback API shows the value")

            let changed = try CMSVideoTests.object(CMSVideoTests.cms(app, "PATCH", "/video_fields/custom_fields/subject", token: token,
                                                                     ["required": true, "enum_values": ["Birds", "Fish", "Cats"]]))
            #expect(changed["required"] as? Bool == true)
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "POST", "/videos", token: token, ["name": "No subject"]), 422, "VALIDATION_ERROR")
            #expect(try CMSVideoTests.cms(app, "POST", "/videos", token: token, ["name": "No subject", "state": "INACTIVE"]).status == 201)
            #expect(try CMSVideoTests.cms(app, "POST", "/videos", token: token, ["name": "Cats", "custom_fields": ["subject": "Cats"]]).status == 201)

            let other = try makeApp()
            #expect(try await eventually {
                try CMSVideoTests.cms(other, "GET", "/video_fields/custom_fields/subject", token: token).status == 200
            })
            let deleted = try CMSVideoTests.cms(app, "DELETE", "/video_fields/custom_fields/subject", token: token)
            #expect(deleted.status == 204, "\(deleted.debugText)")
            try CMSVideoTests.expectCMSError(try CMSVideoTests.cms(app, "GET", "/video_fields/custom_fields/subject", token: token),
                                             404, "RESOURCE_NOT_FOUND")
            let left = try CMSVideoTests.array(CMSVideoTests.cms(app, "GET", "/video_fields/custom_fields", token: token))
            #expect(left.compactMap { $0["id"] as? String } == ["genre", "rating"])
        }
    }
}
