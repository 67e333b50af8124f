#!/usr/bin/env bash
# How long a SIGHUP takes with one zone file edited among many, and the
# memory before and after: tern serves DIR (made by scripts/gen-zones.py
# with COUNT zones), then ROUNDS times one zone's serial is raised in its
# file and tern gets a SIGHUP. The time of each reload is tern's own, from
# its log ("SIGHUP: reloading" to "reloaded:"), so that no probe polling
# the server competes with it for the CPU; then the edited zone's new serial
# is checked over DNS. Prints each reload's seconds, their median, and PSS
# at start and after the last reload.
#
#   scripts/bench-reload.sh DIR COUNT      (TERN_BIN, ROUNDS [6], PORT [5399])
#
# Figures go to docs/benchmarks.md ("Many small zones").
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TERN_BIN=${TERN_BIN:-$ROOT/target/release/tern}
ROUNDS=${ROUNDS:-6}
PORT=${PORT:-5399}
if [ $# -ne 2 ]; then
    echo "usage: $0 DIR COUNT" >&2
    exit 2
fi
dir=$1
count=$2
work=$(mktemp -d)
log=$work/tern.log
zone=z7.example
file=$dir/$zone.zone
serial_of() { sed -n "s/.*hostmaster\.$zone\. \([0-9]*\) .*/\1/p" "$file" | head -n 1; }
first_serial=$(serial_of)
[ -n "$first_serial" ] || { echo "$file: no serial found (made by gen-zones.py?)" >&2; exit 1; }

"$TERN_BIN" serve --zones "$dir" --listen 127.0.0.1:"$PORT" --socket "$work/control.sock" >"$log" 2>&1 &
pid=$!
cleanup() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    sed -i "s/hostmaster\.$zone\. [0-9]* /hostmaster.$zone. $first_serial /" "$file"
    rm -rf "$work"
}
trap cleanup EXIT

pss() { awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup"; }
# Started: the last zone answers (bounded: 600 tries of one second).
last="z$((count - 1)).example."
for _ in $(seq 600); do
    dig +short +time=1 +tries=1 @127.0.0.1 -p "$PORT" "$last" SOA | grep -q hostmaster && break
    kill -0 "$pid" || { cat "$log" >&2; exit 1; }
done
echo "PSS at start: $(pss) kB"

serial=$first_serial
for round in $(seq "$ROUNDS"); do
    serial=$((serial + 1))
    sed -i "s/hostmaster\.$zone\. [0-9]* /hostmaster.$zone. $serial /" "$file"
    kill -HUP "$pid"
    # Wait for this round's "reloaded:" line (bounded: 600 s).
    for _ in $(seq 6000); do
        [ "$(grep -c 'reloaded:' "$log")" -ge "$round" ] && break
        sleep 0.1
    done
    dig +short @127.0.0.1 -p "$PORT" "$zone." SOA | grep -q " $serial " ||
        { echo "round $round: $zone. does not serve serial $serial" >&2; exit 1; }
done
echo "PSS after $ROUNDS reloads: $(pss) kB"

python3 - "$log" <<'EOF'
import datetime, re, sys
times = []
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)Z info: (SIGHUP: reloading|reloaded:)", line)
    if m:
        times.append(datetime.datetime.fromisoformat(m.group(1)))
took = sorted((times[i + 1] - times[i]).total_seconds() for i in range(0, len(times) - 1, 2))
print("reloads, s:", " ".join("%.3f" % t for t in took), " median %.3f" % took[len(took) // 2])
EOF
