import Foundation

/// A profile as the Ingest Profiles API writes it (reference §4.1's full object): a standard
/// profile (`account_id` -1, `brightcove_standard`), its renditions under `dynamic_origin`.
struct IngestProfileBody: Encodable {
    var profile: IngestProfile

    enum Keys: String, CodingKey {
        case id, version, name, description, renditions, packages
        case displayName = "display_name", accountID = "account_id", standard = "brightcove_standard"
        case dateCreated = "date_created", dateLastModified = "date_last_modified", digitalMaster = "digital_master"
        case dynamicOrigin = "dynamic_origin"
    }

    struct Image: Encodable { var label: String; var width: Int; var height: Int }
    /// The source is kept as it came and not offered for playback, as the standard profiles say.
    struct DigitalMaster: Encodable { var rendition = "passthrough"; var distribute = false }
    struct DynamicOrigin: Encodable { var renditions: [String]; var images: [Image] }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(profile.id, forKey: .id)
        try c.encode(profile.version, forKey: .version)
        try c.encode(profile.name, forKey: .name)
        try c.encode(profile.displayName, forKey: .displayName)
        try c.encode(profile.description, forKey: .description)
        try c.encode(-1, forKey: .accountID)
        try c.encode(true, forKey: .standard)
        try c.encode(profile.dateCreated, forKey: .dateCreated)
        try c.encode(profile.dateLastModified, forKey: .dateLastModified)
        try c.encode(DigitalMaster(), forKey: .digitalMaster)
        try c.encode([String](), forKey: .renditions)
        try c.encode([String](), forKey: .packages)
        try c.encode(DynamicOrigin(renditions: profile.renditions.map(\.id),
                                   images: [Image(label: "poster", width: 1280, height: 720), Image(label: "thumbnail", width: 160, height: 90)]),
                     forKey: .dynamicOrigin)
    }
}

/// The account's configuration as the API writes it: `account_id` a number, times epoch ms.
struct IngestConfigurationBody: Encodable {
    var configuration: IngestConfiguration
    var accountID: String

    enum Keys: String, CodingKey {
        case id, version
        case accountID = "account_id", defaultProfileID = "default_profile_id", dateCreated = "date_created", dateLastModified = "date_last_modified"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(configuration.id, forKey: .id)
        if let number = Int64(accountID) { try c.encode(number, forKey: .accountID) } else { try c.encode(accountID, forKey: .accountID) }
        try c.encode(configuration.defaultProfileID, forKey: .defaultProfileID)
        try c.encode(configuration.dateCreated, forKey: .dateCreated)
        try c.encode(configuration.dateLastModified, forKey: .dateLastModified)
        try c.encode(configuration.version, forKey: .version)
    }
}
