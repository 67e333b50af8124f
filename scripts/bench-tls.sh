#!/usr/bin/env bash
# DNS over TLS and TCP: tern against NSD and BIND, side by side, on loopback (issue 26).
#
#   scripts/bench-tls.sh [throughput] [new] [udp-impact] [idle]
#
# Without arguments: all four.
#
# Every server serves the same generated zone `bench.` (scripts/gen-bench-zone.py, NAMES
# hosts, the mixed query file of bench-peers.sh) on its own 127.0.0.1 ports, UDP/TCP and
# DoT, with the same ECDSA P-256 self-signed certificate (made here by openssl). Each is
# pinned to SERVER_CPU with taskset (tern also with `cores: [SERVER_CPU]`, NSD
# server-count 1, named -n 1); the load generators are pinned to CLIENT_CPU. NSD runs with
# `rrl-ratelimit: 0` (its default rate limit would drop most of a flood).
#
# throughput  For ROUNDS rounds, each server in turn, DURATION s as fast as dnsperf goes:
#             dot     dnsperf -m dot -c 4 -q 100 (4 persistent TLS connections)
#             tcp2    dnsperf -m tcp -c 50 -q 100 (50 connections, 2 queries in flight each)
#             tcp20   dnsperf -m tcp -c 50 -q 1000 (20 in flight each: the deep pipeline)
#             Median QPS, the server processes' CPU time per answered query and the TCP
#             segments per answered query (`nstat` TcpOutSegs over the run, divided by the
#             answers: on loopback both sides' segments, the queries' and ACKs too, and any
#             other loopback traffic of the machine meanwhile). MODES selects.
# new         New TLS connections, one query each: benches' dot-load (a Rust client,
#             rustls, TLS 1.3, NEW_THREADS blocking threads on CLIENT_CPU) for DURATION s,
#             without session resumption and with it (every connection after a thread's
#             first offers a ticket). Median connections/s over ROUNDS and how many
#             resumed.
# udp-impact  tern alone: dnsperf over UDP at UDP_RATE queries/s for DURATION s, once
#             alone and once while dot-load opens new connections (no resumption) as fast
#             as it can: UDP answers, lost, average and largest latency, and the handshakes
#             done meanwhile. Both clients share CLIENT_CPU.
# idle        tern alone, with tcp.max-connections 20000 and a long idle timeout: dot-load
#             opens IDLE_CONNECTIONS TLS connections (handshake and one query each) and
#             holds them; tern's VmRSS before and while they are held (/proc), then
#             dnsperf over UDP at UDP_RATE for DURATION s while they are still open.
#             Raises `ulimit -n` for itself and the servers.
#
# Environment (defaults in brackets):
#   TERN_BIN [target/release/tern]   DOT_LOAD [target/release/dot-load]
#   SERVERS ["tern nsd named"]   NAMES [10000]   ROUNDS [3]   DURATION [10]
#   SERVER_CPU [0]   CLIENT_CPU [1]   BASE_PORT [26353] (BASE_PORT..+2 plain, +10..+12 DoT)
#   MODES ["dot tcp2 tcp20"] (throughput)
#   NEW_THREADS [16]   UDP_RATE [20000]   IDLE_CONNECTIONS [10000]   RESULTS [unset]: keep
#   the raw outputs there.
# Run time with the defaults: about 9 minutes.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TERN_BIN=${TERN_BIN:-$ROOT/target/release/tern}
DOT_LOAD=${DOT_LOAD:-$ROOT/target/release/dot-load}
SERVERS=${SERVERS:-"tern nsd named"}
MODES=${MODES:-"dot tcp2 tcp20"}
NAMES=${NAMES:-10000}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BASE_PORT=${BASE_PORT:-26353}
NEW_THREADS=${NEW_THREADS:-16}
UDP_RATE=${UDP_RATE:-20000}
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-10000}
QUIET_BUSY=${QUIET_BUSY:-20}
QUIET_WAIT=${QUIET_WAIT:-10}
READY_TIMEOUT=60
IDLE_TIMEOUT=300 # s for dot-load to open the idle connections
FD_LIMIT=65536

SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(throughput new udp-impact idle)

# stop_server, group_pids, group_ticks, wait_quiet
# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"

die() {
    echo "bench-tls: $*" >&2
    exit 1
}
need() {
    command -v "$1" >/dev/null || die "$1 not found ($2)"
}

