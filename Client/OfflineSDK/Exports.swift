// `TransferError` is what an SDK error's `underlying` holds when the network failed
// (`PlaybackServiceError.underlying`, a download's error): re-exported so an app that imports
// OfflineSDK can match it (`(error.underlying as? TransferError)?.code == .untrustedCertificate`).
// It is CurlTransfer's only public declaration (the rest is `package`), so nothing else comes with it.
@_exported public import CurlTransfer
