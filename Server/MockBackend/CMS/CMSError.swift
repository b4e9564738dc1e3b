import MicroHTTP
import WireModels

/// A refusal of the CMS API (and Dynamic Ingest): the documented body
/// `[{"error_code":"…","message":"…"}]`, with no `error_subcode`.
struct CMSError: HTTPResponseError, Equatable {
    var status: Int
    var code: String
    var message: String

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    var apiError: APIError { APIError(errorCode: code, message: message) }

    static func notFound(_ what: String) -> CMSError { CMSError(404, "RESOURCE_NOT_FOUND", "Resource does not exist: \(what)") }
    static func validation(_ message: String) -> CMSError { CMSError(422, "VALIDATION_ERROR", message) }
    static let unreadableJSON = CMSError(400, "BAD_VALUE", "Unable to process JSON")

    /// Runs `body`, turning the refusals the shared machinery throws into the CMS API's:
    /// an edit the catalog refused (its subcode becomes the code: 422 for a bad value, 409 for a
    /// conflict, 404 for a missing thing), a search or query refusal (400, its subcode the code).
    /// A storage failure stays what it was (500, or 503 while the database is away).
    static func translating<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as CatalogEditError {
            switch error.code {
            case .notFound: throw CMSError(404, "RESOURCE_NOT_FOUND", error.message)
            case .conflict: throw CMSError(409, error.subcode, error.message)
            case .invalid: throw CMSError(422, error.subcode.hasPrefix("INVALID_") ? "VALIDATION_ERROR" : error.subcode, error.message)
            default: throw error
            }
        } catch let error as HTTPError where error.status == 400 {
            throw CMSError(400, error.subcode ?? error.code, error.message)
        }
    }
}
