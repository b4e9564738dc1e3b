import Foundation
import MicroHTTP
import WireModels

/// The CMS API's custom field definitions (`/v1/accounts/{account}/video_fields…`, reference
/// §2.6): kept in the account's catalog entry, so they are stored and reach every instance like
/// any catalog edit. Values live in each video's `custom_fields`.
extension MockBackendApp {
    static func addCMSFieldRoutes(to router: inout Router<MockBackendApp>) {
        let fields = "/v1/accounts/:account/video_fields"
        router.add(["GET"], fields) { app, request, p in
            try app.cms(request, p) { account in
                struct Standard: Encodable { var id: String; var description: String?; var required: Bool }
                struct Body: Encodable {
                    var customFields: [CustomFieldDefinition]
                    var standardFields: [Standard]
                    var maxCustomFields = CustomFieldDefinition.maximum
                    enum CodingKeys: String, CodingKey {
                        case customFields = "custom_fields", standardFields = "standard_fields", maxCustomFields = "max_custom_fields"
                    }
                    func encode(to encoder: any Encoder) throws {
                        var c = encoder.container(keyedBy: CodingKeys.self)
                        try c.encode(customFields, forKey: .customFields)
                        try c.encode(standardFields, forKey: .standardFields)
                        try c.encode(maxCustomFields, forKey: .maxCustomFields)
                    }
                }
                let standard = ["name", "description", "long_description", "reference_id", "state", "tags", "schedule", "economics", "link"]
                return APIResponse.json(Body(customFields: try app.customFields(of: account),
                                             standardFields: standard.map { Standard(id: $0, description: nil, required: $0 == "name") }))
            }
        }
        router.add(["GET"], "\(fields)/custom_fields") { app, request, p in
            try app.cms(request, p) { account in APIResponse.json(try app.customFields(of: account)) }
        }
        router.add(["POST"], "\(fields)/custom_fields") { app, request, p in
            try app.cms(request, p) { account in
                let body = try Self.cmsBody(request)
                let field = try app.editCustomFields(of: account) { fields throws(CatalogEditError) in
                    let field = try CustomFieldChanges(body: body).made()
                    guard !fields.contains(where: { $0.id == field.id }) else {
                        throw CatalogEditError(.conflict, "CONFLICT", "A custom field \(field.id) exists already")
                    }
                    guard fields.count < CustomFieldDefinition.maximum else {
                        throw CustomFieldChanges.invalid("custom_fields: an account has at most \(CustomFieldDefinition.maximum) custom fields")
                    }
                    fields.append(field)
                    return field
                }
                return APIResponse.json(field, status: 201)
            }
        }
        router.add(["GET"], "\(fields)/custom_fields/:field") { app, request, p in
            try app.cms(request, p) { account in
                guard let field = try app.customFields(of: account).first(where: { $0.id == p["field"] }) else {
                    throw CMSError.notFound("custom field \(p["field"])")
                }
                return APIResponse.json(field)
            }
        }
        router.add(["PATCH"], "\(fields)/custom_fields/:field") { app, request, p in
            try app.cms(request, p) { account in
                let body = try Self.cmsBody(request)
                let field = try app.editCustomFields(of: account) { fields throws(CatalogEditError) in
                    guard let index = fields.firstIndex(where: { $0.id == p["field"] }) else {
                        throw CatalogEditError(.notFound, "RESOURCE_NOT_FOUND", "Resource does not exist: custom field \(p["field"])")
                    }
                    try CustomFieldChanges(body: body).apply(to: &fields[index])
                    return fields[index]
                }
                return APIResponse.json(field)
            }
        }
        router.add(["DELETE"], "\(fields)/custom_fields/:field") { app, request, p in
            try app.cms(request, p) { account in
                _ = try app.editCustomFields(of: account) { fields throws(CatalogEditError) in
                    guard let index = fields.firstIndex(where: { $0.id == p["field"] }) else {
                        throw CatalogEditError(.notFound, "RESOURCE_NOT_FOUND", "Resource does not exist: custom field \(p["field"])")
                    }
                    return fields.remove(at: index)
                }
                return HTTPResponse(status: 204)
            }
        }
    }

