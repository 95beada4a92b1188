// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LiveDefaults",
    products: [
        .library(name: "LiveDefaults", targets: ["LiveDefaults"]),
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
        .target(name: "LiveDefaultsLocking", path: "Sources/LiveDefaultsLocking"),
        .target(
            name: "LiveDefaultsWatching", dependencies: ["LiveDefaultsLocking", "CInotifyTools"],
            path: "Sources/LiveDefaultsWatching"),
        .target(
            name: "LiveDefaults", dependencies: ["LiveDefaultsLocking", "LiveDefaultsWatching"],
            path: "Sources/LiveDefaults"),
        .target(name: "LiveDefaultsCommand", dependencies: ["LiveDefaults"], path: "Sources/LiveDefaultsCommand"),
        .executableTarget(
            name: "defaults", dependencies: ["LiveDefaultsCommand", "LiveDefaults"], path: "Sources/defaults"),
        // The onboarding demo: its state model, answers and rendering in a library the tests use,
        // and a thin executable that does the terminal, the signals and standard input.
        .target(name: "OnboardingKit", dependencies: ["LiveDefaults"], path: "Demo/OnboardingKit"),
        .executableTarget(
            name: "OnboardingDemo", dependencies: ["OnboardingKit", "LiveDefaults"], path: "Demo/onboarding-demo"),
        .executableTarget(name: "Benchmarks", dependencies: ["LiveDefaults"], path: "Benchmarks"),
        // A small program the end-to-end tests start as a second process (writers, crash victims, Foundation peers).
        .executableTarget(name: "TestHelper", dependencies: ["LiveDefaults"], path: "Tests/TestHelper"),
        // Helpers shared by both test targets (temporary directories, waiting with a deadline).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(
            name: "LiveDefaultsTests", dependencies: ["LiveDefaults", "LiveDefaultsWatching", "TestSupport"],
            path: "Tests/LiveDefaultsTests"),
        .testTarget(
            name: "LiveDefaultsCommandTests", dependencies: ["LiveDefaultsCommand", "LiveDefaults", "TestSupport"],
            path: "Tests/LiveDefaultsCommandTests"),
        .testTarget(
            name: "DemoTests", dependencies: ["OnboardingKit", "LiveDefaults", "TestSupport"], path: "Tests/DemoTests"),
        .testTarget(
            name: "EndToEndTests",
            // The executables are dependencies so that `swift test` builds them before running.
            dependencies: [
                "LiveDefaults", "LiveDefaultsCommand", "LiveDefaultsWatching", "TestSupport", "TestHelper", "defaults",
                "OnboardingDemo",
            ],
            path: "Tests/EndToEndTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
