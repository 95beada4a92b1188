#!/usr/bin/env python3
"""Checks the public API's documentation before docc builds it.

Usage: scripts/check-doc-coverage.py <symbol-graph directory> <catalog directory>
(the catalog is Sources/<Module>/<Module>.docc; its root page, <Module>.md)

Fails, naming each symbol, when a public symbol has no doc comment of its own (one inherited from
a protocol in another module, such as `description`'s, does not count; members the compiler
synthesizes have no source and are skipped), when a top-level symbol is missing from the Topics of
the catalog's root page, or when a member of a type with an extension page (Extensions/<Type>.md)
is missing from that page's Topics.
"""
import glob
import json
import os
import re
import sys

OWN_MODULES = {"LiveDefaults", "LiveDefaultsPropertyList", "LiveDefaultsEtcd"}

graphs, catalog = sys.argv[1], sys.argv[2]
# The catalog's module: Sources/<Module>/<Module>.docc, whose root page is <Module>.md.
MODULE = os.path.basename(os.path.normpath(catalog)).removesuffix(".docc")
symbols = []
for path in sorted(glob.glob(os.path.join(graphs, "*.symbols.json"))):
    with open(path) as handle:
        symbols += json.load(handle)["symbols"]


def name(symbol):
    return "/".join(symbol["pathComponents"])


def links(path):
    """The symbol links in a page: ``A/b(c:)-(Int,_)`` gives "A/b(c:)", the disambiguation dropped."""
    with open(path) as handle:
        text = handle.read()
    found = set()
    for link in re.findall(r"``([^`]+)``", text):
        link = link.removeprefix(MODULE + "/")
        found.add(re.sub(r"-(\(.*\)|[0-9a-z]+)$", "", link))
    return found


problems = []
for symbol in symbols:
    if "location" not in symbol:
        continue  # synthesized by the compiler (an enum's init(rawValue:)): no source to document
    comment = symbol.get("docComment")
    if not comment or comment.get("module", MODULE) not in OWN_MODULES:
        location = symbol["location"]["uri"].split("/Sources/")[-1]
        problems.append(f"{name(symbol)} ({location}) has no doc comment of its own")

root = links(os.path.join(catalog, MODULE + ".md"))
graph_names = {name(symbol) for symbol in symbols}
for symbol in symbols:
    path = symbol["pathComponents"]
    if len(path) == 1 and path[0] not in root:
        problems.append(f"{path[0]} is not in the Topics of {MODULE}.md")

for page in glob.glob(os.path.join(catalog, "Extensions", "*.md")):
    with open(page) as handle:
        title = re.search(r"^# ``(?:" + MODULE + r"/)?([^`]+)``", handle.read(), re.M)
    if not title:
        continue
    owner = title.group(1).split("/")
    curated = links(page)
    for symbol in symbols:
        path = symbol["pathComponents"]
        if len(path) == len(owner) + 1 and path[:-1] == owner and path[-1] not in curated:
            problems.append(f"{name(symbol)} is not in the Topics of {os.path.relpath(page, catalog)}")

for problem in sorted(set(problems)):
    print(f"documentation: {problem}", file=sys.stderr)
print(f"documentation: {len(graph_names)} public symbols, {len(set(problems))} problems")
sys.exit(1 if problems else 0)
