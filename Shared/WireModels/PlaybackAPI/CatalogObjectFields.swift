import Foundation

/// The fields a video and a playlist both open with, read and written one way: the ids and the
/// name, the description and reference id (nil written as `null`, as the real API does), and the
/// two times as wire timestamps. Each type codes its own fields beside these, in the same object.
struct CatalogObjectFields {
    var id: String
    var accountID: String
    var name: String
    var description: String?
    var referenceID: String?
    var createdAt: Date
    var updatedAt: Date

    enum CodingKeys: String, CodingKey {
        case id, name, description
        case accountID = "account_id"
        case referenceID = "reference_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    init(id: String, accountID: String, name: String, description: String?, referenceID: String?, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.accountID = accountID
        self.name = name
        self.description = description
        self.referenceID = referenceID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        accountID = try container.decode(String.self, forKey: .accountID)
        name = try container.decode(String.self, forKey: .name)
        description = try container.decodeIfPresent(String.self, forKey: .description)
        referenceID = try container.decodeIfPresent(String.self, forKey: .referenceID)
        createdAt = try container.decodeWireDate(forKey: .createdAt)
        updatedAt = try container.decodeWireDate(forKey: .updatedAt)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(accountID, forKey: .accountID)
        try container.encode(name, forKey: .name)
        try container.encodeOrNull(description, forKey: .description)
        try container.encodeOrNull(referenceID, forKey: .referenceID)
        try container.encodeWireDate(createdAt, forKey: .createdAt)
        try container.encodeWireDate(updatedAt, forKey: .updatedAt)
    }
}
