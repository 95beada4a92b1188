#!/usr/bin/env bash
# Builds the documentation of both products with the toolchain's `docc`, and fails on any warning: a
# broken link, an ambiguous symbol link, an undocumented public symbol or a top-level one the root
# page's Topics leave out.
#   - the library: Sources/LiveDefaults/LiveDefaults.docc and the public API's doc comments;
#   - fleet settings: Sources/LiveDefaultsEtcd/LiveDefaultsEtcd.docc and its public API (its
#     extension of `Defaults` included).
# Usage: scripts/build-docs.sh. The archives land in .build/docs/<Module>.doccarchive.
# (No SwiftPM plugin: the symbol graph comes from swift-symbolgraph-extract over the built module.)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
out=.build/docs

swift build --target LiveDefaults --target LiveDefaultsEtcd
modules="$(swift build --show-bin-path)/Modules"
triple=$(swiftc -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')

# build <module> <extra swift-symbolgraph-extract arguments…>
build() {
    local module=$1
    shift
    local catalog=Sources/$module/$module.docc graphs=$out/symbol-graphs/$module
    rm -rf "$graphs" "$out/$module.doccarchive"
    mkdir -p "$graphs"
    swift-symbolgraph-extract -module-name "$module" -target "$triple" -I "$modules" -I Sources/CInotifyTools \
        -I Sources/CTimerFD -I Sources/CCurl -I Sources/CObservationThread/include -module-cache-path "$out/ModuleCache" -minimum-access-level public \
        -skip-synthesized-members -output-dir "$graphs" "$@"
    scripts/check-doc-coverage.py "$graphs" "$catalog"
    # docc prints its diagnostics and exits non-zero on any warning.
    docc convert "$catalog" --additional-symbol-graph-dir "$graphs" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.livedefaults.$module" \
        --output-path "$out/$module.doccarchive" --warnings-as-errors
    echo "documentation: $out/$module.doccarchive"
}

# The library's public API, the codec's re-exported names included (docs/design.md, "Documentation").
build LiveDefaults -experimental-allowed-reexported-modules=LiveDefaultsPropertyList
# Fleet settings' public API, with its extension of the library's `Defaults`.
build LiveDefaultsEtcd
