// swift-tools-version:6.1
import PackageDescription

// Every dependency here is justified in the README's dependency table.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "OfflineVideo",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "mock-backend", targets: ["MockBackendCLI"]),
        .executable(name: "offline", targets: ["OfflineCLI"]),
        .library(name: "OfflineSDK", targets: ["OfflineSDK"]),
        .library(name: "MockBackend", targets: ["MockBackend"]),
        .library(name: "MockBackendTesting", targets: ["MockBackendTesting"]),
        .library(name: "WireModels", targets: ["WireModels"]),
        .library(name: "LicenseProtocol", targets: ["LicenseProtocol"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.1.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        // `make docs`: `swift package generate-documentation` for the products an app imports (a plugin, never linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Shared
        .target(
            name: "WireModels",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            path: "Shared/WireModels",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "SampleAES",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Shared/SampleAES",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "LicenseProtocol",
            dependencies: [
                "WireModels",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Shared/LicenseProtocol",
            swiftSettings: swiftSettings
        ),

        // CMAF (ISO/IEC 23000-19): fragmented MP4 init and media segments remuxed from the TS fixtures, and
        // Common Encryption (ISO/IEC 23001-7, cbcs and cenc) of their samples; the mock's HLS v7 and DASH.
        .target(
            name: "CMAF",
            dependencies: [
                "SampleAES",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Shared/CMAF",
            swiftSettings: swiftSettings
        ),

        // The project's lock (a pthread mutex ThreadSanitizer sees), and what is built on it: one stream registry for subscribers.
        .target(name: "Locking", path: "Shared/Locking", swiftSettings: swiftSettings),
        // A file's size, time and type from stat(2), read in one place; child processes started and reaped one way.
        .target(name: "SystemFiles", path: "Shared/SystemFiles", swiftSettings: swiftSettings),

        // Opening the project's SQLite databases (the offline store, the backend's), one way.
        .target(
            name: "SQLiteSupport",
            dependencies: ["Locking", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Shared/SQLiteSupport",
            swiftSettings: swiftSettings
        ),

        // HTTP serving for both sides: the mock backend and the SDK's loopback playback server.
        .systemLibrary(
            name: "CMicroHTTPD",
            path: "Shared/CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .target(
            name: "MicroHTTP",
            dependencies: ["CMicroHTTPD", "Locking", "SystemFiles", .product(name: "Logging", package: "swift-log")],
            path: "Shared/MicroHTTP",
            swiftSettings: swiftSettings
        ),

        // PostgreSQL for the mock backend's shared mode (docs/running-the-mock.md: "One mock for a team").
        .systemLibrary(
            name: "CPostgres",
            path: "Shared/CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(
            name: "Postgres",
            dependencies: ["CPostgres", "Locking"],
            path: "Shared/Postgres",
            swiftSettings: swiftSettings
        ),

        // Server
        .target(
            name: "MockBackend",
            dependencies: [
                "MicroHTTP", "WireModels", "SampleAES", "CMAF", "Locking", "SQLiteSupport", "SystemFiles", "Postgres",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                "LicenseProtocol",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Server/MockBackend",
            swiftSettings: swiftSettings
        ),
        // The backend in-process for other packages' integration tests (docs/running-the-mock.md: "In your tests").
        .target(
            name: "MockBackendTesting",
            dependencies: ["MockBackend", "MicroHTTP", .product(name: "Logging", package: "swift-log")],
            path: "Server/MockBackendTesting",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "MockBackendCLI",
            dependencies: [
                "MockBackend", "MicroHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Server/MockBackendCLI",
            swiftSettings: swiftSettings
        ),

        // Client
        .systemLibrary(
            name: "CCurl",
            path: "Client/CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(
            name: "CurlTransfer",
            dependencies: ["CCurl", "Locking", "SystemFiles"],
            path: "Client/CurlTransfer",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "OfflineSDK",
            dependencies: [
                "WireModels", "CurlTransfer", "LicenseProtocol", "SampleAES", "CMAF", "MicroHTTP", "Locking", "SQLiteSupport", "SystemFiles",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Client/OfflineSDK",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "OfflineCLI",
            dependencies: [
                "OfflineSDK", "WireModels", "CurlTransfer", "Locking", "SystemFiles",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Client/OfflineCLI",
            swiftSettings: swiftSettings
        ),

        // Benchmarks
        .executableTarget(name: "LicenseRequests", dependencies: ["LicenseProtocol"], path: "benchmarks/LicenseRequests",
                          swiftSettings: swiftSettings),
        .executableTarget(name: "PlaybackStart", dependencies: ["OfflineSDK", "CurlTransfer"], path: "benchmarks/PlaybackStart",
                          swiftSettings: swiftSettings),

        // Fuzzing: one libFuzzer binary for every parser that reads bytes from the network or the
        // disk (FUZZ_TARGET picks the parser); scripts/fuzz.sh builds it with -sanitize=fuzzer,address.
        // A plain build makes it a replayer of saved inputs.
        .executableTarget(name: "FuzzTargets", dependencies: ["WireModels", "LicenseProtocol", "SampleAES", "CMAF", "MicroHTTP",
                                                              .product(name: "Crypto", package: "swift-crypto")],
                          path: "Fuzz", exclude: ["corpus", "dictionaries"], swiftSettings: swiftSettings),

        // Tests
        .target(name: "TestKit", dependencies: ["Locking", "SystemFiles", .product(name: "Logging", package: "swift-log"),
                                               .product(name: "Crypto", package: "swift-crypto"),
                                               .product(name: "_CryptoExtras", package: "swift-crypto")], path: "Tests/TestKit", swiftSettings: swiftSettings),
        .testTarget(name: "WireModelsTests", dependencies: ["WireModels"], path: "Tests/WireModelsTests",
                    resources: [.copy("Resources")], swiftSettings: swiftSettings),
        .testTarget(name: "MicroHTTPTests", dependencies: ["MicroHTTP", "CurlTransfer", "Locking", "TestKit", .product(name: "Logging", package: "swift-log")], path: "Tests/MicroHTTPTests",
                    swiftSettings: swiftSettings),
        .testTarget(name: "MockBackendTests", dependencies: ["MockBackend", "MicroHTTP", "WireModels", "CurlTransfer", "TestKit", "SampleAES", "SQLiteSupport",
                                   .product(name: "Logging", package: "swift-log"),
                                   .product(name: "GRDB", package: "GRDB.swift"),
                                   "LicenseProtocol", .product(name: "JWTKit", package: "jwt-kit"),
                                   .product(name: "_CryptoExtras", package: "swift-crypto")],
                    path: "Tests/MockBackendTests", swiftSettings: swiftSettings),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestKit"], path: "Tests/PostgresTests",
                    swiftSettings: swiftSettings),
        .testTarget(name: "LicenseProtocolTests", dependencies: ["LicenseProtocol", "TestKit"], path: "Tests/LicenseProtocolTests",
                    swiftSettings: swiftSettings),
        .testTarget(name: "CurlTransferTests", dependencies: ["CurlTransfer", "MicroHTTP", "Locking", "TestKit", .product(name: "Logging", package: "swift-log")], path: "Tests/CurlTransferTests",
                    swiftSettings: swiftSettings),
        .testTarget(name: "MockBackendTestingTests", dependencies: ["MockBackendTesting", "OfflineSDK", "CurlTransfer"],
                    path: "Tests/MockBackendTestingTests", swiftSettings: swiftSettings),
        .testTarget(name: "OfflineSDKTests", dependencies: ["OfflineSDK", "MockBackend", "WireModels", "CurlTransfer", "TestKit", "Locking",
                                                            "LicenseProtocol", "SampleAES", "SQLiteSupport", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Crypto", package: "swift-crypto"),
                                                            .product(name: "Logging", package: "swift-log")],
                    path: "Tests/OfflineSDKTests", swiftSettings: swiftSettings),
        // A small app written the way Brightcove's offline guide and OfflinePlayer sample write it,
        // against the live mock. Warnings are errors here: a delegate method that nearly matches a
        // requirement (and so would never be called) fails the build.
        .testTarget(name: "PortedAppTests", dependencies: ["OfflineSDK", "MockBackendTesting", "Locking", "TestKit"],
                    path: "Tests/PortedAppTests",
                    swiftSettings: swiftSettings + [.unsafeFlags(["-warnings-as-errors"])]),
        .testTarget(name: "CMAFTests", dependencies: ["CMAF", "SampleAES", "TestKit", .product(name: "Crypto", package: "swift-crypto"),
                                                      .product(name: "_CryptoExtras", package: "swift-crypto")],
                    path: "Tests/CMAFTests", swiftSettings: swiftSettings),
        .testTarget(name: "SampleAESTests", dependencies: ["SampleAES", "TestKit", .product(name: "Crypto", package: "swift-crypto"),
                                                           .product(name: "_CryptoExtras", package: "swift-crypto")],
                    path: "Tests/SampleAESTests",
                    swiftSettings: swiftSettings),
    ]
)
