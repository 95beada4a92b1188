#!/usr/bin/env bash
# The Debian package end to end, as CI runs it (docs/install.md): builds it (and an older build to upgrade
# from), checks the man page and lintian, then on this machine, once without and once with GNUstep's
# gnustep-base-runtime (which ships its own /usr/bin/defaults):
#   installs it with `apt-get install ./….deb` (over the older build), runs /usr/bin/livedefaults write and
#   read with `env -i PATH=/usr/bin:/bin` as root and as nobody, against a scratch XDG_CONFIG_HOME (never
#   ~/.config), checks `defaults --version`, `ldd`, `man -w defaults` and the bash, zsh and fish
#   completions, reinstalls it, removes and purges it and checks that nothing is left.
#
#   scripts/check-package.sh   (as root; it installs and removes packages)
#
# It leaves the machine as it found it, whatever was installed before: it notes every package dpkg knows
# (installed, or removed with its configuration files kept) when it starts, and when it exits, on failure
# too, it purges each package dpkg knows that it did not know then (the tools it needed, GNUstep's
# package, livedefaults, their dependencies) and installs again, at its version, each package that was
# installed then and is not now (GNUstep's package, when it was there before: the check runs without it
# and with it). Upgrades that a needed package pulls in (a newer perl-base, say) are not undone; nothing
# installed before is ever purged. A cleanup that does not restore that state fails the check.
# It refuses to start when livedefaults is already installed, or when GNUstep's package is installed and
# cannot be removed for a while on its own (another package depends on it) or installed again (its
# version is not in the package lists).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
[ "$(id -u)" -eq 0 ] || { echo "check-package: run it as root (it installs and removes packages)" >&2; exit 1; }
if dpkg -s livedefaults >/dev/null 2>&1; then
    echo "check-package: livedefaults is installed; remove it first (this check installs and removes it)" >&2
    exit 1
fi

# The packages dpkg knows (in any state but not-installed), one `name:arch` a line, sorted; with
# `installed`, only those installed (state ii); with `versions`, those as `name:arch=version`.
known_packages() {
    dpkg-query -W -f='${db:Status-Abbrev}\t${binary:Package}\t${Version}\n' | awk -F'\t' -v which="${1:-}" '
        which == "" && $1 !~ /^[up]n/ { print $2 }
        which == "installed" && $1 ~ /^ii/ { print $2 }
        which == "versions" && $1 ~ /^ii/ { print $2 "=" $3 }' | sort
}
is_installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^ii'; }

scratch=$(mktemp -d)
chmod 0755 "$scratch"
known_packages >"$scratch/known-before"
known_packages installed >"$scratch/installed-before"
known_packages versions >"$scratch/versions-before"
apt-mark showauto | sort >"$scratch/auto-before"

updated=false
apt_update_once() { $updated || { apt-get update -qq && updated=true; }; }

