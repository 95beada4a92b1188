#!/usr/bin/env bash
# The fleet demo (docs/demo.md): a local etcd on loopback, three onboarding-demo processes that
# share the fleet suite com.example.onboarding, and one `defaults write` on that remote suite that
# changes the theme in all three at once.
#
#   Demo/fleet-demo.sh           unattended: starts etcd and the three demos (answers piped in),
#                                writes the theme once, shows that each demo redrew with it, stops
#                                everything; exits 0 when all three showed the new theme
#   Demo/fleet-demo.sh --serve   for a live showcase: starts etcd, prints the commands to run in
#                                three terminals and the `defaults write`, and waits; Ctrl-C stops etcd
#
# Environment (all optional):
#   LIVEDEFAULTS_BIN   a directory holding built onboarding-demo and defaults binaries
#                      (else the script builds them with `swift build`)
#   FLEET_DEMO_LOGS    a directory to keep each demo's output in (else they are removed with the rest)
#   FLEET_DEMO_THEME   the theme to write: light (the default), dark or system
#
# Nothing outside a scratch directory is touched: etcd's data, and each demo's XDG_CONFIG_HOME and
# XDG_CACHE_HOME, are in it. etcd listens on 127.0.0.1 only, on free ports, and every process the
# script started is stopped by its PID when it exits, however it exits.
set -euo pipefail

serve=false
for argument in "$@"; do
    case "$argument" in
    --serve) serve=true ;;
    -h | --help)
        sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "fleet-demo: unknown argument '$argument' (usage: Demo/fleet-demo.sh [--serve])" >&2
        exit 2
        ;;
    esac
done

suite=com.example.onboarding
new_theme=${FLEET_DEMO_THEME:-light}
case "$new_theme" in
system | light | dark) ;;
*)
    echo "fleet-demo: FLEET_DEMO_THEME must be system, light or dark, not '$new_theme'" >&2
    exit 2
    ;;
esac
first_theme=dark
[ "$new_theme" = dark ] && first_theme=light

etcd_binary=$(command -v etcd || true)
if [ -z "$etcd_binary" ]; then
    echo "fleet-demo: etcd is not installed (apt-get install etcd-server, or scripts/setup.sh)" >&2
    exit 3
fi
command -v python3 >/dev/null 2>&1 || {
    echo "fleet-demo: python3 is needed to find free ports (apt-get install python3, or scripts/setup.sh)" >&2
    exit 3
}

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${LIVEDEFAULTS_BIN:-}" ]; then
    bin=$LIVEDEFAULTS_BIN
else
    echo "fleet-demo: building onboarding-demo and defaults…" >&2
    (cd "$root" && swift build -q --product onboarding-demo && swift build -q --product defaults) >&2
    bin=$(cd "$root" && swift build --show-bin-path)
fi
for product in onboarding-demo defaults; do
    [ -x "$bin/$product" ] || {
        echo "fleet-demo: $bin/$product is not there (build it, or set LIVEDEFAULTS_BIN)" >&2
        exit 3
    }
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fleet-demo.XXXXXX")
logs=${FLEET_DEMO_LOGS:-$scratch/logs}
mkdir -p "$logs"
etcd_pid=""
demo_pids=()

# Stops what this script started, by PID: the demos first (they flush and exit), then etcd.
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in "${demo_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${demo_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ -n "$etcd_pid" ]; then
        kill -TERM "$etcd_pid" 2>/dev/null || true
        wait "$etcd_pid" 2>/dev/null || true
    fi
    rm -rf "$scratch"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Two loopback ports nothing listens on now.
read -r client_port peer_port < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))
for s in sockets: s.close()')
endpoint=http://127.0.0.1:$client_port
peer=http://127.0.0.1:$peer_port
remote="etcd://127.0.0.1:$client_port/$suite"

# etcd as a simple command, so that $! is etcd's own PID.
"$etcd_binary" --name fleet-demo --data-dir "$scratch/etcd" \
    --listen-client-urls "$endpoint" --advertise-client-urls "$endpoint" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "fleet-demo=$peer" \
    --log-level error >"$scratch/etcd.log" 2>&1 &
etcd_pid=$!

