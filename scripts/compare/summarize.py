#!/usr/bin/env python3
"""Summarizes scripts/compare-versions.sh's runs: per row, each side's range and median, and the
ratio of the medians (head / base; below 1 is faster for every row, all being times)."""
import collections
import glob
import statistics
import sys

out, base_name, head_name = sys.argv[1:4]
rows = {side: collections.defaultdict(list) for side in ("base", "head")}
loads = []
for side in rows:
    for path in sorted(glob.glob(f"{out}/{side}.*.txt")):
        for line in open(path):
            if line.startswith("# load"):
                loads.append(float(line.split()[2]))
            elif "\t" in line:
                name, value = line.rstrip("\n").split("\t")
                rows[side][name].append(float(value))
runs = len(glob.glob(f"{out}/base.*.txt"))
print(f"{runs} runs a side, alternating; load average {min(loads):.2f}–{max(loads):.2f}")
print(f"| row | base {base_name} | head {head_name} | head / base (medians) |")
print("|---|---|---|---|")
for name, base in rows["base"].items():
    head = rows["head"].get(name)
    if not head:
        continue
    b, h = statistics.median(base), statistics.median(head)
    print(f"| {name} | {min(base):.1f}–{max(base):.1f} (median {b:.1f}) | {min(head):.1f}–{max(head):.1f} "
          f"(median {h:.1f}) | {h / b:.2f}× |")
counts = {}
for side in ("base", "head"):
    try:
        counts[side] = dict(line.split() for line in open(f"{out}/{side}.instructions"))
    except FileNotFoundError:
        pass
if len(counts) == 2:
    print("\n| instructions per operation (callgrind, all threads) | base | head | head / base |")
    print("|---|---|---|---|")
    for name, base in counts["base"].items():
        head = counts["head"][name]
        print(f"| {name} | {int(base):,} | {int(head):,} | {int(head) / int(base):.3f}× |")
