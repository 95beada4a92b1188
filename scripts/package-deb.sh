#!/usr/bin/env bash
# Builds the Debian package of the `defaults` command (docs/install.md):
#
#   scripts/package-deb.sh [--revision N] [--output DIR] [--fast] [--build-only]
#
# prints the path of .build/deb/livedefaults_<version>-<revision>_<arch>.deb. It ships the command, its man
# page and completions, the settings console livedefaults-console (docs/console.md) with its man page, (Recommends: bash-completion, which loads the bash one), and the empty managed
# directory /etc/livedefaults/managed. The version is
# CommandVersion.text (Sources/LiveDefaultsCommand/CommandVersion.swift), the one place it is kept;
# --revision is the Debian revision (1 unless given; the package check builds an older one with 0).
# The package is compressed with gzip -6 (dpkg-deb's own default level): -9 took 12.7 CPU-seconds for a
# package 0.4 % smaller, against 4.7. --fast compresses with gzip -1 (a package only installed to upgrade
# from: the check's older one; 1.6 CPU-seconds, 8 % larger); --build-only builds the binaries and makes no package
# (CI builds them while its other builds run).
#
# The binary is a release build with the Swift standard library and Foundation linked statically, so it
# runs without a Swift toolchain; `Depends` comes from dpkg-shlibdeps on that binary, plus libcurl4, which
# the etcd client loads with dlopen (Sources/CCurl/shim.h).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /opt/swift/usr/bin/swift ] && export PATH="/opt/swift/usr/bin:$PATH"

revision=1
output=.build/deb
level=6
build_only=false
while [ $# -gt 0 ]; do
    case "$1" in
    --revision) revision=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --fast) level=1; shift ;;
    --build-only) build_only=true; shift ;;
    *) echo "usage: scripts/package-deb.sh [--revision N] [--output DIR] [--fast] [--build-only]" >&2; exit 2 ;;
    esac
done

version=$(sed -n 's/^ *package static let text = "\([0-9][0-9A-Za-z.+~]*\)"$/\1/p' \
    Sources/LiveDefaultsCommand/CommandVersion.swift)
[ -n "$version" ] || { echo "package-deb: no version in CommandVersion.swift" >&2; exit 1; }
arch=$(dpkg --print-architecture)
maintainer=${LIVEDEFAULTS_MAINTAINER:-"LiveDefaults authors <livedefaults@example.org>"}