WORK=$(mktemp -d /tmp/tern-bench-tls.XXXXXX)
STARTED=()
CLIENT_PID=
cleanup() {
    local pgid
    [ -n "$CLIENT_PID" ] && kill -KILL "$CLIENT_PID" 2>/dev/null
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

index_of() {
    case $1 in
        tern) echo 0 ;;
        nsd) echo 1 ;;
        named) echo 2 ;;
        *) die "unknown server $1 (tern, nsd, named)" ;;
    esac
}
port_of() { echo $((BASE_PORT + $(index_of "$1"))); }
tls_port_of() { echo $((BASE_PORT + 10 + $(index_of "$1"))); }

version_of() {
    case $1 in
        tern) echo "tern $(stat -c %y "$TERN_BIN" | cut -d. -f1)" ;;
        nsd) nsd -v 2>&1 | head -1 ;;
        named) named -v ;;
    esac
}

out_segments() { # the machine's TCP segments sent so far (nstat, history untouched)
    nstat -asz TcpOutSegs | awk '$1 == "TcpOutSegs" {print $2}'
}

dnsperf_field() { # FILE PATTERN: the first number after the pattern
    awk -v pattern="$2" 'i = index($0, pattern) { $0 = substr($0, i + length(pattern)); print $1; exit }' "$1"
}

#----------- servers --------------------------------------------------------

# start_server NAME [TERN_EXTRA_YAML]: starts NAME pinned to SERVER_CPU in a new process
# group; sets PGID and RUN_DIR.
start_server() {
    local name=$1 extra=${2:-} dir port tls
    dir=$(mktemp -d "$WORK/run-$name.XXXX")
    port=$(port_of "$name")
    tls=$(tls_port_of "$name")
    local command
    case $name in
        tern)
            cat >"$dir/tern.yaml" <<EOF
listen: ['127.0.0.1:$port']
cores: [$SERVER_CPU]
zones:
  directory: $WORK/zones
control-socket: $dir/tern.sock
tls:
  listen: ['127.0.0.1:$tls']
  certificate: $WORK/cert.pem
  key: $WORK/key.pem
$extra
EOF
            command=("$TERN_BIN" serve --config "$dir/tern.yaml")
            ;;
        nsd)
            cat >"$dir/nsd.conf" <<EOF
server:
    ip-address: 127.0.0.1@$port
    ip-address: 127.0.0.1@$tls
    tls-port: $tls
    tls-service-key: "$WORK/key.pem"
    tls-service-pem: "$WORK/cert.pem"
    do-ip6: no
    server-count: 1
    tcp-count: 1000
    username: ""
    chroot: ""
    zonesdir: "$WORK/zones"
    database: ""
    pidfile: "$dir/nsd.pid"
    xfrdfile: "$dir/xfrd.state"
    xfrdir: "$dir"
    zonelistfile: "$dir/zone.list"
    logfile: "$dir/nsd-internal.log"
    verbosity: 1
    rrl-ratelimit: 0
    rrl-whitelist-ratelimit: 0
remote-control:
    control-enable: no
zone:
    name: bench
    zonefile: bench.zone
EOF
            command=(nsd -d -c "$dir/nsd.conf")
            ;;
        named)
            cat >"$dir/named.conf" <<EOF
tls bench-tls {
    key-file "$WORK/key.pem";
    cert-file "$WORK/cert.pem";
};
options {
    directory "$dir";
    pid-file "$dir/named.pid";
    session-keyfile "$dir/session.key";
    managed-keys-directory "$dir";
    listen-on port $port { 127.0.0.1; };
    listen-on port $tls tls bench-tls { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    dnssec-validation no;
    notify no;
    tcp-clients 1000;
};
controls { };
zone "bench." {
    type primary;
    file "$WORK/zones/bench.zone";
    check-names ignore;
};
EOF
            command=(named -g -n 1 -c "$dir/named.conf")
            ;;
    esac
    setsid taskset -c "$SERVER_CPU" "${command[@]}" >"$dir/log" 2>&1 </dev/null &
    PGID=$!
    STARTED+=("$PGID")
    RUN_DIR=$dir
    python3 "$ROOT/scripts/wait-answer.py" --port "$port" --name host1.bench. \
        --timeout "$READY_TIMEOUT" >/dev/null || {
        tail -20 "$dir/log" >&2
        die "$name did not answer"
    }
    # the TLS listener too: one DoT query answered
    local i
    for i in $(seq 100); do
        kdig -p "$tls" @127.0.0.1 +tls +short +time=2 +retry=0 host1.bench. A >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    tail -20 "$dir/log" >&2
    die "$name did not answer over TLS on $tls"
}

