#!/usr/bin/env python3
"""Checks the defaults(1) man page (packaging/defaults.1) so that it cannot drift from the command.

- It renders without warnings: `mandoc -T lint -W style` and `groff -ww` report nothing (mandoc's notes
  that its own page index lacks a page named in SEE ALSO are left out: they depend on what the machine has
  installed, not on the page).
- Every verb (Sources/LiveDefaultsCommand/CommandVerb.swift, the table `defaults help` is generated from),
  every value flag (ValueArguments.swift), `--version`, every environment variable the command reads and
  every exit status (DefaultsCommandRunner.swift) is in both the man page and docs/defaults-command.md;
  and the man page names no verb or value flag that the command does not have.

Usage: scripts/check-man-page.py   (exit status 1 and one line per problem when anything is wrong)
"""
import pathlib
import re
import shutil
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
page_path = root / "packaging/defaults.1"
page = page_path.read_text()
guide = (root / "docs/defaults-command.md").read_text()
sources = root / "Sources/LiveDefaultsCommand"
problems = []

# Rendering.
for tool in ("mandoc", "groff"):
    if shutil.which(tool) is None:
        problems.append(f"{tool} is not installed (apt-get install {'mandoc' if tool == 'mandoc' else 'groff-base'})")
if shutil.which("mandoc"):
    lint = subprocess.run(["mandoc", "-T", "lint", "-W", "style", str(page_path)], capture_output=True, text=True)
    for line in (lint.stdout + lint.stderr).splitlines():
        if "mandoc.db lacks" not in line:
            problems.append(f"mandoc: {line}")
if shutil.which("groff"):
    groff = subprocess.run(["groff", "-ww", "-mandoc", "-Tutf8", "-z", str(page_path)], capture_output=True, text=True)
    problems += [f"groff: {line}" for line in groff.stderr.splitlines()]

# What the command has.
verb_source = "".join(path.read_text() for path in sorted(sources.glob("CommandVerb*.swift")))
verbs = re.findall(r'CommandVerb\(\s*"([a-z-]+)"', verb_source)
aliases = [alias for group in re.findall(r'aliases: \[([^\]]*)\]', verb_source) for alias in re.findall(r'"([a-z-]+)"', group)]
flag_source = (sources / "ValueArguments.swift").read_text()
flags = [name for group in re.findall(r'Flag\(\s*names: \[([^\]]*)\]', flag_source) for name in re.findall(r'"(-[a-z-]+)"', group)]
environment = set()
for path in list(sources.glob("*.swift")) + list((root / "Sources/LiveDefaultsEtcd").glob("*.swift")):
    text = path.read_text()
    names = re.findall(r'(?:environment\[|variable\(|getenv\()"([A-Z_]+)"', text)
    # Variables read in a loop: `for name in ["XDG_DATA_HOME", …] { … variable(name) }`.
    for group in re.findall(r'for name in \[([^\]]*)\] \{[^}]*variable\(name\)', text):
        names += re.findall(r'"([A-Z_]+)"', group)
    for name in names:
        if path.parent == sources or name.startswith("ETCDCTL_"):
            environment.add(name)
runner = (sources / "DefaultsCommandRunner.swift").read_text()
statuses = re.findall(r'package static let \w+: Int32 = (\d+)', runner)
if len(verbs) < 10 or len(flags) < 10 or not environment or len(statuses) < 3:
    problems.append("check-man-page.py no longer finds the verbs, flags, variables or statuses in the sources")

# The man page: `.It Cm verb`, `Fl flag`, `.It Ev NAME`, `.It status` under EXIT STATUS.
page_verbs = set(re.findall(r'^\.It Cm ([a-z-]+)', page, re.M)) | set(re.findall(r'^\.Cm ([a-z-]+)$', page, re.M))
page_flags = set("-" + flag for flag in re.findall(r'\bFl ([A-Za-z][A-Za-z-]*)', page))
page_environment = set(re.findall(r'^\.It Ev ([A-Z_]+)', page, re.M))
exit_section = page.split(".Sh EXIT STATUS", 1)[-1].split(".Sh ", 1)[0]
page_statuses = set(re.findall(r'^\.It (\d+)$', exit_section, re.M))

for verb in verbs + aliases:
    if verb not in page_verbs:
        problems.append(f"defaults.1: the verb {verb} is missing")
    if f"`{verb}`" not in guide and f"`{verb} " not in guide:
        problems.append(f"docs/defaults-command.md: the verb {verb} is missing")
for flag in flags:
    if flag not in page_flags:
        problems.append(f"defaults.1: the value flag {flag} is missing")
    if f"`{flag}`" not in guide and f"`{flag} " not in guide and f"`{flag}/" not in guide and f"/`{flag}`" not in guide:
        problems.append(f"docs/defaults-command.md: the value flag {flag} is missing")
for name in sorted(environment):
    if name not in page_environment:
        problems.append(f"defaults.1: the environment variable {name} is missing under ENVIRONMENT")
    if name not in guide:
        problems.append(f"docs/defaults-command.md: the environment variable {name} is missing")
for status in statuses:
    if status not in page_statuses:
        problems.append(f"defaults.1: exit status {status} is missing under EXIT STATUS")
    if f"| {status} |" not in guide and f"status {status}" not in guide and f"exit {status}" not in guide:
        problems.append(f"docs/defaults-command.md: exit status {status} is missing")
if "Fl \\-version" not in page or "--version" not in guide:
    problems.append("--version is missing from defaults.1 or docs/defaults-command.md")
known_options = {"-currentHost", "-host", "-g", "-globalDomain", "-app", "-json", "--json", "--version", "-\\-json", "-\\-version"}
for flag in sorted(page_flags - set(flags) - known_options):
    problems.append(f"defaults.1: names {flag}, which the command does not have")
for verb in sorted(page_verbs - set(verbs) - set(aliases)):
    problems.append(f"defaults.1: names the verb {verb}, which the command does not have")

for problem in problems:
    print(problem, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"defaults.1: {len(verbs) + len(aliases)} verbs, {len(flags)} value flags, {len(environment)} variables "
      f"and {len(statuses)} exit statuses, as in the command and docs/defaults-command.md; mandoc and groff clean")
