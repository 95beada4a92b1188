// swift-tools-version:6.1
import PackageDescription

// The package's architecture, lowest layer first. Only the libraries and the `defaults` command are
// products; the demo and the benchmark are executable targets, which `swift run` runs by name in this
// package (`swift run onboarding-demo`, `swift run -c release livedefaults-bench`) and which packages
// that depend on LiveDefaults never see.
let package = Package(
    name: "LiveDefaults",
    products: [
        .library(name: "LiveDefaults", targets: ["LiveDefaults"]),
        .library(name: "LiveDefaultsEtcd", targets: ["LiveDefaultsEtcd"]),
        .executable(name: "defaults", targets: ["defaults"]),
        .executable(name: "livedefaults-console", targets: ["livedefaults-console"]),
    ],
    // The licence choice (README, "License"): the file watcher runs on libinotifytools (GPL-2) by default, or on
    // the kernel's inotify interface in glibc with `KernelInotify`, which links no GPL code. The same watcher either
    // way: only `InotifyInterface` differs (docs/design.md, "Live reload: the watcher's inotify interface").
    traits: [
        .trait(
            name: "LibInotifyTools",
            description: "The file watcher on libinotifytools (GPL-2): every binary that links LiveDefaults is GPL-2."),
        .trait(
            name: "KernelInotify",
            description: "The file watcher on the kernel's inotify interface in glibc: no GPL code is linked. "
                + "Wins when both traits are enabled."),
        .default(enabledTraits: ["LibInotifyTools"]),
    ],
    targets: [
        // libinotifytools (GPL-2) through a module map; only LiveDefaultsWatching links it, and only with the
        // `LibInotifyTools` trait (the default).
        .systemLibrary(
            name: "CInotifyTools",
            path: "Sources/CInotifyTools",
            providers: [.apt(["libinotifytools0-dev"])]
        ),
        // libcurl, which the etcd client calls (not FoundationNetworking: docs/design.md).
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Linux's timerfd, for the library's delayed work (glibc's header; nothing to link).
        .systemLibrary(name: "CTimerFD", path: "Sources/CTimerFD"),
        // A thread-local flag for the delivery of observations (docs/design.md, "Observation: the `set` path"):
        // read inline, without Foundation's thread dictionary or a `pthread_getspecific` call.
        .target(name: "CObservationThread", path: "Sources/CObservationThread"),
        // `Locked` for the watcher and the etcd client; the library compiles the same file again (a symbolic link),
        // in-module for the read path (docs/design.md).
        .target(name: "LiveDefaultsLocking", path: "Sources/LiveDefaultsLocking"),
        // The property-list codec (binary, XML, old-style text) and `PropertyListValue`; the library re-exports it.
        .target(name: "LiveDefaultsPropertyList", path: "Sources/LiveDefaultsPropertyList"),
        // The file watcher: tells the store when a suite file may have changed (inotify, else polling).
        .target(
            name: "LiveDefaultsWatching",
            dependencies: [
                "LiveDefaultsLocking", .target(name: "CInotifyTools", condition: .when(traits: ["LibInotifyTools"])),
            ],
            path: "Sources/LiveDefaultsWatching"),
        // The library: the store and its files, the search list, observation, typed keys.
        .target(
            name: "LiveDefaults",
            dependencies: ["LiveDefaultsPropertyList", "LiveDefaultsWatching", "CTimerFD", "CObservationThread"],
            path: "Sources/LiveDefaults"),
        // The etcd client: libcurl's POST, the v3 JSON gateway's wire format and watch-line reader, unary calls
        // and watches; synchronous (libcurl blocks; it is loaded at the first call: Sources/CCurl/shim.h).
        // Knows nothing of suites; not a product.
        .target(
            name: "LiveDefaultsEtcdClient", dependencies: ["LiveDefaultsLocking", "CCurl"],
            path: "Sources/LiveDefaultsEtcdClient"),
        // Fleet settings: suites kept in etcd (the mirror, its follower, the store's backend, the offline cache,
        // the connection), over the etcd client.
        .target(
            name: "LiveDefaultsEtcd",
            dependencies: ["LiveDefaults", "LiveDefaultsPropertyList", "LiveDefaultsEtcdClient"],
            path: "Sources/LiveDefaultsEtcd"),
        // The `defaults` command's parsing and running, behind the CommandIO/CommandDomains seam; not a product.
        // Remote suites (`etcd://…` domains) go through LiveDefaultsEtcd; libcurl is loaded at the first etcd call,
        // so a one-shot command on a local suite never loads it.
        .target(
            name: "LiveDefaultsCommand",
            dependencies: ["LiveDefaults", "LiveDefaultsPropertyList", "LiveDefaultsEtcd"],
            path: "Sources/LiveDefaultsCommand"),
        // The `defaults` executable: the standard streams, exit status and `watch`'s run loop around the runner.
        .executableTarget(
            name: "defaults", dependencies: ["LiveDefaultsCommand", "LiveDefaults"], path: "Sources/defaults"),
        // libmicrohttpd (LGPL-2.1+), the console's HTTP server; only the console links it.
        .systemLibrary(
            name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),
        // The settings console in the browser (docs/console.md): its server, model and page, in a library the tests
        // use; a program of its own, so that neither the library nor `defaults` links an HTTP server.
        .target(
            name: "LiveDefaultsConsole",
            dependencies: ["LiveDefaults", "LiveDefaultsPropertyList", "LiveDefaultsCommand", "LiveDefaultsEtcd", "CMicroHTTPD"],
            path: "Sources/LiveDefaultsConsole"),
        .executableTarget(
            name: "livedefaults-console", dependencies: ["LiveDefaultsConsole", "LiveDefaults", "LiveDefaultsCommand"],
            path: "Sources/livedefaults-console"),
        // The onboarding demo's state model, answers and rendering, in a library the tests use.
        .target(name: "OnboardingKit", dependencies: ["LiveDefaults"], path: "Demo/OnboardingKit"),
        // The demo's thin executable (`swift run onboarding-demo`): the terminal, signals, standard input and
        // the fleet suite of `--fleet` (Demo/fleet-demo.sh).
        .executableTarget(
            name: "onboarding-demo", dependencies: ["OnboardingKit", "LiveDefaults", "LiveDefaultsEtcd"],
            path: "Demo/onboarding-demo"),
        // The benchmark (`swift run -c release livedefaults-bench`): LiveDefaults beside Foundation's UserDefaults
        // and dconf, whose side is a C program the benchmark compiles when libdconf-dev is there (DconfPeer.swift).
        .executableTarget(
            name: "livedefaults-bench",
            dependencies: ["LiveDefaults", "LiveDefaultsPropertyList", "LiveDefaultsEtcd", "LiveDefaultsEtcdClient"],
            path: "Benchmarks", exclude: ["DconfPeer"]),
        // A small program the end-to-end tests start as a second process (writers, crash victims, Foundation peers).
        // (It links LiveDefaultsEtcd for the fleet migration raced across processes, and LiveDefaultsWatching to
        // time the shared watcher itself.)
        .executableTarget(
            name: "TestHelper", dependencies: ["LiveDefaults", "LiveDefaultsEtcd", "LiveDefaultsWatching"],
            path: "Tests/TestHelper"),
        // Helpers shared by the test targets (temporary directories, waiting with a deadline, stress factors).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // Helpers shared by the test targets that need the library's types (the observation log, the command's fixture
        // and captured streams).
        .target(
            name: "LiveDefaultsTestHelpers", dependencies: ["LiveDefaults", "LiveDefaultsCommand", "TestSupport"],
            path: "Tests/LiveDefaultsTestHelpers"),
        // The property-list codec's tests: readers, writers, round trips and malformed input.
        .testTarget(
            name: "LiveDefaultsPropertyListTests",
            dependencies: ["LiveDefaultsPropertyList", "LiveDefaults", "TestSupport"],
            path: "Tests/LiveDefaultsPropertyListTests"),
        // The file watcher's tests: real inotify and polling, and the registry's rules without threads or files.
        .testTarget(
            name: "LiveDefaultsWatchingTests",
            dependencies: ["LiveDefaultsWatching", "LiveDefaults", "TestSupport"],
            path: "Tests/LiveDefaultsWatchingTests"),
        // The library's unit tests.
        .testTarget(
            name: "LiveDefaultsTests",
            dependencies: ["LiveDefaults", "LiveDefaultsPropertyList", "LiveDefaultsTestHelpers", "TestSupport"],
            path: "Tests/LiveDefaultsTests"),
        // The `defaults` command's tests, in process through its seam.
        .testTarget(
            name: "LiveDefaultsCommandTests",
            dependencies: [
                "LiveDefaultsCommand", "LiveDefaults", "LiveDefaultsPropertyList", "LiveDefaultsTestHelpers",
                "TestSupport",
            ],
            path: "Tests/LiveDefaultsCommandTests"),
        // The onboarding demo's tests, in process.
        .testTarget(
            name: "DemoTests", dependencies: ["OnboardingKit", "LiveDefaults", "TestSupport"], path: "Tests/DemoTests"),
        // The etcd client and fleet settings against real etcd members on loopback (skipped without etcd); one
        // target, as the fleet tests start the same members and share their helpers.
        .testTarget(
            // `defaults` is a dependency so that `swift test` builds it before the binary's tests run.
            name: "EtcdTests",
            dependencies: [
                "LiveDefaultsEtcd", "LiveDefaultsEtcdClient", "LiveDefaultsCommand", "LiveDefaults",
                "LiveDefaultsTestHelpers", "TestSupport",
                "defaults", "TestHelper",
            ],
            path: "Tests/EtcdTests"),
        // The built executables run as separate processes: the store across processes, live reload, crashes,
        // the `defaults` binary and the demo.
        .testTarget(
            name: "EndToEndTests",
            // The executables are dependencies so that `swift test` builds them before running.
            dependencies: [
                "LiveDefaults", "LiveDefaultsCommand", "LiveDefaultsPropertyList", "LiveDefaultsWatching",
                "LiveDefaultsTestHelpers", "TestSupport", "TestHelper", "defaults", "onboarding-demo",
            ],
            path: "Tests/EndToEndTests"
        ),
        // The console: its rules in process, and the page in headless Chromium driven by Selenium
        // (console_browser.py; skipped without the browser unless LIVEDEFAULTS_REQUIRE_BROWSER=1).
        .testTarget(
            name: "ConsoleTests",
            dependencies: [
                "LiveDefaultsConsole", "LiveDefaults", "TestSupport", "livedefaults-console", "defaults", "TestHelper",
            ],
            path: "Tests/ConsoleTests", exclude: ["console_browser.py"]),
    ],
    swiftLanguageModes: [.v6]
)