# A name of the zone that has an A record, for dot-load's one query.
QUERY_NAME=

#----------- throughput ------------------------------------------------------

section_throughput() {
    echo
    echo "== throughput: $ROUNDS rounds x ${DURATION} s each, servers in turn"
    declare -A PGIDS=()
    local name
    for name in $SERVERS; do
        start_server "$name"
        PGIDS[$name]=$PGID
    done
    : >"$WORK/throughput.tsv"
    local round mode
    for round in $(seq "$ROUNDS"); do
        for mode in $MODES; do
            for name in $SERVERS; do
                local args port out
                case $mode in
                    dot) port=$(tls_port_of "$name") args=(-m dot -c 4 -q 100) ;;
                    tcp2) port=$(port_of "$name") args=(-m tcp -c 50 -q 100) ;;
                    tcp20) port=$(port_of "$name") args=(-m tcp -c 50 -q 1000) ;;
                esac
                out="$WORK/throughput/$name.$mode.$round.dnsperf"
                mkdir -p "$WORK/throughput"
                wait_quiet
                local before after segments
                before=$(group_ticks "${PGIDS[$name]}")
                segments=$(out_segments)
                taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" "${args[@]}" \
                    -d "$WORK/queries.txt" -l "$DURATION" -t 2 >"$out" 2>&1 || true
                after=$(group_ticks "${PGIDS[$name]}")
                segments=$(($(out_segments) - segments))
                local qps completed
                qps=$(dnsperf_field "$out" "Queries per second:")
                completed=$(dnsperf_field "$out" "Queries completed:")
                printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "${qps:-0}" "${completed:-0}" \
                    $((after - before)) "$segments" >>"$WORK/throughput.tsv"
                printf '  round %s %-6s %-6s %10s q/s %6.2f us/q %5.2f segments/q (busy before: %s %%)\n' \
                    "$round" "$mode" "$name" "${qps:-?}" \
                    "$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v c="${completed:-0}" \
                        'BEGIN {printf "%.2f", t * 1e6 / hz / (c + (c == 0))}')" \
                    "$(awk -v s="$segments" -v c="${completed:-0}" 'BEGIN {printf "%.2f", s / (c + (c == 0))}')" \
                    "$QUIET"
            done
        done
    done
    for name in $SERVERS; do
        stop_server "${PGIDS[$name]}"
    done
    python3 - "$WORK/throughput.tsv" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
tick_us = 1e6 / int(sys.argv[2])
names = list(dict.fromkeys(r[0] for r in rows))
modes = {"dot": "DoT, dnsperf -m dot -c 4 -q 100",
         "tcp2": "TCP, -c 50 -q 100 (2 in flight each)",
         "tcp20": "TCP, -c 50 -q 1000 (20 in flight each)"}
print()
print("medians over rounds; us/q = the server's own CPU time per answered query;")
print("seg/q = TCP segments sent on the machine (both sides) per answered query")
print("| mode | " + " | ".join(f"{n} q/s | {n} us/q | {n} seg/q" for n in names) + " | tern / best peer |")
print("|---|" + "---:|---:|---:|" * len(names) + "---:|")
for mode, label in modes.items():
    if not any(r[1] == mode for r in rows):
        continue
    cells, qps = [], {}
    for n in names:
        runs = [r for r in rows if r[0] == n and r[1] == mode]
        if not runs:
            cells += ["n/a", "n/a", "n/a"]
            continue
        q = statistics.median(float(r[2]) for r in runs)
        c = statistics.median(int(r[4]) * tick_us / max(int(r[3]), 1) for r in runs)
        s = statistics.median(int(r[5]) / max(int(r[3]), 1) for r in runs)
        qps[n] = q
        cells += [f"{q:.0f}", f"{c:.2f}", f"{s:.2f}"]
    peers = [v for n, v in qps.items() if n != "tern"]
    ratio = f"{qps['tern'] / max(peers):.2f}" if "tern" in qps and peers and max(peers) > 0 else "n/a"
    print(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
PY
}

#----------- new connections ------------------------------------------------

