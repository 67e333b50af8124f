#!/usr/bin/env bash
# Soak test: SECONDS (default 600) of mixed valid, malformed and truncated
# traffic over UDP and TCP against a release build of tern on loopback.
#
#   scripts/soak.sh [SECONDS]
#
# Valid load: dnsperf over UDP (SOAK_QPS, default 20000 q/s) and over TCP
# (SOAK_TCP_QPS, default 1000 q/s). Hostile load: scripts/soak-traffic.py
# (malformed, truncated and garbage UDP; malformed, short and cut-off TCP
# messages; slow TCP clients; clients that never read). Every few seconds
# the server's RSS is sampled. At the end it asserts:
#   - the process is alive and every configured core is listed by
#     `tern stats`;
#   - valid queries are still answered on every core: 64 probes from 64
#     source ports (REUSEPORT spreads them) are all answered, and each
#     core's query counter moves;
#   - dnsperf got answers to at least SOAK_MIN_ANSWERED percent (default 90);
#   - valid TCP queries sent during the abuse were answered (soak-traffic.py);
#   - RSS after warm-up grew by at most SOAK_RSS_TOLERANCE percent (default
#     20) plus SOAK_RSS_SLACK_KB (default 8192) over the warm-up peak.
# Environment: SOAK_PORT (default 15353), SOAK_NO_BUILD=1 to use the
# existing target/release/tern, SOAK_KEEP=1 to keep the work directory.
# Loopback only, bounded by SECONDS; a trap stops everything it started.
set -euo pipefail

DURATION=${1:-600}
case $DURATION in
    ''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
if [ "$DURATION" -lt 30 ]; then
    echo "soak: SECONDS must be at least 30 (warm-up is the first third)" >&2
    exit 2
fi
PORT=${SOAK_PORT:-15353}
QPS=${SOAK_QPS:-20000}
TCP_QPS=${SOAK_TCP_QPS:-1000}
MIN_ANSWERED=${SOAK_MIN_ANSWERED:-90}
RSS_TOLERANCE=${SOAK_RSS_TOLERANCE:-20}
RSS_SLACK_KB=${SOAK_RSS_SLACK_KB:-8192}
SAMPLE_EVERY=5
CORES=0,1
CORE_COUNT=2

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/tern-soak.XXXXXX)
TERN=$ROOT/target/release/tern
PIDS=()

cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [ "${SOAK_KEEP:-0}" = 1 ]; then
        echo "soak: work directory kept: $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT INT TERM

fail() {
    echo "soak: FAIL: $*" >&2
    echo "soak: server log:" >&2
    tail -n 20 "$WORK/tern.log" >&2 || true
    exit 1
}

for tool in dnsperf python3; do
    command -v "$tool" >/dev/null || { echo "soak: $tool is missing (scripts/install-test-deps.sh)" >&2; exit 1; }
done
if [ "${SOAK_NO_BUILD:-0}" != 1 ]; then
    (cd "$ROOT" && cargo build --release -p tern --quiet)
fi

# The valid queries: names of zones/example.com.zone, every outcome.
cat >"$WORK/queries" <<'EOF'
www.example.com A
www.example.com AAAA
ns1.example.com A
mail.example.com A
example.com SOA
example.com NS
example.com MX
example.com TXT
web.example.com A
x.users.example.com A
nope.example.com A
host.lab.example.com A
_sip._udp.example.com SRV
example.com DNSKEY
www.example.org A
EOF

stats() {
    "$TERN" stats --socket "$WORK/control.sock"
}

# `core N: queries Q ...` -> "N Q" per core.
core_queries() {
    awk '$1 == "core" { sub(":", "", $2); print $2, $4 }'
}

"$TERN" serve --zones "$ROOT/zones" --listen "127.0.0.1:$PORT" --cores "$CORES" \
    --socket "$WORK/control.sock" --log-level warn >"$WORK/tern.log" 2>&1 &
SERVER=$!
PIDS+=("$SERVER")
python3 "$ROOT/scripts/wait-answer.py" --port "$PORT" --name www.example.com. --timeout 30 \
    >/dev/null || fail "the server did not start answering"
echo "soak: tern pid $SERVER on 127.0.0.1:$PORT, cores $CORES, ${DURATION}s" >&2

dnsperf -s 127.0.0.1 -p "$PORT" -d "$WORK/queries" -l "$DURATION" -c 16 -Q "$QPS" -t 2 \
    >"$WORK/dnsperf-udp.txt" 2>&1 &
