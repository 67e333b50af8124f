#!/usr/bin/env bash
# Answers from a zone tern signed against answers from the same zone signed by BIND
# (issue 24: "answers from a zone tern signed cost no more per query than from the same
# zone signed by BIND").
#
#   scripts/bench-signed.sh
#
# The zone `bench.` of NAMES hosts and its query mix (scripts/gen-bench-zone.py mixed,
# as scripts/bench-peers.sh), signed two ways with one ECDSA P-256 key signing everything
# (a CSK) and NSEC:
#   tern-signs  tern serves the unsigned file with a `dnssec-policy` and signs it itself
#   bind-signed tern serves the file BIND's dnssec-signzone signed (-z: the key signs all)
# Each tern alone under `valgrind --tool=callgrind`, pinned to SERVER_CPU: once it
# answers, one pass of CG_QUERIES queries warms it up, the counters are zeroed, the same
# queries are sent again at CG_RATE queries/s (dnsperf on CLIENT_CPU), and a dump gives
# user-space instructions per answered query. Every query has the DO bit (dnsperf -D), so
# every answer carries the signatures and denials. Also the average answer size (ECDSA
# P-256 signatures are 64 octets whoever made them, so the two should agree), the RRSIGs
# each zone holds (AXFR; tern also publishes and signs CDS and CDNSKEY for a new CSK),
# and the answering alone: `udp::answer_batch` inclusive per answered query, which
# leaves out the reactor's work per wake-up (how many queries each wake-up finds
# depends on the machine's load, not on the zone).
#
# Deterministic (callgrind), so one run each is enough; about 3 minutes.
#
# Environment (defaults in brackets):
#   TERN_BIN [target/release/tern]   NAMES [10000]   CG_QUERIES [5000]   CG_RATE [2000]
#   SERVER_CPU [0]   CLIENT_CPU [1]   BASE_PORT [26353] (two ports)
#   RESULTS [unset]: a directory to keep the raw results and logs in.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TERN_BIN=${TERN_BIN:-$ROOT/target/release/tern}
NAMES=${NAMES:-10000}
CG_QUERIES=${CG_QUERIES:-5000}
CG_RATE=${CG_RATE:-2000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BASE_PORT=${BASE_PORT:-26353}
READY_TIMEOUT=300

# stop_server, group_pids
# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"

die() {
    echo "bench-signed: $*" >&2
    exit 1
}

for tool in valgrind callgrind_control dnsperf dnssec-keygen dnssec-signzone kdig; do
    command -v "$tool" >/dev/null || die "$tool not found (make deps)"
done
[ -x "$TERN_BIN" ] || die "$TERN_BIN not found (make release)"

WORK=$(mktemp -d /tmp/tern-bench-signed.XXXXXX)
STARTED=()
cleanup() {
    local pgid
    for pgid in "${STARTED[@]}"; do
        kill -KILL -- "-$pgid" 2>/dev/null || true
    done
    if [ -n "${RESULTS:-}" ]; then
        mkdir -p "$RESULTS"
        cp -r "$WORK"/. "$RESULTS"/ 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

#----------- the zone, signed two ways --------------------------------------

mkdir -p "$WORK/unsigned" "$WORK/bind" "$WORK/keys"
python3 "$ROOT/scripts/gen-bench-zone.py" mixed --names "$NAMES" \
    --zone "$WORK/unsigned/bench.zone" --queries "$WORK/queries-all.txt" >/dev/null
head -n "$CG_QUERIES" "$WORK/queries-all.txt" >"$WORK/queries.txt"

key=$(dnssec-keygen -q -K "$WORK/keys" -a ECDSAP256SHA256 -f KSK bench.)
# -S: the keys found in -K ($key); -z: the KSK signs every RRset (a CSK); -N keep: the
# file's serial; -x: the DNSKEY RRset signed by the KSK only (there is no other key)
dnssec-signzone -S -K "$WORK/keys" -o bench. -z -N keep -x -f "$WORK/bind/bench.zone" \
    "$WORK/unsigned/bench.zone" >/dev/null
[ -s "$WORK/bind/bench.zone" ] || die "dnssec-signzone made nothing with $key"

cat >"$WORK/tern-signs.yaml" <<EOF
state-directory: $WORK/state
transfer: {allow: ["127.0.0.1/32"]}
dnssec:
  policies:
    - {name: csk, algorithm: ecdsap256sha256, keys: csk}
zones:
  list:
    - {origin: bench., file: $WORK/unsigned/bench.zone, dnssec-policy: csk}
EOF
cat >"$WORK/bind-signed.yaml" <<EOF
state-directory: $WORK/state-bind
transfer: {allow: ["127.0.0.1/32"]}
zones:
  list:
    - {origin: bench., file: $WORK/bind/bench.zone}
EOF

#----------- callgrind, each alone ------------------------------------------

echo "== answers with DO from bench. ($NAMES hosts) signed by tern and by BIND:"
echo "   $CG_QUERIES queries at $CG_RATE qps, each tern alone under callgrind"
echo "   $("$TERN_BIN" --version 2>/dev/null || echo tern), $(dnssec-signzone -V 2>&1 | head -1)"
echo
echo "| zone | RRSIGs (AXFR) | answered | lost | avg answer octets | Ir per answered query | answering (answer_batch) Ir/q |"
echo "|---|---:|---:|---:|---:|---:|---:|"
port=$BASE_PORT
for variant in tern-signs bind-signed; do
    dir="$WORK/run-$variant"
    mkdir -p "$dir"
    setsid taskset -c "$SERVER_CPU" valgrind --tool=callgrind --trace-children=yes \
        --callgrind-out-file="$dir/callgrind.%p.out" \
        "$TERN_BIN" serve --config "$WORK/$variant.yaml" --listen "127.0.0.1:$port" \
        --cores "$SERVER_CPU" --socket "$dir/tern.sock" >"$dir/log" 2>&1 </dev/null &
    pgid=$!
    STARTED+=("$pgid")
    python3 "$ROOT/scripts/wait-answer.py" --port "$port" --name host0.bench. \
        --timeout "$READY_TIMEOUT" >/dev/null || {
        tail -20 "$dir/log" >&2
        die "$variant did not answer"
    }
    kdig @127.0.0.1 -p "$port" AXFR bench. >"$dir/axfr.txt" 2>&1 || die "$variant: no AXFR"
    rrsigs=$(awk '$4 == "RRSIG"' "$dir/axfr.txt" | wc -l)
    timeout 600 taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" \
        -n 1 -Q "$CG_RATE" -q 50 -t 5 -D >"$dir/warm-up.dnsperf" 2>&1 || true
    pids=$(group_pids "$pgid" | tr '\n' ' ')
    # shellcheck disable=SC2086 # one argument per pid
    callgrind_control -z $pids >"$dir/callgrind-control.log" 2>&1
    timeout 600 taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" \
        -n 1 -Q "$CG_RATE" -q 50 -t 5 -D >"$dir/measured.dnsperf" 2>&1 || true
    # shellcheck disable=SC2086
    callgrind_control --dump=window $pids >>"$dir/callgrind-control.log" 2>&1
    stop_server "$pgid"
    completed=$(awk '/Queries completed:/ {print $3; exit}' "$dir/measured.dnsperf")
    lost=$(awk '/Queries lost:/ {print $3; exit}' "$dir/measured.dnsperf")
    size=$(awk '/Average packet size:/ {print $7; exit}' \
        "$dir/measured.dnsperf")
    ir=$(cat "$dir"/callgrind.*.out.[0-9]* 2>/dev/null | awk '/^summary:/ {s += $2} END {print s + 0}')
    answering=$(for dump in "$dir"/callgrind.*.out.[0-9]*; do
        callgrind_annotate --inclusive=yes "$dump" 2>/dev/null |
            awk '/tern_server::udp::answer_batch \[/ && !n++ {gsub(",", "", $1); print $1}'
    done | awk '{s += $1} END {print s + 0}')
    if [ "${completed:-0}" -gt 0 ] && [ "$ir" -gt 0 ]; then
        printf '| %s | %s | %s | %s | %s | %.0f | %.0f |\n' "$variant" "$rrsigs" "$completed" \
            "$lost" "$size" "$(echo "$ir / $completed" | bc -l)" \
            "$(echo "$answering / $completed" | bc -l)"
    else
        printf '| %s | %s | %s | %s | %s | failed (see logs) | |\n' "$variant" "$rrsigs" \
            "${completed:-0}" "${lost:-?}" "${size:-?}"
    fi
    port=$((port + 1))
done