# Puts the machine's packages back as they were when the check started; says what is still different,
# and returns non-zero, when it could not.
restore_packages() {
    local new=() missing=() package status=0
    mapfile -t new < <(comm -13 "$scratch/known-before" <(known_packages))
    if [ ${#new[@]} -gt 0 ]; then
        echo "check-package: purging what it installed: ${new[*]}" >&2
        apt-get purge -y -qq "${new[@]}" >/dev/null || status=1
    fi
    mapfile -t missing < <(comm -23 "$scratch/installed-before" <(known_packages installed))
    if [ ${#missing[@]} -gt 0 ]; then
        echo "check-package: installing again what was installed before: ${missing[*]}" >&2
        apt_update_once
        apt-get install -y -qq --no-upgrade $(for package in "${missing[@]}"; do
            grep -m1 "^$package=" "$scratch/versions-before"
        done) >/dev/null || status=1
        for package in "${missing[@]}"; do
            if grep -qxF -e "$package" -e "${package%:*}" "$scratch/auto-before"; then apt-mark auto "$package" >/dev/null; fi
        done
    fi
    if ! diff "$scratch/known-before" <(known_packages) >"$scratch/known-diff" ||
        ! diff "$scratch/installed-before" <(known_packages installed) >"$scratch/installed-diff"; then
        echo "check-package: the machine's packages are not as they were (< before, > now):" >&2
        cat "$scratch/known-diff" "$scratch/installed-diff" >&2
        status=1
    fi
    return $status
}

cleanup() {
    local status=$?
    set +e
    trap - EXIT
    if ! restore_packages; then
        echo "check-package: its cleanup did not leave the machine as it found it" >&2
        status=1
    fi
    rm -rf "$scratch"
    [ $status -eq 0 ] && echo "check-package: passed" || echo "check-package: FAILED" >&2
    exit $status
}

fail() {
    echo "check-package: $*" >&2
    exit 1
}
step() { echo "== $* (at ${SECONDS} s)"; }

# GNUstep's package, when it is installed: the check runs first without it, so it is removed for a
# while (on its own, its configuration kept), and the cleanup installs it again.
gnustep_version=""
if is_installed gnustep-base-runtime; then
    gnustep_version=$(dpkg-query -W -f='${Version}' gnustep-base-runtime)
    apt_update_once
    removals=$(apt-get remove -s gnustep-base-runtime | grep -c '^Remv' || true)
    if [ "$removals" -ne 1 ]; then
        echo "check-package: removing gnustep-base-runtime would remove $removals packages; remove them first" >&2
        exit 1
    fi
    if ! apt-cache madison gnustep-base-runtime | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' |
        grep -qxF "$gnustep_version"; then
        echo "check-package: gnustep-base-runtime $gnustep_version is not in the package lists, so it could" \
            "not be installed again; remove it first" >&2
        exit 1
    fi
fi
trap cleanup EXIT
if [ -n "$gnustep_version" ]; then
    step "GNUstep's package is installed: removed for the check, installed again after it"
    apt-get remove -y -qq gnustep-base-runtime >/dev/null
fi

# Installs the packages that are missing (the cleanup purges them, and what they brought).
need() {
    local missing=() package
    for package in "$@"; do is_installed "$package" || missing+=("$package"); done
    [ ${#missing[@]} -gt 0 ] || return 0
    # From the package lists as they are; only when that fails (a list too old for the mirror, a package
    # it does not know), after an update.
    apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || { apt_update_once && apt-get install -y -qq "${missing[@]}" >/dev/null; }
}

step "tools: dpkg-dev (dpkg-shlibdeps), binutils, lintian, mandoc, groff-base, man-db, zsh, fish, bash-completion"
need dpkg-dev binutils lintian mandoc groff-base man-db zsh fish bash-completion python3

step "man page: against the command and docs/defaults-command.md, mandoc and groff"
scripts/check-man-page.py

step "build: the package, and an older build of it (revision 0) to upgrade from"
deb=$(scripts/package-deb.sh)
old=$(scripts/package-deb.sh --revision 0 --fast --output "$scratch/old")
version=$(dpkg-deb -f "$deb" Version)
upstream=${version%-*}
echo "$deb ($version)"

step "lintian: no errors"
lintian --fail-on error --tag-display-limit 0 "$deb"
dpkg-deb -f "$deb" Recommends | grep -qw bash-completion || fail "the package does not recommend bash-completion"

# A scratch config directory with one suite, readable by nobody too.
config=$scratch/config
mkdir -p "$config"

run_clean() { env -i PATH=/usr/bin:/bin XDG_CONFIG_HOME="$config" HOME="$scratch" "$@"; }

# Everything a user does with the installed package; $1 is the command `defaults` should be.
check_installed() {
    local defaults_is=$1 out
    dpkg-query -W -f='${Version}' livedefaults | grep -qx "$version" || fail "livedefaults $version is not installed"
    [ "$(stat -c '%U:%G %a' /etc/livedefaults/managed)" = "root:root 755" ] || fail "/etc/livedefaults/managed is not root's, 0755"
    if ldd /usr/bin/livedefaults | grep -Eq 'swift|/opt/|libFoundation|libdispatch'; then
        ldd /usr/bin/livedefaults
        fail "the installed binary needs the Swift toolchain"
    fi
    out=$(run_clean /usr/bin/livedefaults --version)
    [ "$out" = "defaults (LiveDefaults) $upstream" ] || fail "livedefaults --version printed '$out', not $upstream"
    rm -rf "${config:?}"/*
    run_clean /usr/bin/livedefaults write com.example.t theme light
    run_clean /usr/bin/livedefaults write com.example.t "font size" -int 14
    [ "$(run_clean /usr/bin/livedefaults read com.example.t theme)" = light ] || fail "read did not give the value written"
    # As a user without root or the toolchain: nobody, in a directory of its own.
    mkdir -p "$scratch/nobody" && chown nobody "$scratch/nobody"
    setpriv --reuid=nobody --regid=nogroup --clear-groups env -i PATH=/usr/bin:/bin XDG_CONFIG_HOME="$scratch/nobody" \
        HOME=/nonexistent sh -c '/usr/bin/livedefaults write com.example.n count -int 3 &&
            test "$(/usr/bin/livedefaults read com.example.n count)" = 3' || fail "write/read as nobody failed"
    man -w livedefaults | grep -q '/usr/share/man/man1/livedefaults.1.gz' || fail "man -w livedefaults"
    # The console is shipped, and refuses to listen beyond loopback (docs/console.md); it never starts here.
    out=$(run_clean /usr/bin/livedefaults-console --address 0.0.0.0 2>&1) && fail "livedefaults-console listened on 0.0.0.0"
    echo "$out" | grep -q 'not a loopback address' || fail "livedefaults-console --address 0.0.0.0 printed '$out'"
    man -w defaults >/dev/null || fail "man -w defaults finds no page"
    if [ "$defaults_is" = livedefaults ]; then
        [ "$(readlink -f /usr/bin/defaults)" = /usr/bin/livedefaults ] || fail "/usr/bin/defaults is not livedefaults"
        [ "$(run_clean defaults read com.example.t theme)" = light ] || fail "defaults read failed"
        [ "$(readlink -f "$(man -w defaults)")" = /usr/share/man/man1/livedefaults.1.gz ] || fail "man defaults is not ours"
    else
        dpkg -S /usr/bin/defaults | grep -q "^$defaults_is:" || fail "/usr/bin/defaults is not $defaults_is's"
        dpkg -V "$defaults_is" || fail "$defaults_is's files were changed"
    fi
    check_completions "$defaults_is"
}

# The completions, non-interactively, as each shell loads them from its standard directory.
check_completions() {
    local defaults_is=$1 expected=$'font size\ntheme' got
    # bash: bash-completion's loader finds the file by the command's name.
    got=$(run_clean bash -c 'source /usr/share/bash-completion/bash_completion
        _completion_loader livedefaults
        COMP_WORDS=(livedefaults read com.example.t ""); COMP_CWORD=3; _livedefaults
        printf "%s\n" "${COMPREPLY[@]}"')
    [ "$got" = "$expected" ] || fail "bash completion of keys gave '$got'"
    got=$(run_clean bash -c 'source /usr/share/bash-completion/bash_completion
        _completion_loader livedefaults
        COMP_WORDS=(livedefaults write com.example.t theme -bo); COMP_CWORD=4; _livedefaults
        printf "%s\n" "${COMPREPLY[@]}"')
    [ "$got" = $'-bool\n-boolean' ] || fail "bash completion of value flags gave '$got'"
    # zsh: the function from vendor-completions, with compadd and _files captured.
    got=$(run_clean zsh -f -c 'compadd() { while [[ $1 == -* && $1 != -- ]]; do shift; done; [[ $1 == -- ]] && shift
            print -rl -- "$@"; }
        _files() { print -r -- "(files)"; }
        fpath=(/usr/share/zsh/vendor-completions $fpath); autoload -Uz _livedefaults
        words=(livedefaults read com.example.t ""); CURRENT=4; _livedefaults')
    [ "$got" = "$expected" ] || fail "zsh completion of keys gave '$got'"
    got=$(run_clean zsh -f -c 'compadd() { while [[ $1 == -* && $1 != -- ]]; do shift; done; [[ $1 == -- ]] && shift
            print -rl -- "$@"; }
        fpath=(/usr/share/zsh/vendor-completions $fpath); autoload -Uz _livedefaults
        words=(livedefaults rea); CURRENT=2; _livedefaults')
    [ "$got" = $'read\nread-type' ] || fail "zsh completion of verbs gave '$got'"
    # fish: its own `complete -C`, from vendor_completions.d.
    got=$(run_clean fish -c 'complete -C "livedefaults read com.example.t "')
    [ "$got" = "$expected" ] || fail "fish completion of keys gave '$got'"
    got=$(run_clean fish -c 'complete -C "livedefaults read com.ex"')
    [ "$got" = "com.example.t" ] || fail "fish completion of domains gave '$got'"
    if [ "$defaults_is" = livedefaults ]; then
        got=$(run_clean fish -c 'complete -C "defaults read com.example.t th"')
        [ "$got" = theme ] || fail "fish completion of defaults gave '$got'"
    else
        # GNUstep's defaults is not ours to complete: no candidates from livedefaults.
        got=$(run_clean bash -c 'source /usr/share/bash-completion/bash_completion
            _completion_loader defaults
            COMP_WORDS=(defaults read com.example.t ""); COMP_CWORD=3; _livedefaults
            printf "%s" "${COMPREPLY[@]}"')
        [ -z "$got" ] || fail "bash completed GNUstep's defaults with '$got'"
    fi
}

# After remove and purge, nothing of the package is left.
check_gone() {
    local path
    dpkg -s livedefaults >/dev/null 2>&1 && fail "livedefaults is still known to dpkg"
    while read -r path; do
        path=${path#.}
        [ -n "$path" ] && [ "$path" != / ] || continue
        case "$path" in */) continue ;; esac
        [ -e "$path" ] || [ -L "$path" ] && fail "$path is left after purge"
    done < <(dpkg-deb --fsys-tarfile "$deb" | tar -t)
    [ -e /usr/share/doc/livedefaults ] && fail "/usr/share/doc/livedefaults is left"
    [ -e /etc/livedefaults ] && fail "/etc/livedefaults is left"
    [ -e /var/lib/dpkg/alternatives/defaults ] && fail "the defaults alternative is left"
    [ -e /etc/alternatives/defaults ] && fail "/etc/alternatives/defaults is left"
    return 0
}

step "without GNUstep: install the older build, upgrade, use, reinstall, remove, purge"
apt-get install -y -qq "$old" >/dev/null
apt-get install -y -qq "./$deb" >/dev/null
check_installed livedefaults
# The benchmark's command rows, on the installed binary (when the benchmark is built, as in CI after
# scripts/setup.sh --bench): no timing is asserted, but the rows must be measured.
if [ -x .build/debug/livedefaults-bench ]; then
    step "benchmark: the installed command against dconf read/write (quick)"
    .build/debug/livedefaults-bench --quick --only command --command /usr/bin/livedefaults | tee "$scratch/bench.txt"
    grep -q '^command: defaults read' "$scratch/bench.txt" || fail "the benchmark's command rows were not measured"
fi
apt-get install -y -qq --reinstall "./$deb" >/dev/null
check_installed livedefaults
apt-get remove -y -qq livedefaults >/dev/null
[ -e /usr/bin/livedefaults ] && fail "/usr/bin/livedefaults is left after remove"
[ -e /usr/bin/defaults ] || [ -L /usr/bin/defaults ] && fail "/usr/bin/defaults is left after remove"
dpkg --purge livedefaults >/dev/null
check_gone

step "with GNUstep's defaults installed first: it keeps /usr/bin/defaults"
need gnustep-base-runtime
apt-get install -y -qq "./$deb" >/dev/null
check_installed gnustep-base-runtime
step "GNUstep removed: defaults becomes livedefaults (the file trigger)"
apt-get remove -y -qq gnustep-base-runtime >/dev/null
check_installed livedefaults
step "GNUstep installed after livedefaults: it takes /usr/bin/defaults back"
apt-get install -y -qq gnustep-base-runtime >/dev/null
check_installed gnustep-base-runtime
step "livedefaults removed and purged: GNUstep's defaults is untouched"
dpkg --purge livedefaults >/dev/null
dpkg -V gnustep-base-runtime || fail "removing livedefaults changed gnustep-base-runtime's files"
dpkg -S /usr/bin/defaults | grep -q '^gnustep-base-runtime:' || fail "/usr/bin/defaults is no longer GNUstep's"
check_gone
