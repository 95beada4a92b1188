#!/usr/bin/env bash
# Measures two commits of LiveDefaults the same way: one program (scripts/compare/main.swift) built
# against each through the public API, run in alternating rounds on this machine, with the ratio of
# medians per row; --instructions adds callgrind's instruction counts per operation, which do not
# depend on the load. docs/performance.md, "Checking a change against an earlier commit".
#
#   scripts/compare-versions.sh [--rounds N] [--instructions] [--keep DIR] BASE [HEAD]
#   (HEAD defaults to HEAD; --keep copies each run's raw output to DIR, so that several series can
#   be summarized together: python3 scripts/compare/summarize.py DIR base head)
set -euo pipefail
rounds=6
instructions=0
keep=""
while [[ $# -gt 0 && $1 == --* ]]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --instructions) instructions=1; shift ;;
        --keep) keep=$2; shift 2 ;;
        *) echo "compare-versions: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $# -ge 1 ]] || { echo "usage: scripts/compare-versions.sh [--rounds N] [--instructions] [--keep DIR] BASE [HEAD]" >&2; exit 2; }
repository=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/opt/swift/usr/bin:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/livedefaults-compare.XXXXXX")
cleanup() {
    for side in base head; do git -C "$repository" worktree remove --force "$work/$side-source" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

declare -A commit=([base]=$(git -C "$repository" rev-parse --verify "$1^{commit}") [head]=$(git -C "$repository" rev-parse --verify "${2:-HEAD}^{commit}"))
for side in base head; do
    git -C "$repository" worktree add --detach --quiet "$work/$side-source" "${commit[$side]}"
    mkdir -p "$work/$side/Sources/compare"
    cp "$repository/scripts/compare/main.swift" "$work/$side/Sources/compare/main.swift"
    cat > "$work/$side/Package.swift" <<MANIFEST
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "compare-$side",
    dependencies: [.package(path: "$work/$side-source")],
    targets: [
        .executableTarget(
            name: "compare", dependencies: [.product(name: "LiveDefaults", package: "$side-source")],
            path: "Sources/compare")
    ]
)
MANIFEST
    echo "building $side (${commit[$side]:0:7})…" >&2
    swift build -c release --package-path "$work/$side" >"$work/$side.build.log" 2>&1 || { tail -20 "$work/$side.build.log" >&2; exit 1; }
done

# Alternate the order each round, so that a drift in the machine's state falls on both sides.
nice=()
[[ $(id -u) == 0 ]] && nice=(nice -n -20)
mkdir -p "$work/out"
for round in $(seq 1 "$rounds"); do
    order=(base head)
    (( round % 2 == 0 )) && order=(head base)
    for side in "${order[@]}"; do
        scratch=$(mktemp -d "$work/run.XXXXXX")
        { echo "# load $(cut -d' ' -f1 /proc/loadavg)"; "${nice[@]}" "$work/$side/.build/release/compare" run "$scratch"; } \
            >"$work/out/$side.$round.txt"
        rm -rf "$scratch"
    done
    echo "round $round of $rounds done" >&2
done

if (( instructions )); then
    command -v valgrind >/dev/null || { echo "compare-versions: --instructions needs valgrind" >&2; exit 1; }
    count() {  # side what n → instructions of all threads
        local scratch out
        scratch=$(mktemp -d "$work/count.XXXXXX"); out=$(mktemp -d "$work/cg.XXXXXX")
        valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$work/$1/.build/release/compare" count "$scratch" "$2" "$3" >/dev/null 2>&1
        awk '/^(summary|totals):/ { print $2; exit }' "$out/cg"
        rm -rf "$scratch" "$out"
    }
    # Each operation's count with FEW and with MANY repetitions: the difference over MANY - FEW is
    # one operation. The flush's FEW is 100, not 0, so that both runs have the same set-up.
    for side in base head; do
        for operation in "read 0 200000" "set 0 20000" "setobs 0 20000" "flush 100 300"; do
            set -- $operation
            few=$(count "$side" "$1" "$2"); many=$(count "$side" "$1" "$3")
            echo "$1	$(( (many - few) / ($3 - $2) ))" >>"$work/out/$side.instructions"
        done
    done
fi
if [[ -n $keep ]]; then
    mkdir -p "$keep"
    series=$(date +%s)
    for file in "$work"/out/*.txt; do cp "$file" "$keep/$(basename "$file" | sed "s/^\(base\|head\)\./\1.$series-/")"; done
fi
python3 "$repository/scripts/compare/summarize.py" "$work/out" "${commit[base]:0:7}" "${commit[head]:0:7}"