healthy() {
    # In a subshell, so that the descriptor and the redirections stay there.
    (exec 3<>"/dev/tcp/127.0.0.1/$client_port" &&
        printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && timeout 2 cat <&3) 2>/dev/null |
        grep -q '"health":"true"'
}
deadline=$((SECONDS + 30))
until healthy; do
    if ! kill -0 "$etcd_pid" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
        echo "fleet-demo: etcd did not start:" >&2
        cat "$scratch/etcd.log" >&2
        exit 1
    fi
    sleep 0.1
done

# The `defaults` command, with a scratch XDG_CONFIG_HOME (it never needs the real one here).
fleet_defaults() {
    XDG_CONFIG_HOME="$scratch/admin" XDG_CACHE_HOME="$scratch/admin/cache" "$bin/defaults" "$@"
}
mkdir -p "$scratch/admin"
fleet_defaults write "$remote" theme -string "$first_theme"
echo "etcd is running at $endpoint (PID $etcd_pid); the fleet suite $suite has theme $first_theme."

if $serve; then
    cat <<EOF

Run the demo in three other terminals (each with settings of its own, as on three machines):

  XDG_CONFIG_HOME=\$(mktemp -d) XDG_CACHE_HOME=\$(mktemp -d) $bin/onboarding-demo --managed --fleet $endpoint

Then change the theme on every one of them at once, from here or a fourth terminal:

  XDG_CONFIG_HOME=\$(mktemp -d) $bin/defaults write $remote theme -string $new_theme
  XDG_CONFIG_HOME=\$(mktemp -d) $bin/defaults read $remote
  XDG_CONFIG_HOME=\$(mktemp -d) $bin/defaults delete $remote theme    # each falls back to its own choice

Ctrl-C here stops etcd (PID $etcd_pid) and removes its data.
EOF
    wait "$etcd_pid"
    exit 0
fi

# Three "machines": each its own settings, the same fleet suite, managed so that the fleet's theme
# wins over the one each answered. Answers piped in: a name, an empty theme answer (the current
# one), notifications. `--live` keeps each on its main screen, redrawn on every change.
names=(Ada Grace Linus)
for index in 0 1 2; do
    home="$scratch/machine-$((index + 1))"
    mkdir -p "$home"
    printf '%s\n\nyes\n' "${names[$index]}" |
        XDG_CONFIG_HOME="$home" XDG_CACHE_HOME="$home/cache" \
            "$bin/onboarding-demo" --live --managed --fleet "$endpoint" >"$logs/demo-$((index + 1)).log" 2>&1 &
    demo_pids+=($!)
done

# The last main screen a demo printed.
last_main_screen() {
    awk '/^==== /{frame=""; main=($0 == "==== Main screen ====")} {frame = frame $0 "\n"} main {last=frame} END {printf "%s", last}' "$1"
}
# Waits until each demo's last main screen shows `theme`; false after `seconds`.
wait_for_theme() {
    local theme=$1 seconds=$2
    local deadline=$((SECONDS + seconds))
    while true; do
        local missing=0
        for index in 1 2 3; do
            last_main_screen "$logs/demo-$index.log" | grep -Eq "^  Theme +$theme\$" || missing=$((missing + 1))
        done
        [ $missing -eq 0 ] && return 0
        [ $SECONDS -ge $deadline ] && return 1
        for pid in "${demo_pids[@]}"; do
            kill -0 "$pid" 2>/dev/null || {
                echo "fleet-demo: a demo exited early" >&2
                return 1
            }
        done
        sleep 0.05
    done
}
show_logs() {
    for index in 1 2 3; do
        echo "---- demo $index (${names[$((index - 1))]}) ----" >&2
        cat "$logs/demo-$index.log" >&2
    done
}

if ! wait_for_theme "$first_theme" 60; then
    echo "fleet-demo: the three demos did not all show the fleet's theme $first_theme" >&2
    show_logs
    exit 1
fi
echo "Three demos are on their main screens with theme $first_theme (PIDs ${demo_pids[*]})."

echo "\$ defaults write $remote theme -string $new_theme"
fleet_defaults write "$remote" theme -string "$new_theme"
if ! wait_for_theme "$new_theme" 20; then
    echo "fleet-demo: not every demo showed theme $new_theme after the write" >&2
    show_logs
    exit 1
fi
for index in 1 2 3; do
    echo "demo $index (${names[$((index - 1))]}, PID ${demo_pids[$((index - 1))]}): theme $first_theme → $(
        last_main_screen "$logs/demo-$index.log" | sed -nE 's/^  Theme +//p'
    )"
done
echo "All three demos redrew with theme $new_theme from one write. Stopping them and etcd."
