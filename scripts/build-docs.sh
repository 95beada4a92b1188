#!/usr/bin/env bash
# Builds the library's documentation (Sources/LiveDefaults/LiveDefaults.docc and the public API's
# doc comments) with the toolchain's `docc`, and fails on any warning: a broken link, an ambiguous
# symbol link, an undocumented public symbol or a top-level one the overview's Topics leave out.
# Usage: scripts/build-docs.sh. The archive lands in .build/docs/LiveDefaults.doccarchive.
# (No SwiftPM plugin: the symbol graph comes from swift-symbolgraph-extract over the built module.)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
out=.build/docs
catalog=Sources/LiveDefaults/LiveDefaults.docc

swift build --target LiveDefaults
modules="$(swift build --show-bin-path)/Modules"
triple=$(swiftc -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')

# The public API, the codec's re-exported names included (docs/design.md, "Documentation").
rm -rf "$out/symbol-graphs" "$out/LiveDefaults.doccarchive"
mkdir -p "$out/symbol-graphs"
swift-symbolgraph-extract -module-name LiveDefaults -target "$triple" -I "$modules" -I Sources/CInotifyTools -I Sources/CTimerFD \
    -module-cache-path "$out/ModuleCache" -minimum-access-level public -skip-synthesized-members \
    -experimental-allowed-reexported-modules=LiveDefaultsPropertyList -output-dir "$out/symbol-graphs"

scripts/check-doc-coverage.py "$out/symbol-graphs" "$catalog"

# docc prints its diagnostics and exits non-zero on any warning.
docc convert "$catalog" --additional-symbol-graph-dir "$out/symbol-graphs" \
    --fallback-display-name LiveDefaults --fallback-bundle-identifier org.livedefaults.LiveDefaults \
    --output-path "$out/LiveDefaults.doccarchive" --warnings-as-errors
echo "documentation: $out/LiveDefaults.doccarchive"
