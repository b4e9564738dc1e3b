import Foundation

/// A custom field an account's videos may carry (`/video_fields/custom_fields`): its `id` is the
/// key in a video's `custom_fields`. Stored in the account's catalog entry (`video_fields`).
struct CustomFieldDefinition: Codable, Sendable, Equatable {
    var id: String
    var displayName: String
    var description: String?
    /// `string` or `enum`.
    var type: String
    var required: Bool
    /// The values an `enum` field takes; nil for a `string` field.
    var enumValues: [String]?

    enum CodingKeys: String, CodingKey {
        case id, description, type, required
        case displayName = "display_name"
        case enumValues = "enum_values"
    }

    /// `description` is written as `null` when there is none, as the real API writes it.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(displayName, forKey: .displayName)
        try c.encode(description, forKey: .description)
        try c.encode(type, forKey: .type)
        try c.encode(required, forKey: .required)
        try c.encodeIfPresent(enumValues, forKey: .enumValues)
    }

    /// The most custom fields an account may define (the CMS API's `max_custom_fields`).
    static let maximum = 10

    /// The account's definitions: those stored, or (never edited) one optional `string` field per
    /// key its videos already use, so the catalog file's custom fields are defined fields.
    static func effective(for account: CatalogFile.Account, in document: CatalogFile) -> [CustomFieldDefinition] {
        if let stored = account.videoFields { return stored }
        let keys = Set(document.videos.filter { $0.accountID == account.id }.flatMap { ($0.customFields ?? [:]).keys })
        return keys.sorted().map {
            CustomFieldDefinition(id: $0, displayName: $0, description: nil, type: "string", required: false, enumValues: nil)
        }
    }

    /// Why `value` cannot be this field's value; nil when it can.
    func problem(with value: String) -> String? {
        if value.count > 1024 { return "custom_fields.\(id): a value is at most 1024 characters" }
        if type == "enum", let values = enumValues, !values.contains(value) {
            return "custom_fields.\(id): '\(value)' is not one of \(values.joined(separator: ", "))"
        }
        return nil
    }
}
