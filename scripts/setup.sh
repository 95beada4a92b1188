#!/usr/bin/env bash
# Installs what LiveDefaults needs on a fresh Debian machine, and nothing that is already there:
# libinotifytools (the watcher links it), the tools the end-to-end tests drive (vim, python3, and
# systemd's systemd-analyze and systemd-sysusers, which check the example service unit without a
# running systemd), libcurl (the fleet-settings target, LiveDefaultsEtcd, calls it) and etcd with etcdctl (its tests
# start their own members on loopback; Debian's package also enables a system service, which the
# tests never use), libmicrohttpd (the settings console's HTTP server) and, for the console's tests, Chromium,
# its driver and Selenium.
# Needs root (or sudo) only when something is missing. Safe to run again.
#
#   scripts/setup.sh --bench   also what the benchmark needs to measure dconf side by side (its C
#                              library, dconf-service, a private session bus, a C compiler;
#                              dconf-cli and eatmydata for the command rows). Only the benchmark
#                              uses them; the library and its tests never do.
#   scripts/setup.sh --package also the tools scripts/check-package.sh uses (dpkg-dev, lintian,
#                              groff, man-db, and zsh, fish and bash-completion to try the
#                              completions in). The check installs what is missing itself, and
#                              purges it again when it ends; CI installs them once, here, so that
#                              each run does not install and purge about 120 packages.
set -euo pipefail

bench=false
package=false
for argument in "$@"; do
    case "$argument" in
    --bench) bench=true ;;
    --package) package=true ;;
    *)
        echo "usage: scripts/setup.sh [--bench] [--package]" >&2
        exit 2
        ;;
    esac
done

missing=()
dpkg -s libinotifytools0-dev >/dev/null 2>&1 || missing+=(libinotifytools0-dev)
command -v vim >/dev/null 2>&1 || missing+=(vim-nox)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
dpkg -s libcurl4-openssl-dev >/dev/null 2>&1 || missing+=(libcurl4-openssl-dev)
# The settings console (livedefaults-console): libmicrohttpd is its HTTP server; its tests drive the page in
# headless Chromium with Selenium (Debian's python3-selenium, for /usr/bin/python3).
dpkg -s libmicrohttpd-dev >/dev/null 2>&1 || missing+=(libmicrohttpd-dev)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
dpkg -s python3-selenium >/dev/null 2>&1 || missing+=(python3-selenium)
# readelf: CI checks that the KernelInotify build's `defaults` does not link libinotifytools.
command -v readelf >/dev/null 2>&1 || missing+=(binutils)
# mandoc: scripts/check-man-page.py lints packaging/defaults.1 with it.
command -v mandoc >/dev/null 2>&1 || missing+=(mandoc)
if $bench; then
    dpkg -s libdconf-dev >/dev/null 2>&1 || missing+=(libdconf-dev)
    dpkg -s dconf-service >/dev/null 2>&1 || missing+=(dconf-service)
    command -v dconf >/dev/null 2>&1 || missing+=(dconf-cli)
    command -v eatmydata >/dev/null 2>&1 || missing+=(eatmydata)
    command -v dbus-run-session >/dev/null 2>&1 || missing+=(dbus-daemon)
    command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
    command -v cc >/dev/null 2>&1 || missing+=(gcc)
fi
if $package; then
    for package_name in dpkg-dev lintian groff-base man-db zsh fish bash-completion; do
        dpkg -s "$package_name" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$package_name")
    done
fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
    if [ -x /opt/swift/usr/bin/swift ]; then
        echo "setup: swift is at /opt/swift/usr/bin; add it to PATH (export PATH=/opt/swift/usr/bin:\$PATH)" >&2
    else
        echo "setup: Swift 6 is needed (https://www.swift.org/install/linux/)" >&2
    fi
    exit 1
fi