PIDS+=("$!")
DNSPERF_UDP=$!
dnsperf -m tcp -s 127.0.0.1 -p "$PORT" -d "$WORK/queries" -l "$DURATION" -c 8 -Q "$TCP_QPS" -t 2 \
    >"$WORK/dnsperf-tcp.txt" 2>&1 &
PIDS+=("$!")
DNSPERF_TCP=$!
python3 "$ROOT/scripts/soak-traffic.py" --port "$PORT" --seconds "$DURATION" \
    >"$WORK/abuse.json" 2>"$WORK/abuse.err" &
PIDS+=("$!")
ABUSE=$!

# Sample RSS (kB) until the traffic ends.
START=$(date +%s)
: >"$WORK/rss"
while [ $(( $(date +%s) - START )) -lt "$DURATION" ]; do
    kill -0 "$SERVER" 2>/dev/null || fail "the server died after $(( $(date +%s) - START ))s"
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER/status")
    echo "$(( $(date +%s) - START )) $rss" >>"$WORK/rss"
    sleep "$SAMPLE_EVERY"
done

status=0
wait "$DNSPERF_UDP" || fail "dnsperf (UDP) failed: $(tail -n 5 "$WORK/dnsperf-udp.txt")"
wait "$DNSPERF_TCP" || fail "dnsperf (TCP) failed: $(tail -n 5 "$WORK/dnsperf-tcp.txt")"
wait "$ABUSE" || status=$?
echo "soak: hostile traffic: $(cat "$WORK/abuse.json")" >&2
[ "$status" = 0 ] || fail "valid TCP queries went unanswered during the abuse: $(cat "$WORK/abuse.err")"

# 1. Alive, every core listed.
kill -0 "$SERVER" 2>/dev/null || fail "the server died"
before=$(stats | core_queries)
[ "$(echo "$before" | wc -l)" = "$CORE_COUNT" ] || fail "stats lists $(echo "$before" | wc -l) cores, not $CORE_COUNT"

# 2. Valid queries answered on every core.
python3 - "$PORT" <<'EOF' || fail "valid probes after the soak were not all answered"
import socket, struct, sys
port = int(sys.argv[1])
query = lambda i: struct.pack("!HHHHHH", i, 0x0100, 1, 0, 0, 0) + b"\x03www\x07example\x03com\x00\x00\x01\x00\x01"
bad = 0
for i in range(64):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.sendto(query(i), ("127.0.0.1", port))
        try:
            answer = s.recv(4096)
            if answer[:2] != struct.pack("!H", i) or answer[3] & 0x0f != 0:
                bad += 1
        except socket.timeout:
            bad += 1
sys.exit(1 if bad else 0)
EOF
after=$(stats | core_queries)
while read -r core count; do
    previous=$(echo "$before" | awk -v c="$core" '$1 == c { print $2 }')
    [ "$count" -gt "$previous" ] || fail "core $core answered nothing after the soak ($previous -> $count)"
done <<<"$after"

# 3. dnsperf answers.
for mode in udp tcp; do
    sent=$(awk '/Queries sent:/ { print $3 }' "$WORK/dnsperf-$mode.txt")
    done_=$(awk '/Queries completed:/ { print $3 }' "$WORK/dnsperf-$mode.txt")
    qps=$(awk '/Queries per second:/ { print $4 }' "$WORK/dnsperf-$mode.txt")
    [ -n "$sent" ] && [ "$sent" -gt 0 ] || fail "dnsperf ($mode) sent nothing"
    echo "soak: dnsperf $mode: $done_ of $sent answered, $qps q/s" >&2
    [ $(( done_ * 100 )) -ge $(( sent * MIN_ANSWERED )) ] ||
        fail "dnsperf ($mode) got answers to fewer than $MIN_ANSWERED% of its queries"
done

# 4. Memory flat after warm-up (the first third of the run).
read -r warm_peak final_peak samples < <(awk -v warm=$(( DURATION / 3 )) '
    { if ($1 <= warm) { if ($2 > w) w = $2 } else { if ($2 > f) f = $2 }; n++ }
    END { print w + 0, f + 0, n }' "$WORK/rss")
limit=$(( warm_peak + warm_peak * RSS_TOLERANCE / 100 + RSS_SLACK_KB ))
echo "soak: RSS ${warm_peak} kB at warm-up peak, ${final_peak} kB peak after, limit ${limit} kB ($samples samples)" >&2
[ "$final_peak" -le "$limit" ] || fail "RSS grew from ${warm_peak} kB to ${final_peak} kB"

echo "soak: final stats:" >&2
stats >&2
echo "soak: PASS (${DURATION}s)" >&2