section_new() {
    echo
    echo "== new TLS connections, one query each: dot-load, $NEW_THREADS threads, ${DURATION} s, $ROUNDS rounds"
    declare -A PGIDS=()
    local name
    for name in $SERVERS; do
        start_server "$name"
        PGIDS[$name]=$PGID
    done
    : >"$WORK/new.tsv"
    mkdir -p "$WORK/new"
    local round resume
    for round in $(seq "$ROUNDS"); do
        for resume in no yes; do
            for name in $SERVERS; do
                local flag=() out before after
                [ "$resume" = yes ] && flag=(--resume)
                out="$WORK/new/$name.$resume.$round.out"
                wait_quiet
                before=$(group_ticks "${PGIDS[$name]}")
                taskset -c "$CLIENT_CPU" "$DOT_LOAD" new "127.0.0.1:$(tls_port_of "$name")" \
                    "$QUERY_NAME" --threads "$NEW_THREADS" --seconds "$DURATION" "${flag[@]}" >"$out" 2>&1 || true
                after=$(group_ticks "${PGIDS[$name]}")
                local line answered failed resumed rate
                line=$(grep '^new:' "$out" || echo "new: 0 answered 0 failed 0 resumed in 1 s: 0 connections/s")
                read -r answered failed resumed rate < <(echo "$line" |
                    awk '{print $2, $4, $6, $(NF-1)}')
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$resume" "$rate" "$answered" "$failed" \
                    "$resumed" $((after - before)) >>"$WORK/new.tsv"
                printf '  round %s resume=%-3s %-6s %s\n' "$round" "$resume" "$name" "$line"
            done
        done
    done
    for name in $SERVERS; do
        stop_server "${PGIDS[$name]}"
    done
    python3 - "$WORK/new.tsv" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
tick_us = 1e6 / int(sys.argv[2])
names = list(dict.fromkeys(r[0] for r in rows))
print()
print("medians over rounds; us/conn = the server's own CPU time per answered connection")
print("| resumption | " + " | ".join(f"{n} conn/s | {n} resumed | {n} us/conn" for n in names) + " | tern / nsd |")
print("|---|" + "---:|---:|---:|" * len(names) + "---:|")
for resume in ("no", "yes"):
    cells, rate = [], {}
    for n in names:
        runs = [r for r in rows if r[0] == n and r[1] == resume]
        q = statistics.median(float(r[2]) for r in runs)
        res = statistics.median(int(r[5]) / max(int(r[3]), 1) for r in runs)
        c = statistics.median(int(r[6]) * tick_us / max(int(r[3]), 1) for r in runs)
        rate[n] = q
        cells += [f"{q:.0f}", f"{100 * res:.0f} %", f"{c:.0f}"]
    ratio = f"{rate['tern'] / rate['nsd']:.2f}" if rate.get("nsd") and "tern" in rate else "n/a"
    print(f"| {resume} | " + " | ".join(cells) + f" | {ratio} |")
PY
}

#----------- UDP while handshaking ------------------------------------------

udp_run() { # OUT: dnsperf over UDP against tern at UDP_RATE for DURATION s
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$(port_of tern)" -d "$WORK/queries.txt" \
        -l "$DURATION" -Q "$UDP_RATE" -t 2 >"$1" 2>&1 || true
}

udp_line() { # FILE: answered, lost, average and largest latency
    local out=$1
    printf 'answered %s lost %s latency avg %s ms max %s ms' \
        "$(dnsperf_field "$out" "Queries completed:")" "$(dnsperf_field "$out" "Queries lost:")" \
        "$(awk '/Average Latency/ {printf "%.3f", $4 * 1000}' "$out")" \
        "$(awk '/Average Latency/ {gsub(/[(),]/, ""); printf "%.3f", $8 * 1000}' "$out")"
}

section_udp_impact() {
    echo
    echo "== UDP at $UDP_RATE q/s to tern for ${DURATION} s, alone and during a flood of new TLS connections"
    start_server tern
    local pgid=$PGID
    mkdir -p "$WORK/impact"
    wait_quiet
    udp_run "$WORK/impact/alone.dnsperf"
    echo "  alone:          $(udp_line "$WORK/impact/alone.dnsperf")"
    wait_quiet
    taskset -c "$CLIENT_CPU" "$DOT_LOAD" new "127.0.0.1:$(tls_port_of tern)" "$QUERY_NAME" \
        --threads "$NEW_THREADS" --seconds "$DURATION" >"$WORK/impact/handshakes.out" 2>&1 &
    CLIENT_PID=$!
    udp_run "$WORK/impact/flood.dnsperf"
    wait "$CLIENT_PID" || true
    CLIENT_PID=
    echo "  with handshakes: $(udp_line "$WORK/impact/flood.dnsperf")"
    echo "  handshakes meanwhile: $(grep '^new:' "$WORK/impact/handshakes.out" || echo none)"
    stop_server "$pgid"
}

#----------- idle connections -----------------------------------------------

