#!/usr/bin/env python3
"""The table of docs/performance.md ("Figures") from several benchmark runs.

    swift run -c release livedefaults-bench --json > run-1.json   # (three or more runs)
    python3 scripts/bench-table.py run-*.json
    python3 scripts/bench-table.py run-*.json --baseline base-*.json --baseline-name af9c7fb

Each cell is the range (lowest–highest) over the runs; a target cell says whether every run met
it, or how many did not. With --baseline, a column gives the same row's range in the runs of
another build (an earlier commit's benchmark, run interleaved with these), and the ratio of the
medians. Rows are matched by group and name, with any parenthesised counts dropped, so that the
names stay stable from run to run.
"""
import argparse
import json
import re
import statistics


def key(row):
    return row["group"] + ": " + re.sub(r"\s*\([^)]*\)", "", row["name"])


def fmt(value, unit):
    if value is None:
        return None
    if unit == "ns":
        if value >= 1_000_000:
            return f"{value / 1_000_000:.2f} ms"
        if value >= 1_000:
            return f"{value / 1_000:.2f} µs"
        return f"{value:.0f} ns"
    if unit == "MB":
        return f"{value:.1f} MB"
    return f"{value:.2f} {unit}"


def span(values, unit):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    low, high = fmt(min(values), unit), fmt(max(values), unit)
    return low if low == high else f"{low} – {high}"


def ratio_span(values, suffix, slower=None):
    """The range of `values` as "a–b× suffix"; when every one is below 1 and `slower` is given,
    as their inverses: "a–b× slower"."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    if slower and max(values) < 1:
        values, suffix = [1 / v for v in values], slower
    low, high = min(values), max(values)
    digits = 2 if high < 10 else 1 if high < 100 else 0
    text = f"{low:.{digits}f}" if f"{low:.{digits}f}" == f"{high:.{digits}f}" else f"{low:.{digits}f}–{high:.{digits}f}"
    return f"{text}× {suffix}"


def verdict(flags):
    flags = [f for f in flags if f is not None]
    if not flags:
        return ""
    misses = flags.count(False)
    return "✓" if misses == 0 else f"✗ ({misses} of {len(flags)})"


def load(paths):
    runs = []
    for path in paths:
        with open(path) as handle:
            runs.append({key(row): row for row in json.load(handle)["rows"]})
    return runs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--baseline", nargs="*", default=[])
    parser.add_argument("--baseline-name", default="baseline")
    arguments = parser.parse_args()
    runs = load(arguments.runs)
    baseline = load(arguments.baseline)
    order = []
    for run in runs:
        for name in run:
            if name not in order:
                order.append(name)
    header = ["measurement", "LiveDefaults", "Foundation", "dconf", "floor", "ratio", "target"]
    if baseline:
        header.insert(2, arguments.baseline_name)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in order:
        rows = [run[name] for run in runs if name in run]
        unit = rows[0]["unit"]
        ours = [r["liveDefaults"] for r in rows]
        cells = [name, span(ours, unit)]
        if baseline:
            theirs = [run[name]["liveDefaults"] for run in baseline if name in run]
            if theirs:
                change = statistics.median(ours) / statistics.median(theirs)
                cells.append(f"{span(theirs, unit)} (now {change:.2f}× of it)")
            else:
                cells.append("—")
        cells.append(span([r.get("foundation") for r in rows], unit))
        cells.append(span([r.get("dconf") for r in rows], unit))
        cells.append(span([r.get("limit") for r in rows], unit))
        ratios = []
        foundation = ratio_span(
            [r["foundation"] / r["liveDefaults"] for r in rows if r.get("foundation") and r["liveDefaults"] > 0],
            "smaller than Foundation" if unit == "MB" else "faster than Foundation",
            slower=None if unit == "MB" else "slower than Foundation")
        floor = ratio_span([r["liveDefaults"] / r["limit"] for r in rows if r.get("limit")], "the floor")
        dconf = ratio_span(
            [r["dconf"] / r["liveDefaults"] for r in rows if r.get("dconf") and r["liveDefaults"] > 0],
            "faster than dconf", slower="slower than dconf")
        ratios = [text for text in (foundation, floor, dconf) if text]
        cells.append("; ".join(ratios) or "—")
        targets = []
        if rows[0].get("target"):
            targets.append(f"{rows[0]['target']} {verdict([r.get('met') for r in rows])}")
        if any(r.get("dconfTarget") for r in rows):
            target = next(r["dconfTarget"] for r in rows if r.get("dconfTarget"))
            targets.append(f"dconf: {target} {verdict([r.get('dconfMet') for r in rows])}")
        cells.append("; ".join(targets) or "—")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
