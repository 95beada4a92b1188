#!/usr/bin/env python3
"""Type-checks the Swift examples in README.md, docs/*.md and the DocC catalogs' articles
(Sources/LiveDefaults/LiveDefaults.docc/*.md, Sources/LiveDefaultsEtcd/LiveDefaultsEtcd.docc/*.md)
against the built LiveDefaults and LiveDefaultsEtcd modules.

Each ```swift block of a document becomes part of one main file: type and extension declarations
at the start of a line are moved to file scope; everything else runs in a `do { }` scope of its own,
so blocks may reuse names. scripts/doc-snippets/<document>.prelude.swift, when present, declares what
the examples take as given (a `defaults`, the functions they call); a DocC article without one
takes docc.prelude.swift. Warnings fail the check, except
unused values (examples show results without using them). A block that contains
`import PackageDescription` is a manifest and is skipped. Demo/OnboardingKit is type-checked too, as a
module of another package: it must use LiveDefaults' public API only, as an app that copies it would.

Usage: scripts/check-doc-snippets.py [build directory, default .build/debug]
Needs `swift build --target LiveDefaults --target LiveDefaultsEtcd` first (the fleet examples import the etcd product). Exits non-zero when an example does not compile.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, sys.argv[1] if len(sys.argv) > 1 else ".build/debug")
DECLARATION = re.compile(r"^(@\w+\s+)*(public\s+)?(final\s+)?(extension|enum|struct|class|actor)\s")


def blocks(text):
    """(first line number, lines) of each ```swift block."""
    found, current, start = [], None, 0
    for number, line in enumerate(text.splitlines(), 1):
        if current is None and line.strip() == "```swift":
            current, start = [], number + 1
        elif current is not None and line.strip() == "```":
            found.append((start, current))
            current = None
        elif current is not None:
            current.append(line)
    return found


def split(lines):
    """The block's file-scope declarations and its statements, each line with its offset."""
    declarations, statements, depth, inside = [], [], 0, False
    for offset, line in enumerate(lines):
        if not inside and DECLARATION.match(line):
            inside = True
        target = declarations if inside else statements
        target.append((offset, line))
        if inside:
            depth += line.count("{") - line.count("}")
            if depth <= 0:
                inside, depth = False, 0
    return declarations, statements


def generate(document):
    with open(os.path.join(ROOT, document)) as handle:
        text = handle.read()
    name = os.path.basename(document).removesuffix(".md")
    prelude_path = os.path.join(ROOT, "scripts", "doc-snippets", name + ".prelude.swift")
    if not os.path.exists(prelude_path) and ".docc" in document:
        prelude_path = os.path.join(ROOT, "scripts", "doc-snippets", "docc.prelude.swift")
    out = ["import Foundation", "import Observation", "import Dispatch", "import LiveDefaults"]
    # Fleet settings' examples use the etcd product (built first, as for the library: see the usage).
    out.append("import LiveDefaultsEtcd")
    if os.path.exists(prelude_path):
        out.append(f'#sourceLocation(file: "{prelude_path}", line: 1)')
        with open(prelude_path) as handle:
            out.extend(handle.read().splitlines())
    count = 0
    for start, lines in blocks(text):
        if any("import PackageDescription" in line for line in lines):
            continue
        count += 1
        declarations, statements = split(lines)
        for offset, line in declarations:
            out.append(f'#sourceLocation(file: "{document}", line: {start + offset})')
            out.append(line)
        out.append("do {")
        for offset, line in statements:
            if line.startswith("import "):
                continue
            out.append(f'#sourceLocation(file: "{document}", line: {start + offset})')
            out.append(line)
        out.append("}")
    out.append("#sourceLocation()")
    return name, count, "\n".join(out) + "\n"


def main():
    catalogs = [os.path.join("Sources", module, module + ".docc") for module in ("LiveDefaults", "LiveDefaultsEtcd")]
    documents = ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    for catalog in catalogs:
        documents += sorted(
            os.path.join(catalog, f) for f in os.listdir(os.path.join(ROOT, catalog)) if f.endswith(".md"))
    scratch = os.path.join(ROOT, ".build", "doc-snippets")
    os.makedirs(scratch, exist_ok=True)
    failed = False
    for document in documents:
        name, count, source = generate(document)
        if count == 0:
            continue
        path = os.path.join(scratch, "main.swift")
        with open(path, "w") as handle:
            handle.write(source)
        command = [
            "swiftc", "-typecheck", "-swift-version", "6", "-I", os.path.join(BUILD, "Modules"),
            "-I", os.path.join(ROOT, "Sources", "CInotifyTools"), "-I", os.path.join(ROOT, "Sources", "CCurl"),
            "-I", os.path.join(ROOT, "Sources", "CTimerFD"),
            "-I", os.path.join(ROOT, "Sources", "CObservationThread", "include"),
            "-module-cache-path", os.path.join(scratch, "ModuleCache"), path,
        ]
        result = subprocess.run(command, capture_output=True, text=True)
        output = (result.stdout + result.stderr).strip()
        # Examples show values without using them (`defaults.bool(forKey: "k")   // true`): unused
        # results and values are not findings; every other warning is.
        findings = [line for line in output.splitlines() if re.search(r"(error|warning):", line)]
        if result.returncode != 0 or any("[#no-usage]" not in line for line in findings):
            failed = True
            print(f"{document}: its Swift examples do not compile cleanly:\n{output}", file=sys.stderr)
        else:
            print(f"{document}: {count} Swift examples compile")
    # The demo is an example too: an app that copies Demo/OnboardingKit must compile, so it is
    # type-checked here as a module of another package, which sees only LiveDefaults' public API.
    demo = os.path.join(ROOT, "Demo", "OnboardingKit")
    sources = sorted(os.path.join(demo, f) for f in os.listdir(demo) if f.endswith(".swift"))
    command = [
        "swiftc", "-typecheck", "-swift-version", "6", "-parse-as-library", "-module-name", "OnboardingKit",
        "-I", os.path.join(BUILD, "Modules"), "-I", os.path.join(ROOT, "Sources", "CInotifyTools"),
        "-I", os.path.join(ROOT, "Sources", "CTimerFD"),
        "-I", os.path.join(ROOT, "Sources", "CObservationThread", "include"),
        "-module-cache-path", os.path.join(scratch, "ModuleCache"),
    ] + sources
    result = subprocess.run(command, capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or re.search(r"(error|warning):", output):
        failed = True
        print(f"Demo/OnboardingKit: does not compile with LiveDefaults' public API alone:\n{output}", file=sys.stderr)
    else:
        print(f"Demo/OnboardingKit: {len(sources)} files compile with LiveDefaults' public API alone")
    sys.exit(1 if failed else 0)


main()