vm_rss_kib() { # PGID: the largest VmRSS of the group's processes
    local pid rss=0 value
    for pid in $(group_pids "$1"); do
        value=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        [ "${value:-0}" -gt "$rss" ] && rss=$value
    done
    echo "$rss"
}

section_idle() {
    echo
    echo "== $IDLE_CONNECTIONS idle TLS connections to tern (handshake and one query each, then held)"
    start_server tern "tcp:
  max-connections: 20000
  initial-timeout: 60s
  idle-timeout: 600s"
    local pgid=$PGID before after
    before=$(vm_rss_kib "$pgid")
    local out="$WORK/idle.out"
    : >"$out"
    taskset -c "$CLIENT_CPU" "$DOT_LOAD" idle "127.0.0.1:$(tls_port_of tern)" "$QUERY_NAME" \
        --threads 8 --connections "$IDLE_CONNECTIONS" --hold 900 >"$out" 2>&1 &
    CLIENT_PID=$!
    local waited=0
    until grep -q '^held' "$out"; do
        kill -0 "$CLIENT_PID" 2>/dev/null || die "dot-load idle ended: $(cat "$out")"
        [ "$waited" -ge $((IDLE_TIMEOUT * 10)) ] && die "dot-load did not open its connections in $IDLE_TIMEOUT s"
        sleep 0.1
        waited=$((waited + 1))
    done
    after=$(vm_rss_kib "$pgid")
    echo "  $(grep '^held' "$out")"
    echo "  tern VmRSS: $((before / 1024)) MiB before, $((after / 1024)) MiB with them open:" \
        "$(((after - before) * 1024 / IDLE_CONNECTIONS)) bytes per connection"
    echo "  tern stats: $("$TERN_BIN" stats --socket "$RUN_DIR/tern.sock" 2>&1 | grep -o 'tls accepted [0-9]* open [0-9]*' | tail -1 || true)"
    udp_run "$WORK/idle-udp.dnsperf"
    echo "  UDP meanwhile at $UDP_RATE q/s: $(udp_line "$WORK/idle-udp.dnsperf")"
    echo "  tern VmRSS after the UDP run: $(($(vm_rss_kib "$pgid") / 1024)) MiB"
    kill "$CLIENT_PID" 2>/dev/null || true
    wait "$CLIENT_PID" 2>/dev/null || true
    CLIENT_PID=
    stop_server "$pgid"
}

#----------- main -------------------------------------------------------------

need dnsperf "make deps"
need kdig "make deps"
need openssl "make deps"
need taskset "util-linux"
need python3 "python3"
[ -x "$TERN_BIN" ] || die "$TERN_BIN: build it with 'cargo build --release --bin tern'"
[ -x "$DOT_LOAD" ] || die "$DOT_LOAD: build it with 'cargo build --release -p tern-benches --bin dot-load'"
for name in $SERVERS; do
    case $name in
        tern) ;;
        nsd) need nsd "make deps" ;;
        named) need named "make deps" ;;
        *) die "unknown server $name" ;;
    esac
done
ulimit -n "$FD_LIMIT" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
for port in $(seq "$BASE_PORT" $((BASE_PORT + 2))) $(seq $((BASE_PORT + 10)) $((BASE_PORT + 12))); do
    if ss -Hlntu "sport = :$port" | grep -q .; then
        die "port $port is in use: set BASE_PORT"
    fi
done

echo "bench-tls: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (dirty)')"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r)"
echo "server CPU $SERVER_CPU, clients CPU $CLIENT_CPU; load average $(cut -d' ' -f1-3 /proc/loadavg); ulimit -n $(ulimit -n)"
for name in $SERVERS; do
    echo "  $name: $(version_of "$name")"
done

mkdir -p "$WORK/zones"
python3 "$ROOT/scripts/gen-bench-zone.py" mixed --names "$NAMES" --zone "$WORK/zones/bench.zone" \
    --queries "$WORK/queries.txt" --count 100000
QUERY_NAME=host1.bench.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=dot.bench -addext subjectAltName=DNS:dot.bench \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
chmod 0644 "$WORK/key.pem" "$WORK/cert.pem"

for section in "${SECTIONS[@]}"; do
    case $section in
        throughput) section_throughput ;;
        new) section_new ;;
        udp-impact) section_udp_impact ;;
        idle) section_idle ;;
        *) die "unknown section $section (throughput, new, udp-impact, idle)" ;;
    esac
done
echo
echo "bench-tls: load average at the end $(cut -d' ' -f1-3 /proc/loadavg); done in $((SECONDS / 60)) min $((SECONDS % 60)) s"
