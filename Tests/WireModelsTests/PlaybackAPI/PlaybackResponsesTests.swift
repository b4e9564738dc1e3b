import Foundation
import Testing
import WireModels

@Suite("Playlist, search and error bodies")
struct PlaybackResponsesTests {
    @Test("a playlist encodes its nulls and round-trips")
    func playlistRoundTrip() throws {
        let playlist = Playlist(
            id: "pl-1", accountID: VideoFixture.account, name: "Featured",
            createdAt: Date(timeIntervalSince1970: 1_709_294_400), updatedAt: Date(timeIntervalSince1970: 1_709_294_401),
            videos: [VideoFixture.video])
        let data = try WireJSON.encoder().encode(playlist)
        let object = try jsonObject(data)
        #expect(object["description"] is NSNull && object["reference_id"] is NSNull)
        #expect(object["type"] as? String == "EXPLICIT")
        #expect(object["created_at"] as? String == "2024-03-01T12:00:00.000Z")
        #expect(Set(object.keys) == [
            "id", "account_id", "name", "description", "reference_id", "type", "created_at", "updated_at", "videos",
        ])
        #expect(try WireJSON.decoder().decode(Playlist.self, from: data) == playlist)
    }

    @Test("a search result is {count, videos}")
    func searchResult() throws {
        let result = SearchResult(count: 42, videos: [VideoFixture.video])
        let data = try WireJSON.encoder().encode(result)
        let object = try jsonObject(data)
        #expect(object["count"] as? Int == 42)
        #expect((object["videos"] as? [Any])?.count == 1)
        #expect(try WireJSON.decoder().decode(SearchResult.self, from: data) == result)
    }

    @Test("the error body is an array of {error_code, error_subcode, message}")
    func errorBody() throws {
        let body = [
            APIError(
                errorCode: PlaybackAPIErrorCode.notFound, errorSubcode: PlaybackAPIErrorCode.videoNotFound,
                message: "no video"),
        ]
        let text = String(decoding: try WireJSON.encoder(sortedKeys: true).encode(body), as: UTF8.self)
        #expect(text == #"[{"error_code":"NOT_FOUND","error_subcode":"VIDEO_NOT_FOUND","message":"no video"}]"#)
        #expect(try WireJSON.decoder().decode([APIError].self, from: Data(text.utf8)) == body)
    }

    @Test("nil subcode and message are omitted")
    func errorOmitsNils() throws {
        let text = String(
            decoding: try WireJSON.encoder().encode([APIError(errorCode: PlaybackAPIErrorCode.methodNotAllowed)]),
            as: UTF8.self)
        #expect(text == #"[{"error_code":"METHOD_NOT_ALLOWED"}]"#)
    }

    @Test("the error codes are the reference's strings")
    func errorCodes() {
        let codes = [
            PlaybackAPIErrorCode.notFound, PlaybackAPIErrorCode.videoNotFound, PlaybackAPIErrorCode.playlistNotFound,
            PlaybackAPIErrorCode.badRequest, PlaybackAPIErrorCode.duplicateParameters,
            PlaybackAPIErrorCode.invalidSearch, PlaybackAPIErrorCode.illegalQuery, PlaybackAPIErrorCode.invalidSort,
            PlaybackAPIErrorCode.invalidPolicyKey, PlaybackAPIErrorCode.accessDenied,
            PlaybackAPIErrorCode.tokenRequired, PlaybackAPIErrorCode.tokenValidation, PlaybackAPIErrorCode.accountID,
            PlaybackAPIErrorCode.api, PlaybackAPIErrorCode.clientGeo, PlaybackAPIErrorCode.videoNotPlayable,
            PlaybackAPIErrorCode.deniedByDeviceLimiting, PlaybackAPIErrorCode.deniedByStreamLimit,
            PlaybackAPIErrorCode.methodNotAllowed, PlaybackAPIErrorCode.serverError,
            PlaybackAPIErrorCode.serviceUnavailable, PlaybackAPIErrorCode.serverTimeout,
        ]
        #expect(codes == [
            "NOT_FOUND", "VIDEO_NOT_FOUND", "PLAYLIST_NOT_FOUND", "BAD_REQUEST", "DUPLICATE_PARAMETERS",
            "INVALID_SEARCH", "ILLEGAL_QUERY", "INVALID_SORT", "INVALID_POLICY_KEY", "ACCESS_DENIED",
            "TOKEN_REQUIRED", "TOKEN_VALIDATION", "ACCOUNT_ID", "API", "CLIENT_GEO", "VIDEO_NOT_PLAYABLE",
            "DENIED_BY_DEVICE_LIMITING", "DENIED_BY_STREAM_LIMIT", "METHOD_NOT_ALLOWED", "SERVER_ERROR",
            "SERVICE_UNAVAILABLE", "SERVER_TIMEOUT",
        ])
    }
}
