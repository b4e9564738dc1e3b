import CurlTransfer
import Foundation
import SystemFiles
import WireModels

/// The thumbnail track of a download that asked for it (`MediaSelections.thumbnails`), after
/// the media and the sideband subtitles: its WebVTT, each sprite it names once, and the local
/// WebVTT naming them (`ThumbnailTrackFile`), written last, so a resumed download fetches only
/// what is missing and a package with the local WebVTT has the whole track.
extension OfflineDownloads {
    /// Fetches the track, if asked for and the video has one; the download's error if it cannot.
    func fetchThumbnails(_ token: OfflineVideoToken) async -> OfflineVideoError? {
        guard let record = try? store.download(token), let video = try? record.video(),
              var track = ThumbnailTrackFile.track(of: video, asked: StoredRequest.of(record).thumbnails == true) else { return nil }
        let folder = packageFolder(token)
        let localPath = folder.appendingPathComponent(ThumbnailTrackFile.trackFile).path
        if FileManager.default.fileExists(atPath: localPath) { return nil }
        let remotePath = folder.appendingPathComponent(ThumbnailTrackFile.folder + "/remote.vtt").path
        do throws(OfflineVideoError) {
            // The WebVTT's URL is signed and may have expired with the download's others: once
            // refused (403), the video is fetched again and its fresh URL tried.
            do throws(TransferError) {
                try await fetchFile(track.src, to: remotePath)
            } catch where error.code.httpStatus == 403 {
                try await refreshURLs(token)
                guard let fresh = try? store.download(token)?.video(),
                      let renewed = ThumbnailTrackFile.track(of: fresh, asked: true) else {
                    throw OfflineVideoError(.downloadFailure, .tokenExpired, "The thumbnail track's URL expired and the video no longer lists the track")
                }
                track = renewed
                do throws(TransferError) { try await fetchFile(track.src, to: remotePath) } catch {
                    throw OfflineDownloads.fileFailure(error, "The thumbnail track's WebVTT")
                }
            } catch {
                throw OfflineDownloads.fileFailure(error, "The thumbnail track's WebVTT")
            }
            guard let body = OfflinePlaybackSessions.readFile(remotePath) else {
                throw OfflineVideoError(.downloadFailure, .storage, "The thumbnail track's WebVTT cannot be read back from \(remotePath)")
            }
            let sprites: [(url: String, file: String)], local: String
            do throws(ThumbnailTrackFile.Malformed) {
                (sprites, local) = try ThumbnailTrackFile.localize(String(decoding: body, as: UTF8.self), trackURL: track.src)
            } catch {
                try? FileManager.default.removeItem(atPath: remotePath)
                throw OfflineVideoError(.downloadFailure, .malformedPlaylist, "The thumbnail track of video \(video.id) is not usable: \(error)")
            }
            for (number, sprite) in sprites.enumerated() {
                if Task.isCancelled { return nil }
                let destination = folder.appendingPathComponent(sprite.file).path
                if FileManager.default.fileExists(atPath: destination) { continue }
                do throws(TransferError) { try await fetchFile(sprite.url, to: destination) } catch {
                    throw OfflineDownloads.fileFailure(error, "Thumbnail sprite \(number + 1) of \(sprites.count)")
                }
            }
            do {
                // Whole and on the disk before it is there: its presence says the track is.
                try OfflineDownloads.writeUnsynced(Data(local.utf8), to: localPath + ".part")
                let failure = FileContents.sync(localPath + ".part")
                if failure != 0 { throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO) }
                try FileManager.default.moveItem(atPath: localPath + ".part", toPath: localPath)
                _ = FileContents.sync((localPath as NSString).deletingLastPathComponent)
            } catch {
                throw OfflineVideoError(.downloadFailure, OfflineVideoError.storageReason(of: error), "Cannot write the thumbnail track: \(error)",
                                        underlying: error)
            }
            try? FileManager.default.removeItem(atPath: remotePath)
            return nil
        } catch {
            return Task.isCancelled ? nil : error  // paused, cancelled or closed: whoever cancelled set the state
        }
    }
}
