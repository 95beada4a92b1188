#!/usr/bin/env bash
# Builds the fuzzers with libFuzzer and AddressSanitizer and runs each for a bounded time (default
# 30 s): the property-list readers, then the journal's reader and replay. Usage: Fuzz/run.sh [seconds].
# Crashing inputs land in Fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
build=.build/fuzz
mkdir -p "$build" Fuzz/corpus Fuzz/corpus-journal Fuzz/artifacts
# The codec's target, whatever files it has, built as its own module (as SwiftPM builds it, with the
# package name so that its `package` declarations are visible); the rest of the library (the store,
# the watcher) is not linked. The fuzzer imports it as the library does.
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name LiveDefaultsPropertyList -package-name LiveDefaults \
    -swift-version 6 -emit-module -emit-module-path "$build/LiveDefaultsPropertyList.swiftmodule" \
    -emit-library -static -o "$build/libLiveDefaultsPropertyList.a" Sources/LiveDefaultsPropertyList/*.swift
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name LiveDefaultsFuzz -package-name LiveDefaults \
    -swift-version 6 -I "$build" Fuzz/PropertyListFuzzer.swift Fuzz/FuzzSupport.swift "$build/libLiveDefaultsPropertyList.a" \
    -o "$build/property-list-fuzzer"
# The journal's format and replay (the library's JournalFormat*.swift, which need only the codec),
# compiled into the fuzzer's own module.
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name LiveDefaultsJournalFuzz -package-name LiveDefaults \
    -swift-version 6 -I "$build" Fuzz/JournalFuzzer.swift Fuzz/FuzzSupport.swift Sources/LiveDefaults/Storage/JournalFormat*.swift \
    "$build/libLiveDefaultsPropertyList.a" -o "$build/journal-fuzzer"
# Seed the corpus with one file of each format.
printf 'bplist00\xd1\x01\x02Qa\x10\x01\x08\x0b\x0d\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0f' > Fuzz/corpus/seed.bplist
printf '<?xml version="1.0"?><plist version="1.0"><dict><key>a</key><array><integer>1</integer><real>2.5</real><true/><date>2024-01-01T00:00:00Z</date><data>AAEC</data><string>x&amp;y</string></array></dict></plist>' > Fuzz/corpus/seed.xml
printf '{ a = (1, "two", <0102>); b = { c = d; }; }' > Fuzz/corpus/seed.txt
"$build/property-list-fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=5 \
    -artifact_prefix=Fuzz/artifacts/ Fuzz/corpus
# The journal fuzzer's seeds: journals the real writer made (TestHelper journal-seeds), whole and
# damaged.
swift build --product TestHelper >/dev/null
"$(swift build --show-bin-path)/TestHelper" journal-seeds Fuzz/corpus-journal
"$build/journal-fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=5 \
    -artifact_prefix=Fuzz/artifacts/journal- Fuzz/corpus-journal
