import Foundation

/// How the mock picks a video's related videos (`GET …/videos/{id}/related`). The real
/// service searches the account with the video's name, description and tags; the mock does
/// the same, deterministically: every other video of the account that shares a tag or a word
/// (3 letters or more, not a stop word) of the name or description with it, scored 3 for each
/// shared tag and 1 for each shared word, highest first, equal scores newest `updated_at` first.
enum RelatedVideos {
    /// Words that relate nothing.
    static let stopWords: Set<String> = ["and", "the", "for", "with", "from", "that", "this", "are", "was", "you", "not",
                                         "but", "all", "any", "can", "has", "its", "one", "two", "out", "into", "what"]

    /// The related videos of `video` among `candidates` (the account's videos), best first.
    static func pick(for video: CatalogVideo, among candidates: [CatalogVideo]) -> [CatalogVideo] {
        let tags = Set(video.tags.map { $0.lowercased() })
        let words = words(of: video)
        func score(_ other: CatalogVideo) -> Int {
            let sharedTags = tags.intersection(other.tags.map { $0.lowercased() }).count
            return 3 * sharedTags + words.intersection(RelatedVideos.words(of: other)).count
        }
        var scored: [(video: CatalogVideo, score: Int)] = []
        for other in candidates where other.id != video.id && other.accountID == video.accountID {
            let value = score(other)
            if value > 0 { scored.append((other, value)) }
        }
        scored.sort { x, y in
            if x.score != y.score { return x.score > y.score }
            if x.video.updatedAt != y.video.updatedAt { return x.video.updatedAt > y.video.updatedAt }
            return x.video.id < y.video.id
        }
        return scored.map(\.video)
    }

    /// The words of a video's name and description, lower-cased.
    static func words(of video: CatalogVideo) -> Set<String> {
        let text = (video.name + " " + (video.description ?? "")).lowercased()
        return Set(text.split { !$0.isLetter && !$0.isNumber }.map(String.init).filter { $0.count >= 3 && !stopWords.contains($0) })
    }
}