# The build is made for start-up, since scripts run the command hundreds of times (docs/design.md, "The
# `defaults` command's start-up"):
# - Static Foundation's link flags name -lcurl (for FoundationNetworking, which the command does not use):
#   an empty libcurl.a found first keeps libcurl out of the binary's NEEDED list, so that it is loaded only
#   for an etcd domain. Any symbol the binary did take from libcurl would fail the link here.
# - libstdc++ (the Swift runtime's C++ library) is linked statically, from GCC's own libstdc++.a found
#   first in the same directory: loading and relocating libstdc++.so was 40% of a `read`'s instructions.
#   Its licence (GPL with the GCC Runtime Library Exception) allows it (packaging/debian/copyright).
# - -no-pie: a fixed-address executable needs no relative relocations at start-up.
# - Concrete generic types' metadata is reached through accessors rather than mangled names: each mangled
#   name the runtime demangles checks the type's conformances, and the first check of each conformance scans
#   every conformance record of the binary (5,400 with static Foundation), 0.3 million instructions each.
scratch=.build/release-static
stubs=$scratch/link-stubs
mkdir -p "$stubs"
rm -f "$stubs/libcurl.a" "$stubs/libstdc++.a"
ar rc "$stubs/libcurl.a"
for compiler in clang gcc; do
    libstdcxx=$("$compiler" -print-file-name=libstdc++.a 2>/dev/null) || continue
    case "$libstdcxx" in /*) ln -s "$libstdcxx" "$stubs/libstdc++.a"; break ;; esac
done
[ -e "$stubs/libstdc++.a" ] || { echo "package-deb: no static libstdc++ (libstdc++-12-dev)" >&2; exit 1; }
swift build -c release --product defaults --static-swift-stdlib --scratch-path "$scratch" \
    -Xswiftc -L"$PWD/$stubs" -Xlinker -no-pie \
    -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors >&2
binary=$(swift build -c release --scratch-path "$scratch" --show-bin-path)/defaults
# The settings console (docs/console.md), built the same way; it links libmicrohttpd (Depends, below).
swift build -c release --product livedefaults-console --static-swift-stdlib --scratch-path "$scratch" \
    -Xswiftc -L"$PWD/$stubs" -Xlinker -no-pie \
    -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors >&2
console=$(swift build -c release --scratch-path "$scratch" --show-bin-path)/livedefaults-console
$build_only && exit 0

if ldd "$binary" | grep -Eq 'swift|libFoundation|libdispatch|libBlocksRuntime|libcurl|libstdc\+\+'; then
    ldd "$binary" >&2
    echo "package-deb: the binary needs the Swift toolchain's libraries (or libcurl, libstdc++) at start-up" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
install -D -m 0755 "$binary" "$root/usr/bin/livedefaults"
strip --strip-unneeded "$root/usr/bin/livedefaults"
install -D -m 0755 "$console" "$root/usr/bin/livedefaults-console"
strip --strip-unneeded "$root/usr/bin/livedefaults-console"
install -D -m 0644 packaging/defaults.1 "$root/usr/share/man/man1/livedefaults.1"
gzip -9n "$root/usr/share/man/man1/livedefaults.1"
install -D -m 0644 packaging/livedefaults-console.1 "$root/usr/share/man/man1/livedefaults-console.1"
gzip -9n "$root/usr/share/man/man1/livedefaults-console.1"
install -D -m 0644 packaging/completions/livedefaults.bash "$root/usr/share/bash-completion/completions/livedefaults"
ln -s livedefaults "$root/usr/share/bash-completion/completions/defaults"
install -D -m 0644 packaging/completions/_livedefaults "$root/usr/share/zsh/vendor-completions/_livedefaults"
install -D -m 0644 packaging/completions/livedefaults.fish "$root/usr/share/fish/vendor_completions.d/livedefaults.fish"
install -D -m 0644 packaging/completions/defaults.fish "$root/usr/share/fish/vendor_completions.d/defaults.fish"
doc=$root/usr/share/doc/livedefaults
install -D -m 0644 README.md "$doc/README.md"
install -D -m 0644 CHANGELOG.md "$doc/changelog"
gzip -9n "$doc/changelog"
install -D -m 0644 packaging/debian/copyright "$doc/copyright"
install -D -m 0644 packaging/debian/lintian-overrides "$root/usr/share/lintian/overrides/livedefaults"
# The directory of managed files (forced keys), root's and writable by root only, as the ownership rule
# asks (AdministeredSettingsGuide): an administrator's first forced key needs no mkdir, and running
# programs follow it from the start. dpkg removes it with the package only when it is empty.
install -d -m 0755 "$root/etc/livedefaults/managed"
# The Debian changelog of a package built from the repository: one entry, dated by the commit.
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
cat >"$doc/changelog.Debian" <<CHANGES
livedefaults ($version-$revision) unstable; urgency=medium

  * Built from the LiveDefaults repository at commit $commit. The project's
    changes are in /usr/share/doc/livedefaults/changelog.gz.

 -- $maintainer  $date
CHANGES
gzip -9n "$doc/changelog.Debian"

# Depends: what the binary's NEEDED libraries come from (dpkg-shlibdeps reads a debian/control).
mkdir -p "$work/shlibs/debian"
printf 'Source: livedefaults\n\nPackage: livedefaults\nArchitecture: any\n' >"$work/shlibs/debian/control"
depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O "$root/usr/bin/livedefaults" "$root/usr/bin/livedefaults-console" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
depends="$depends, libcurl4t64 | libcurl4"

mkdir -p "$root/DEBIAN"
install -m 0755 packaging/debian/postinst packaging/debian/prerm "$root/DEBIAN/"
install -m 0644 packaging/debian/triggers "$root/DEBIAN/"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: livedefaults
Version: $version-$revision
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Recommends: bash-completion
Section: utils
Priority: optional
Homepage: https://github.com/livedefaults/livedefaults
Description: macOS-compatible defaults command for settings kept as plists
 The defaults command reads, writes and watches settings kept as property
 lists in \$XDG_CONFIG_HOME, the files Foundation's UserDefaults uses on
 Linux, with the verbs, value flags, output and messages of macOS's defaults.
 It also watches a domain for changes made by any process, and reads and
 writes fleet settings kept in etcd.
 .
 The command is installed as livedefaults, and as defaults through
 update-alternatives unless another package (such as gnustep-base-runtime)
 provides that name. Completions for bash, zsh and fish are included.
 .
 livedefaults-console shows every layer of every setting in a browser page on
 the loopback address, live, and edits them with the command's checks.
CONTROL

mkdir -p "$output"
deb=$output/livedefaults_${version}-${revision}_${arch}.deb
dpkg-deb --root-owner-group -Zgzip -z"$level" --build "$root" "$deb" >&2
echo "$deb"
