import Foundation
import WireModels

/// The Swift value of `Resources/JSON/video.json`.
enum VideoFixture {
    static let account = "1752604059001"
    static let uuid = "6c1e5a2e-3f0b-4d5e-9a55-1f0e2d3c4b5a"
    static let base = "https://mock.example"
    static let token = "NjVlMjA0MDBfMDEyMw%3D%3D"

    static let video = Video(
        id: "6340000000001", accountID: account, name: "Big Buck Bunny (FairPlay)",
        description: "A large rabbit deals with three bullies.", longDescription: nil, referenceID: "bbb-fairplay",
        duration: 596_480, economics: Video.adSupported,
        createdAt: Date(timeIntervalSince1970: 1_709_294_400),
        updatedAt: Date(timeIntervalSince1970: 1_709_368_215.25),
        publishedAt: Date(timeIntervalSince1970: 1_709_294_400.123),
        customFields: ["genre": "animation"], tags: ["animation", "open-movie"],
        cuePoints: [CuePoint(id: "cp-1", name: "midroll", type: "AD", time: 120.5)],
        poster: "\(base)/image/v1/\(account)/\(uuid)/1280x720/image.jpg",
        posterSources: [ImageSource(src: "\(base)/image/v1/\(account)/\(uuid)/1280x720/image.jpg")],
        thumbnail: nil,
        thumbnailSources: [ImageSource(src: "\(base)/image/v1/\(account)/\(uuid)/160x90/image.jpg", width: 160, height: 90)],
        link: nil, offlineEnabled: true, adKeys: nil,
        textTracks: [
            TextTrack(
                id: "tt-en", accountID: account, src: "\(base)/media/v1/\(account)/\(uuid)/text/en.vtt",
                sources: [SourceURL(src: "\(base)/media/v1/\(account)/\(uuid)/text/en.vtt")],
                srclang: "en", label: "English", kind: TextTrack.subtitles, mimeType: TextTrack.webVTT,
                isDefault: true, assetID: nil),
        ],
        sources: [
            VideoSource(
                type: VideoSource.hlsType,
                src: "\(base)/manifest/v1/hls/v5/fairplay/\(account)/\(uuid)/6s/master.m3u8?fastly_token=\(token)",
                extXVersion: "5", codecs: "avc1,mp4a",
                keySystems: [
                    KeySystem.fairPlay: KeySystem(
                        keyRequestURL: "\(base)/license/v1/fairplay/\(account)/\(uuid)/0f4b2c1d-9e8a-4b7c-a6d5-e4f3a2b1c0d9?fastly_token=\(token)",
                        certificateURL: "\(base)/license/v1/fairplay_app_cert/\(account)"),
                ]),
            VideoSource(
                src: "\(base)/manifest/v1/hls/v5/clear/\(account)/\(uuid)/6s/master.m3u8?fastly_token=\(token)",
                extXVersion: "4"),
        ])
}
