#!/usr/bin/env bash
# Builds the fuzzers with libFuzzer and AddressSanitizer and runs them for a bounded time each
# (default 30 s): the property-list readers and the journal's reader and replay, side by side (each
# fuzzer is one process on one core). Crashing inputs land in Fuzz/artifacts/.
#
#   Fuzz/run.sh [seconds]              builds, then runs both
#   Fuzz/run.sh --build-only           builds the fuzzers (.build/fuzz) and nothing else
#   Fuzz/run.sh --skip-build [seconds] runs the fuzzers built before, with the TestHelper built before
#                                      (`swift build`) for the journal's seeds; .ci/run builds them
#                                      while other builds run, and runs them once the tests are built
set -euo pipefail
cd "$(dirname "$0")/.."
mode=all
case "${1:-}" in
--build-only) mode=build; shift ;;
--skip-build) mode=run; shift ;;
esac
seconds="${1:-30}"
build=.build/fuzz
mkdir -p "$build" Fuzz/corpus Fuzz/corpus-journal Fuzz/artifacts

if [ "$mode" != run ]; then
    # The codec's target, whatever files it has, built as its own module (as SwiftPM builds it, with the
    # package name so that its `package` declarations are visible); the rest of the library (the store,
    # the watcher) is not linked. The fuzzer imports it as the library does.
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name LiveDefaultsPropertyList -package-name LiveDefaults \
        -swift-version 6 -emit-module -emit-module-path "$build/LiveDefaultsPropertyList.swiftmodule" \
        -emit-library -static -o "$build/libLiveDefaultsPropertyList.a" Sources/LiveDefaultsPropertyList/*.swift
    # The two fuzzers, side by side. (gold warns once per AddressSanitizer symbol that it cannot export a
    # local one; those lines are dropped, anything else is shown.)
    linker_noise="warning: Cannot export local symbol '__asan"
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name LiveDefaultsFuzz -package-name LiveDefaults \
        -swift-version 6 -I "$build" Fuzz/PropertyListFuzzer.swift Fuzz/FuzzSupport.swift "$build/libLiveDefaultsPropertyList.a" \
        -o "$build/property-list-fuzzer" 2>&1 | { grep -vF "$linker_noise" || true; } &
    property_list=$!
    # The journal's format and replay (the library's JournalFormat*.swift, which need only the codec),
    # compiled into the fuzzer's own module.
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name LiveDefaultsJournalFuzz -package-name LiveDefaults \
        -swift-version 6 -I "$build" Fuzz/JournalFuzzer.swift Fuzz/FuzzSupport.swift Sources/LiveDefaults/Storage/JournalFormat*.swift \
        "$build/libLiveDefaultsPropertyList.a" -o "$build/journal-fuzzer" 2>&1 | { grep -vF "$linker_noise" || true; }
    wait "$property_list"
    [ -x "$build/property-list-fuzzer" ] && [ -x "$build/journal-fuzzer" ] || { echo "Fuzz/run.sh: a fuzzer did not build" >&2; exit 1; }
fi
[ "$mode" = build ] && exit 0
for fuzzer in property-list-fuzzer journal-fuzzer; do
    [ -x "$build/$fuzzer" ] || { echo "Fuzz/run.sh: $build/$fuzzer is not built (Fuzz/run.sh --build-only)" >&2; exit 1; }
done

# Seed the corpus with one file of each format.
printf 'bplist00\xd1\x01\x02Qa\x10\x01\x08\x0b\x0d\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0f' > Fuzz/corpus/seed.bplist
printf '<?xml version="1.0"?><plist version="1.0"><dict><key>a</key><array><integer>1</integer><real>2.5</real><true/><date>2024-01-01T00:00:00Z</date><data>AAEC</data><string>x&amp;y</string></array></dict></plist>' > Fuzz/corpus/seed.xml
printf '{ a = (1, "two", <0102>); b = { c = d; }; }' > Fuzz/corpus/seed.txt
# The journal fuzzer's seeds: journals the real writer made (TestHelper journal-seeds), whole and
# damaged.
[ "$mode" = run ] || swift build --product TestHelper >/dev/null
helper="$(swift build --show-bin-path)/TestHelper"
[ -x "$helper" ] || { echo "Fuzz/run.sh: $helper is not built (swift build --product TestHelper)" >&2; exit 1; }
"$helper" journal-seeds Fuzz/corpus-journal

# Both at once, each printing to a log of its own; the logs are shown when both are done.
"$build/property-list-fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=5 \
    -artifact_prefix=Fuzz/artifacts/ Fuzz/corpus >"$build/property-list-fuzzer.log" 2>&1 &
property_list=$!
status=0
"$build/journal-fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=5 \
    -artifact_prefix=Fuzz/artifacts/journal- Fuzz/corpus-journal >"$build/journal-fuzzer.log" 2>&1 || status=$?
wait "$property_list" || status=$?
for fuzzer in property-list-fuzzer journal-fuzzer; do
    echo "== $fuzzer"
    cat "$build/$fuzzer.log"
done
exit $status
