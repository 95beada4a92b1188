// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LiveDefaults",
    products: [
        .library(name: "LiveDefaults", targets: ["LiveDefaults"]),
        .library(name: "LiveDefaultsEtcd", targets: ["LiveDefaultsEtcd"]),
        .executable(name: "defaults", targets: ["defaults"]),
        .executable(name: "onboarding-demo", targets: ["OnboardingDemo"]),
        .executable(name: "livedefaults-bench", targets: ["Benchmarks"]),
    ],
    targets: [
        .systemLibrary(
            name: "CInotifyTools",
            path: "Sources/CInotifyTools",
            providers: [.apt(["libinotifytools0-dev"])]
        ),
        .target(name: "LiveDefaults", dependencies: ["CInotifyTools"], path: "Sources/LiveDefaults"),
        .executableTarget(name: "defaults", dependencies: ["LiveDefaults"], path: "Sources/defaults"),
        // The onboarding demo: its state model, answers and rendering in a library the tests use,
        // and a thin executable that does the terminal, the signals and standard input.
        .target(name: "OnboardingKit", dependencies: ["LiveDefaults"], path: "Demo/OnboardingKit"),
        .executableTarget(
            name: "OnboardingDemo", dependencies: ["OnboardingKit", "LiveDefaults"], path: "Demo/onboarding-demo"),
        // dconf's side is a C program the benchmark compiles when libdconf-dev is there (DconfPeer.swift).
        .executableTarget(
            name: "Benchmarks", dependencies: ["LiveDefaults"], path: "Benchmarks", exclude: ["DconfPeer"]),
        // A small program the end-to-end tests start as a second process (writers, crash victims, Foundation peers).
        .executableTarget(name: "TestHelper", dependencies: ["LiveDefaults"], path: "Tests/TestHelper"),
        // Helpers shared by both test targets (temporary directories, waiting with a deadline).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "LiveDefaultsTests", dependencies: ["LiveDefaults", "TestSupport"], path: "Tests/LiveDefaultsTests"),
        .testTarget(
            name: "DemoTests", dependencies: ["OnboardingKit", "LiveDefaults", "TestSupport"], path: "Tests/DemoTests"),
        // libcurl, which the etcd client calls (not FoundationNetworking: docs/design.md).
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Fleet settings: suites kept in etcd, through its JSON gateway; only apps that import it link libcurl.
        .target(name: "LiveDefaultsEtcd", dependencies: ["LiveDefaults", "CCurl"], path: "Sources/LiveDefaultsEtcd"),
        .testTarget(
            name: "EtcdTests", dependencies: ["LiveDefaultsEtcd", "LiveDefaults", "TestSupport"], path: "Tests/EtcdTests"),
        .testTarget(
            name: "EndToEndTests",
            // The executables are dependencies so that `swift test` builds them before running.
            dependencies: ["LiveDefaults", "TestSupport", "TestHelper", "defaults", "OnboardingDemo"],
            path: "Tests/EndToEndTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