    /// The account's custom fields as the CMS API shows them.
    private func customFields(of account: Account) throws(CMSError) -> [CustomFieldDefinition] {
        let document = live.document
        guard let entry = document.accounts.first(where: { $0.id == account.id }) else { throw CMSError.notFound("account \(account.id)") }
        return CustomFieldDefinition.effective(for: entry, in: document)
    }

    /// Changes the account's definitions through a catalog edit of the account; `change` returns the field it made, changed or removed.
    private func editCustomFields(of account: Account,
                                  _ change: (inout [CustomFieldDefinition]) throws(CatalogEditError) -> CustomFieldDefinition) throws -> CustomFieldDefinition {
        var result: CustomFieldDefinition?
        try live.edit(now: clock.now()) { document throws(CatalogEditError) -> LiveCatalog.Edit in
            guard var entry = document.accounts.first(where: { $0.id == account.id }) else {
                throw CatalogEditError(.notFound, "RESOURCE_NOT_FOUND", "No account \(account.id)")
            }
            var fields = CustomFieldDefinition.effective(for: entry, in: document)
            result = try change(&fields)
            entry.videoFields = fields
            return .account(entry)
        }
        guard let result else { throw CatalogEditError(.storageFailed, "STORAGE_FAILED", "the edit was lost") }
        return result
    }
}

/// A custom field's create or PATCH body: `id` (create only: lower-case letters, digits and `_`,
/// at most 128), `display_name`, `description`, `type` (`string` or `enum`, create only),
/// `required`, `enum_values` (required for `enum`, refused for `string`).
struct CustomFieldChanges {
    var body: [String: Any]

    static func invalid(_ message: String) -> CatalogEditError { CatalogEditError(.invalid, "VALIDATION_ERROR", message) }

    /// The field a create body describes.
    func made() throws(CatalogEditError) -> CustomFieldDefinition {
        guard let id = body["id"] as? String else { throw Self.invalid("id: REQUIRED_FIELD") }
        guard (1...128).contains(id.count), id.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw Self.invalid("id: lower-case letters, digits and _ only, at most 128")
        }
        guard let type = body["type"] as? String, ["string", "enum"].contains(type) else { throw Self.invalid("type: must be string or enum") }
        var field = CustomFieldDefinition(id: id, displayName: id, description: nil, type: type, required: false, enumValues: nil)
        try apply(to: &field, creating: true)
        return field
    }

    /// `field` with the body's members applied.
    func apply(to field: inout CustomFieldDefinition, creating: Bool = false) throws(CatalogEditError) {
        let allowed: Set<String> = creating ? ["id", "type", "display_name", "description", "required", "enum_values"]
                                            : ["display_name", "description", "required", "enum_values"]
        if let unknown = body.keys.sorted().first(where: { !allowed.contains($0) }) { throw Self.invalid("\(unknown): ILLEGAL_FIELD") }
        if let value = body["display_name"] {
            guard let name = value as? String, (1...128).contains(name.count) else { throw Self.invalid("display_name: a string of 1-128 characters") }
            field.displayName = name
        }
        if let value = body["description"] {
            guard value is NSNull || (value as? String)?.count ?? 1000 <= 512 else { throw Self.invalid("description: a string of at most 512 characters, or null") }
            field.description = value as? String
        }
        if body["required"] is NSNull { throw Self.invalid("required: must be true or false") }
        if let required: Bool = try CMSVideoChanges.member("required", of: body) { field.required = required }
        if let value = body["enum_values"] {
            guard let values = value as? [String], !values.isEmpty, values.allSatisfy({ (1...1024).contains($0.count) }) else {
                throw Self.invalid("enum_values: a non-empty array of strings")
            }
            field.enumValues = values
        }
        if field.type == "enum", field.enumValues == nil { throw Self.invalid("enum_values: REQUIRED_FIELD for an enum field") }
        if field.type == "string", field.enumValues != nil { throw Self.invalid("enum_values: ILLEGAL_FIELD for a string field") }
    }
}
