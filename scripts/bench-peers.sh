#!/usr/bin/env bash
# tern against Knot DNS and NSD, side by side, on loopback.
#
#   scripts/bench-peers.sh [throughput] [callgrind] [zone-load] [forward] [forward-miss]
#
# Without arguments: throughput, callgrind and zone-load (forward and forward-miss only
# when named).
#
# throughput  One generated zone `bench.` of NAMES hosts (about 1.2 x NAMES owner
#             names: hosts, aliases, delegations, a wildcard) and a query file mixing
#             exact hits, mixed case, AAAA/NODATA, NXDOMAIN, wildcard, CNAME and
#             referrals (scripts/gen-bench-zone.py). Every server runs at the same time,
#             each pinned to SERVER_CPU with taskset (tern also with --cores), one worker
#             thread each, on its own 127.0.0.1 port; dnsperf is pinned to CLIENT_CPU and
#             queries one server at a time. For ROUNDS rounds, each server in turn gets
#             DURATION seconds at RATE queries/s offered (dnsperf -Q), then DURATION seconds
#             as fast as dnsperf goes. Per server and mode the medians over the rounds of:
#               QPS, lost queries, dnsperf average latency,
#               CPU time on SERVER_CPU per answered query (/proc/stat user+nice+system+
#                 irq+softirq of that CPU: the server and the kernel work done there),
#               the server processes' own CPU time per answered query (/proc/PID/stat
#                 utime+stime: not disturbed by other tasks that land on SERVER_CPU),
#               instructions and cycles per answered query on SERVER_CPU from
#                 `perf stat -C`, when the machine has hardware counters (checked first;
#                 many VMs have none, and then the columns say n/a).
# callgrind   Each server alone under `valgrind --tool=callgrind` (still pinned). Once it
#             serves, CG_QUERIES queries of the same mix are sent once to warm it up, the
#             counters are zeroed, the same queries are sent again at CG_RATE queries/s, and
#             a dump gives user-space instructions per answered query.
#             Deterministic (no kernel, no timing noise) but at a low rate, where no server
#             gets to batch: it is a per-query path cost, not a throughput figure.
#             With CG_FLOOD=1, a random-subdomain flood instead (gen-bench-zone.py flood:
#             every name distinct): the first CG_FLOOD_WARM_UP names warm the server up,
#             and the next CG_QUERIES, never asked before, are measured, so every one is
#             a cache miss (for tern: respond, then an insert that evicts once its cache
#             is full; start it with a small cache, TERN_CONFIG with `cache: {entries:
#             10000}`, so that the warm-up fills it).
# zone-load   A zone `big.` of BIG_RECORDS A records. For each server (and BIND's named,
#             if installed) LOAD_ROUNDS times: the time from the server's start until the
#             zone's last name answers, and then its memory: the largest VmRSS of its
#             processes, the sum of their PSS (NSD forks; PSS does not count shared
#             pages twice) and the largest VmHWM (peak RSS, reached while loading). Medians.
# forward     Cache hits of a forwarder: tern (a `forward:` section, no zones of its own),
#             Unbound and dnsdist, each forwarding to Knot, which serves bench. on
#             127.0.0.1 pinned to CLIENT_CPU (it gets no queries once the caches are warm).
#             Unbound and dnsdist are apt-get installed when missing. The queries are the
#             mix above without the referrals (a referral is not a forwarder's answer:
#             Unbound would follow it off loopback): about 90 000 lines, 40 000 distinct
#             questions. Each forwarder runs pinned to SERVER_CPU with one worker thread
#             (tern --cores, Unbound num-threads 1, dnsdist one listener), caches of
#             200 000 entries; they run at the same time on their own ports, and each is
#             warmed by one pass of the query file at FWD_WARM_RATE queries/s. Then ROUNDS
#             rounds of DURATION s at FWD_RATE queries/s offered to each in turn: QPS, lost,
#             latency, CPU time on SERVER_CPU and the server's own per answered query (as in
#             throughput) and the queries Knot received meanwhile (Knot's mod-stats; dnsdist
#             adds one health check a second). Then each alone under callgrind as in the
#             callgrind section (CG_QUERIES of the forward queries, warm-up pass, zero,
#             again at CG_RATE but one query outstanding, dump): user-space instructions
#             per answered query, receive calls per query, the top functions by own cost,
#             and tern's ratio to the better of Unbound and dnsdist (target: <= 0.8).
# forward-miss Cache misses of the same forwarders: each question asked once (the
#             forward mix's distinct questions, first spelling kept), so every answer
#             is a miss that goes to Knot. ROUNDS rounds, each forwarder alone and
#             freshly started (empty cache): one pass at FWD_MISS_RATE queries/s, CPU time
#             on SERVER_CPU and the server's own per answered query and the queries
#             Knot received. Then each alone under callgrind, cold: the first CG_QUERIES
#             distinct questions at CG_RATE with one outstanding, no warm-up: user-space
#             instructions per answered query (the kernel's cost of a socket per query
#             is in the CPU times, not here).
#
# Run time with the defaults: about 3.5 min throughput (3 servers x 2 modes x 3 rounds
# x 10 s, plus idle checks), 2 min callgrind, 3 min zone load (named is slow): about 9
# minutes, 10 on a busy machine. forward: about 5 minutes (3 x 3 runs of 10 s, warm-ups,
# 3 callgrind runs); forward-miss after it: about 1.5 minutes more (4 min 8 s for both,
# 2026-11-24).
# Every server this script starts is in its own process group and is killed on exit
# (normal, error or Ctrl-C).
#
# Environment (defaults in brackets):
#   TERN_BIN [target/release/tern]   SERVERS ["tern knot nsd"]   NAMES [10000]
#   ROUNDS [3]   DURATION [10]   RATE [150000]   OUTSTANDING [500]
#   CG_QUERIES [5000]   CG_RATE [1000]   BIG_RECORDS [1000000]   LOAD_ROUNDS [3]
#   LOAD_SERVERS ["tern knot nsd named"]   SERVER_CPU [0]   CLIENT_CPU [1]
#   BASE_PORT [25353] (ports BASE_PORT..BASE_PORT+3, +5 with forward)   EDNS [0] (1: dnsperf -e)
#   FWD_SERVERS ["tern unbound dnsdist"]   FWD_RATE [100000]   FWD_WARM_RATE [20000]
#   FWD_MISS_RATE [10000]
#   QUIET_BUSY [20] QUIET_WAIT [10]: before each run wait up to QUIET_WAIT s for both
#     CPUs to be below QUIET_BUSY % busy (other tasks); the measured busy % is printed.
#   RESULTS [unset]: a directory to keep the raw results, logs and configs in.
#   TERN_CONFIG [unset]: a configuration file tern is started with (--config), e.g. one
#     with a rate-limit section; the command-line flags above still apply.
#   DNSPERF_OPTIONS [unset]: extra dnsperf flags for the throughput and callgrind runs
#     (EDNS=1 applies to both too),
#     e.g. "-E 10:0102030405060708" (a client cookie in every query, implies EDNS).
#   CG_FLOOD [0] CG_FLOOD_WARM_UP [20000]: the callgrind section's flood (above).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TERN_BIN=${TERN_BIN:-$ROOT/target/release/tern}
SERVERS=${SERVERS:-"tern knot nsd"}
NAMES=${NAMES:-10000}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
RATE=${RATE:-150000}
OUTSTANDING=${OUTSTANDING:-500}
CG_QUERIES=${CG_QUERIES:-5000}
CG_RATE=${CG_RATE:-1000}
CG_FLOOD=${CG_FLOOD:-0}
CG_FLOOD_WARM_UP=${CG_FLOOD_WARM_UP:-20000}
BIG_RECORDS=${BIG_RECORDS:-1000000}
LOAD_ROUNDS=${LOAD_ROUNDS:-3}
LOAD_SERVERS=${LOAD_SERVERS:-"tern knot nsd named"}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BASE_PORT=${BASE_PORT:-25353}
EDNS=${EDNS:-0}
QUIET_BUSY=${QUIET_BUSY:-20}
QUIET_WAIT=${QUIET_WAIT:-10}
FWD_SERVERS=${FWD_SERVERS:-"tern unbound dnsdist"}
FWD_RATE=${FWD_RATE:-100000}
FWD_WARM_RATE=${FWD_WARM_RATE:-20000}
FWD_MISS_RATE=${FWD_MISS_RATE:-10000}
# forwarded answers each forwarder may cache: well above the ~40 000 distinct questions
FWD_CACHE_ENTRIES=200000
READY_TIMEOUT=60
VALGRIND_READY_TIMEOUT=300
LOAD_TIMEOUT=300
# dnsperf's per-query timeout (s): a lost query holds one of OUTSTANDING slots this long.
QUERY_TIMEOUT=2
# dnsperf's socket buffers (KiB): with the default 208 KiB, dnsperf's own receive queue
# overflows at start-up (it sends OUTSTANDING queries before it reads) and about 250
# answers per run were counted as lost although every server had sent them.
CLIENT_BUFFER_KB=4096

SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(throughput callgrind zone-load)

# stop_server, group_pids, group_ticks, cpu_busy_ticks, cpu_total_ticks, wait_quiet
# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"

#----------- set-up and clean-up -------------------------------------------

die() {
    echo "bench-peers: $*" >&2
    exit 1
}

WORK=$(mktemp -d /tmp/tern-bench-peers.XXXXXX)
STARTED=() # process group ids of every server started

cleanup() {
    local pgid
    for pgid in "${STARTED[@]}"; do
        kill -KILL -- "-$pgid" 2>/dev/null || true
    done
    if [ -n "${RESULTS:-}" ]; then
        mkdir -p "$RESULTS"
        cp -r "$WORK"/. "$RESULTS"/ 2>/dev/null || true
        # the generated zones are large and can be made again
        rm -f "$RESULTS"/big/big.zone
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_of() {
    case $1 in
        tern) echo $((BASE_PORT)) ;;
        knot) echo $((BASE_PORT + 1)) ;;
        nsd) echo $((BASE_PORT + 2)) ;;
        named) echo $((BASE_PORT + 3)) ;;
        unbound) echo $((BASE_PORT + 4)) ;;
        dnsdist) echo $((BASE_PORT + 5)) ;;
        *) die "unknown server $1" ;;
    esac
}

binary_of() {
    case $1 in
        tern) echo "$TERN_BIN" ;;
        knot) echo knotd ;;
        nsd) echo nsd ;;
        named) echo named ;;
        unbound) echo unbound ;;
        dnsdist) echo dnsdist ;;
    esac
}

version_of() {
    case $1 in
        tern) echo "tern $(stat -c %y "$TERN_BIN" | cut -d. -f1)" ;;
        knot) knotd --version | head -1 ;;
        nsd) nsd -v 2>&1 | head -1 ;;
        named) named -v ;;
        unbound) unbound -V | head -1 ;;
        dnsdist) dnsdist --version | head -1 ;;
    esac
}

need() {
    command -v "$1" >/dev/null || die "$1 not found ($2)"
}

#----------- servers --------------------------------------------------------

# write_config NAME DIR ZONE_DIR ZONE: the server's configuration in DIR.
write_config() {
    local name=$1 dir=$2 zone_dir=$3 zone=$4 port
    port=$(port_of "$name")
    case $name in
        knot)
            mkdir -p "$dir/db"
            cat >"$dir/knot.conf" <<EOF
server:
    listen: 127.0.0.1@$port
    rundir: $dir
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
control:
    listen: $dir/knot.sock
log:
  - target: stderr
    any: notice
database:
    storage: $dir/db
template:
  - id: default
    storage: $zone_dir
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
    semantic-checks: off
zone:
  - domain: $zone.
    file: $zone.zone
EOF
            ;;
        nsd)
            cat >"$dir/nsd.conf" <<EOF
server:
    ip-address: 127.0.0.1@$port
    do-ip6: no
    server-count: 1
    username: ""
    chroot: ""
    zonesdir: "$zone_dir"
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
    name: $zone
    zonefile: $zone.zone
EOF
            ;;
        named)
            cat >"$dir/named.conf" <<EOF
options {
    directory "$dir";
    pid-file "$dir/named.pid";
    session-keyfile "$dir/session.key";
    managed-keys-directory "$dir";
    listen-on port $port { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    dnssec-validation no;
    notify no;
};
controls { };
zone "$zone." {
    type primary;
    file "$zone_dir/$zone.zone";
    check-names ignore;
};
EOF
            ;;
    esac
}

# start_server NAME ZONE_DIR ZONE [WRAPPER...]: starts the server pinned to SERVER_CPU
# in a new process group, and sets PGID to that group.
start_server() {
    local name=$1 zone_dir=$2 zone=$3
    shift 3
    local dir port
    dir=$(mktemp -d "$WORK/run-$name.XXXX")
    port=$(port_of "$name")
    write_config "$name" "$dir" "$zone_dir" "$zone"
    local command
    case $name in
        tern)
            command=("$TERN_BIN" serve --zones "$zone_dir" --listen "127.0.0.1:$port" --cores "$SERVER_CPU")
            if [ -n "${TERN_CONFIG:-}" ]; then
                command+=(--config "$TERN_CONFIG")
            fi
            # a control socket of its own, not the default one another tern may be using
            if "$TERN_BIN" serve --help | grep -q -- --socket; then
                command+=(--socket "$dir/tern.sock")
            fi
            ;;
        knot) command=(knotd -c "$dir/knot.conf") ;;
        nsd) command=(nsd -d -c "$dir/nsd.conf") ;;
        named) command=(named -g -n 1 -c "$dir/named.conf") ;;
    esac
    # Not a job-control shell: the background child is not a group leader, so setsid
    # makes it one without forking and $! is the new group's id.
    setsid taskset -c "$SERVER_CPU" "$@" "${command[@]}" >"$dir/log" 2>&1 </dev/null &
    PGID=$!
    STARTED+=("$PGID")
    RUN_DIR=$dir
}

# wait_ready NAME NAME_TO_ASK TIMEOUT [SINCE]: prints the seconds until it answered.
wait_ready() {
    local since=()
    [ -n "${4:-}" ] && since=(--since "$4")
    python3 "$ROOT/scripts/wait-answer.py" --port "$(port_of "$1")" --name "$2" \
        --timeout "$3" "${since[@]}" || {
        echo "--- log of $1:" >&2
        tail -20 "$RUN_DIR/log" >&2
        die "$1 did not answer $2"
    }
}

dnsperf_field() { # FILE PATTERN: the first number after the pattern
    awk -v pattern="$2" 'i = index($0, pattern) { $0 = substr($0, i + length(pattern)); print $1; exit }' "$1"
}

#----------- hardware counters ---------------------------------------------

PERF_HW=0
detect_perf() {
    command -v perf >/dev/null || return 0
    local out
    out=$(perf stat -x, -C "$SERVER_CPU" -e instructions,cycles -- sleep 0.1 2>&1) || return 0
    if echo "$out" | grep -qE '^[0-9]+,[^,]*,instructions' &&
        echo "$out" | grep -qE '^[0-9]+,[^,]*,cycles'; then
        PERF_HW=1
    fi
}

#----------- throughput ------------------------------------------------------

# measure NAME MODE ROUND: one dnsperf run against NAME; appends a line to the results.
measure() {
    local name=$1 mode=$2 round=$3 port out perf_out rate_args=()
    port=$(port_of "$name")
    out="$WORK/throughput/$name.$mode.$round.dnsperf"
    perf_out="$WORK/throughput/$name.$mode.$round.perf"
    [ "$mode" = rate ] && rate_args=(-Q "$RATE")
    local edns_args=()
    [ "$EDNS" = 1 ] && edns_args=(-e)
    # shellcheck disable=SC2206 # one word per flag
    edns_args+=(${DNSPERF_OPTIONS:-})
    local client=(taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt"
        -l "$DURATION" -q "$OUTSTANDING" -t "$QUERY_TIMEOUT" -b "$CLIENT_BUFFER_KB" "${rate_args[@]}"
        "${edns_args[@]}")
    wait_quiet
    local pgid=${PGIDS[$name]} cpu_before server_before cpu_after server_after
    cpu_before=$(cpu_busy_ticks "$SERVER_CPU")
    server_before=$(group_ticks "$pgid")
    if [ "$PERF_HW" = 1 ]; then
        timeout $((DURATION + 60)) perf stat -x, -o "$perf_out" -C "$SERVER_CPU" \
            -e instructions,cycles -- "${client[@]}" >"$out" 2>&1 || true
    else
        timeout $((DURATION + 60)) "${client[@]}" >"$out" 2>&1 || true
    fi
    cpu_after=$(cpu_busy_ticks "$SERVER_CPU")
    server_after=$(group_ticks "$pgid")
    local completed lost qps latency instructions=n/a cycles=n/a
    completed=$(dnsperf_field "$out" "Queries completed:")
    lost=$(dnsperf_field "$out" "Queries lost:")
    qps=$(dnsperf_field "$out" "Queries per second:")
    latency=$(dnsperf_field "$out" "Average Latency (s):")
    [ -n "$completed" ] && [ "$completed" -gt 0 ] || {
        cat "$out" >&2
        die "dnsperf against $name answered nothing"
    }
    if [ "$PERF_HW" = 1 ]; then
        instructions=$(awk -F, '$3 ~ /^instructions/ {print $1}' "$perf_out")
        cycles=$(awk -F, '$3 ~ /^cycles/ {print $1}' "$perf_out")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$round" \
        "$completed" "$lost" "$qps" "$latency" $((cpu_after - cpu_before)) \
        $((server_after - server_before)) "$instructions" "$cycles" "$QUIET" \
        >>"$WORK/throughput.tsv"
    printf '  %-5s %-4s round %s: %8.0f qps, %s lost, latency %s s (busy before: cpu%s/cpu%s %s %%)\n' \
        "$name" "$mode" "$round" "$qps" "$lost" "$latency" "$SERVER_CPU" "$CLIENT_CPU" "$QUIET"
}

section_throughput() {
    echo
    echo "== throughput: zone bench. ($NAMES hosts), $ROUNDS rounds x ${DURATION} s, $RATE qps offered, then max"
    mkdir -p "$WORK/throughput"
    detect_perf
    if [ "$PERF_HW" = 1 ]; then
        echo "perf stat -C $SERVER_CPU: hardware counters available"
    else
        echo "perf stat -C $SERVER_CPU: no instructions/cycles counters here (the columns say n/a)"
    fi
    declare -gA PGIDS=()
    local name
    for name in $SERVERS; do
        start_server "$name" "$WORK/zones" bench
        PGIDS[$name]=$PGID
        wait_ready "$name" host0.bench. "$READY_TIMEOUT" >/dev/null
        # The UDP receive buffer absorbs bursts: past it, queries are dropped.
        echo "  $name: UDP receive buffer $(ss -Hulnm "sport = :$(port_of "$name")" |
            grep -o 'rb[0-9]*' | head -1 | tr -d rb) bytes"
    done
    local round mode
    for round in $(seq "$ROUNDS"); do
        for name in $SERVERS; do
            for mode in rate max; do
                measure "$name" "$mode" "$round"
            done
        done
    done
    for name in $SERVERS; do
        stop_server "${PGIDS[$name]}"
    done
    python3 - "$WORK/throughput.tsv" "$(getconf CLK_TCK)" "$RATE" <<'EOF'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
tick_us = 1e6 / int(sys.argv[2])
rate = sys.argv[3]
def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)
print()
print(f"medians over rounds; CPU = CPU time per answered query; instructions/cycles from perf -C")
print(f"| server | offered | QPS | lost | latency ms | CPU0 us/q | server us/q | instr/q | cycles/q |")
print(f"|---|---|---:|---:|---:|---:|---:|---:|---:|")
seen = []
for r in rows:
    if (r[0], r[1]) not in seen:
        seen.append((r[0], r[1]))
for name, mode in seen:
    runs = [r for r in rows if r[0] == name and r[1] == mode]
    per = lambda i: med([int(r[i]) / int(r[3]) * tick_us for r in runs])
    hw = lambda i: med([int(r[i]) / int(r[3]) if r[i] != "n/a" else None for r in runs])
    print(f"| {name} | {rate if mode == 'rate' else 'max'} | {fmt(med([float(r[5]) for r in runs]), '.0f')} "
          f"| {fmt(med([int(r[4]) for r in runs]), '.0f')} | {fmt(med([float(r[6]) * 1e3 for r in runs]), '.3f')} "
          f"| {fmt(per(7), '.2f')} | {fmt(per(8), '.2f')} | {fmt(hw(9), '.0f')} | {fmt(hw(10), '.0f')} |")
EOF
}

#----------- callgrind -------------------------------------------------------

section_callgrind() {
    echo
    echo "== callgrind: user-space instructions per answered query ($CG_QUERIES queries at $CG_RATE qps)"
    need valgrind "apt-get install valgrind"
    need callgrind_control "apt-get install valgrind"
    local warm_up="$WORK/queries-callgrind.txt" measured="$WORK/queries-callgrind.txt"
    if [ "$CG_FLOOD" = 1 ]; then
        echo "   a flood of new names: $CG_FLOOD_WARM_UP to warm up, then $CG_QUERIES others"
        python3 "$ROOT/scripts/gen-bench-zone.py" flood --queries "$WORK/flood.txt" \
            --count $((CG_FLOOD_WARM_UP + CG_QUERIES))
        warm_up="$WORK/queries-callgrind-warm-up.txt"
        measured="$WORK/queries-callgrind.txt"
        head -n "$CG_FLOOD_WARM_UP" "$WORK/flood.txt" >"$warm_up"
        tail -n +$((CG_FLOOD_WARM_UP + 1)) "$WORK/flood.txt" >"$measured"
    else
        head -n "$CG_QUERIES" "$WORK/queries.txt" >"$measured"
    fi
    local query_args=()
    [ "$EDNS" = 1 ] && query_args=(-e)
    # shellcheck disable=SC2206 # one word per flag
    query_args+=(${DNSPERF_OPTIONS:-})
    echo "| server | answered | lost | Ir in window | Ir per answered query |"
    echo "|---|---:|---:|---:|---:|"
    local name
    for name in $SERVERS; do
        local dir
        start_server "$name" "$WORK/zones" bench valgrind --tool=callgrind --trace-children=yes \
            --callgrind-out-file="$WORK/callgrind-$name.%p.out"
        dir=$RUN_DIR
        wait_ready "$name" host0.bench. "$VALGRIND_READY_TIMEOUT" >/dev/null
        sleep 1
        # One pass first, unmeasured: the throughput runs loop over the query file many
        # times, so caches (tern's answer cache, the CPU's) are warm there too.
        timeout 600 taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$(port_of "$name")" \
            -d "$warm_up" -n 1 -Q "$CG_RATE" -q 50 -t 5 -b "$CLIENT_BUFFER_KB" \
            "${query_args[@]}" >"$WORK/callgrind-$name.warm-up.dnsperf" 2>&1 || true
        local pids
        pids=$(group_pids "$PGID" | tr '\n' ' ')
        # shellcheck disable=SC2086 # one argument per pid
        callgrind_control -z $pids >"$dir/callgrind-control.log" 2>&1
        local out="$WORK/callgrind-$name.dnsperf"
        timeout 600 taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$(port_of "$name")" \
            -d "$measured" -n 1 -Q "$CG_RATE" -q 50 -t 5 -b "$CLIENT_BUFFER_KB" \
            "${query_args[@]}" >"$out" 2>&1 || true
        # shellcheck disable=SC2086
        callgrind_control --dump=window $pids >>"$dir/callgrind-control.log" 2>&1
        sleep 1
        stop_server "$PGID"
        local completed lost ir
        completed=$(dnsperf_field "$out" "Queries completed:")
        lost=$(dnsperf_field "$out" "Queries lost:")
        # the dumps asked for are numbered files (.out.1); the .out files written at
        # exit (if any) are ignored
        ir=$(cat "$WORK"/callgrind-"$name".*.out.[0-9]* 2>/dev/null |
            awk '/^summary:/ {sum += $2} END {print sum + 0}')
        if [ "${completed:-0}" -gt 0 ] && [ "$ir" -gt 0 ]; then
            printf '| %s | %s | %s | %s | %.0f |\n' "$name" "$completed" "$lost" "$ir" \
                "$(echo "$ir / $completed" | bc -l)"
        else
            printf '| %s | %s | %s | %s | failed (see logs) |\n' "$name" "${completed:-0}" \
                "${lost:-?}" "$ir"
        fi
    done
}

#----------- zone load --------------------------------------------------------

section_zone_load() {
    echo
    echo "== zone load: zone big. of $BIG_RECORDS A records, $LOAD_ROUNDS rounds (medians)"
    mkdir -p "$WORK/big"
    local last
    last=$(python3 "$ROOT/scripts/gen-bench-zone.py" big --records "$BIG_RECORDS" --zone "$WORK/big/big.zone")
    echo "zone file: $(du -h "$WORK/big/big.zone" | cut -f1), last name $last"
    local name round
    : >"$WORK/zone-load.tsv"
    for name in $LOAD_SERVERS; do
        if ! command -v "$(binary_of "$name")" >/dev/null; then
            echo "  $name: not installed, skipped"
            continue
        fi
        for round in $(seq "$LOAD_ROUNDS"); do
            wait_quiet
            local since elapsed rss=0 peak=0 pss=0 pid value
            since=$(date +%s.%N)
            start_server "$name" "$WORK/big" big
            elapsed=$(wait_ready "$name" "$last" "$LOAD_TIMEOUT" "$since")
            for pid in $(group_pids "$PGID"); do
                value=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
                [ "${value:-0}" -gt "$rss" ] && rss=$value
                value=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
                [ "${value:-0}" -gt "$peak" ] && peak=$value
                value=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
                pss=$((pss + ${value:-0}))
            done
            stop_server "$PGID"
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$elapsed" "$rss" "$pss" "$peak" \
                >>"$WORK/zone-load.tsv"
            printf '  %-5s round %s: %s s, RSS %s MiB, PSS %s MiB, peak RSS %s MiB (busy before: %s %%)\n' \
                "$name" "$round" "$elapsed" $((rss / 1024)) $((pss / 1024)) $((peak / 1024)) "$QUIET"
        done
    done
    python3 - "$WORK/zone-load.tsv" <<'EOF'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
print()
print("| server | load until last name answers, s | RSS after load, MiB | PSS sum, MiB | peak RSS while loading, MiB |")
print("|---|---:|---:|---:|---:|")
names = []
for r in rows:
    if r[0] not in names:
        names.append(r[0])
for name in names:
    runs = [r for r in rows if r[0] == name]
    t = statistics.median(float(r[2]) for r in runs)
    rss = statistics.median(int(r[3]) for r in runs) / 1024
    pss = statistics.median(int(r[4]) for r in runs) / 1024
    peak = statistics.median(int(r[5]) for r in runs) / 1024
    print(f"| {name} | {t:.2f} | {rss:.0f} | {pss:.0f} | {peak:.0f} |")
EOF
}

#----------- forward ----------------------------------------------------------

# install_forwarders: apt-get installs Unbound and dnsdist when FWD_SERVERS names one
# that is missing. Only their binaries are used, with configurations of our own; where
# the distribution starts the packages' services on install (not in containers with a
# policy-rc.d), stop them yourself: Unbound's would prime its trust anchor off loopback.
install_forwarders() {
    local name missing=() sudo=()
    for name in $FWD_SERVERS; do
        case $name in
            unbound | dnsdist) command -v "$name" >/dev/null || missing+=("$name") ;;
        esac
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    echo "installing ${missing[*]} with apt-get (log: $WORK/apt.log)"
    # apt-get update only when the install fails without it
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >"$WORK/apt.log" 2>&1 ||
        {
            "${sudo[@]}" apt-get update >>"$WORK/apt.log" 2>&1 &&
                "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" \
                    >>"$WORK/apt.log" 2>&1
        } || {
        tail -20 "$WORK/apt.log" >&2
        die "could not install ${missing[*]}"
    }
    for name in "${missing[@]}"; do
        need "$name" "apt-get install $name"
    done
}

# write_forward_config NAME DIR: the forwarder's configuration in DIR, forwarding
# everything to the upstream Knot.
write_forward_config() {
    local name=$1 dir=$2 port upstream
    port=$(port_of "$name")
    upstream=$(port_of knot)
    case $name in
        tern)
            # no zones of its own: every query of the mix is forwarded
            mkdir -p "$dir/zones"
            cat >"$dir/tern.yaml" <<CONF
listen: ["127.0.0.1:$port"]
cores: [$SERVER_CPU]
zones:
  directory: $dir/zones
control-socket: $dir/tern.sock
forward:
  allow: [127.0.0.0/8]
  upstreams: ["127.0.0.1:$upstream"]
  cache-entries: $FWD_CACHE_ENTRIES
  cache-bytes: 256M
CONF
            ;;
        unbound)
            # forward-zone "." so that nothing is ever asked of the root servers; the
            # iterator alone (no validator); 8 MiB socket buffers like tern's.
            cat >"$dir/unbound.conf" <<CONF
server:
    interface: 127.0.0.1
    port: $port
    do-ip6: no
    num-threads: 1
    so-reuseport: no
    so-rcvbuf: 8m
    so-sndbuf: 8m
    access-control: 127.0.0.0/8 allow
    username: ""
    chroot: ""
    directory: "$dir"
    pidfile: "$dir/unbound.pid"
    use-syslog: no
    logfile: ""
    verbosity: 1
    module-config: "iterator"
    do-not-query-localhost: no
    qname-minimisation: no
    prefetch: no
    minimal-responses: yes
    msg-cache-size: 256m
    rrset-cache-size: 256m
    msg-cache-slabs: 1
    rrset-cache-slabs: 1
    infra-cache-slabs: 1
    key-cache-slabs: 1
    outgoing-range: 1024
    num-queries-per-thread: 1024
remote-control:
    control-enable: no
forward-zone:
    name: "."
    forward-addr: 127.0.0.1@$upstream
CONF
            ;;
        dnsdist)
            # no security polling (a DNS query to the Internet), one listener, one TCP
            # worker, a health check of the upstream each second, 8 MiB socket buffers
            cat >"$dir/dnsdist.conf" <<CONF
setSecurityPollSuffix("")
setLocal("127.0.0.1:$port", {reusePort=false})
setUDPSocketBufferSizes(8388608, 8388608)
setMaxTCPClientThreads(1)
newServer({address="127.0.0.1:$upstream", checkName="bench.", checkInterval=1, sockets=1})
pc = newPacketCache($FWD_CACHE_ENTRIES, {maxTTL=86400, minTTL=0, numberOfShards=1})
getPool(""):setCache(pc)
CONF
            ;;
        *) die "unknown forwarder $name (tern, unbound, dnsdist)" ;;
    esac
}

# start_forwarder NAME [WRAPPER...]: as start_server, for a forwarder.
start_forwarder() {
    local name=$1
    shift
    local dir command
    dir=$(mktemp -d "$WORK/run-forward-$name.XXXX")
    write_forward_config "$name" "$dir"
    case $name in
        tern) command=("$TERN_BIN" serve --config "$dir/tern.yaml") ;;
        unbound) command=(unbound -d -c "$dir/unbound.conf") ;;
        dnsdist) command=(dnsdist --supervised --disable-syslog -C "$dir/dnsdist.conf") ;;
    esac
    setsid taskset -c "$SERVER_CPU" "$@" "${command[@]}" >"$dir/log" 2>&1 </dev/null &
    PGID=$!
    STARTED+=("$PGID")
    RUN_DIR=$dir
}

# start_upstream: Knot serving bench. on its port, pinned to CLIENT_CPU, with mod-stats
# counting the queries it gets; sets UPSTREAM_PGID and UPSTREAM_DIR.
start_upstream() {
    local dir
    dir=$(mktemp -d "$WORK/run-upstream.XXXX")
    write_config knot "$dir" "$WORK/zones" bench
    sed -i 's#^  - id: default$#&\n    global-module: mod-stats#' "$dir/knot.conf"
    grep -q 'global-module: mod-stats' "$dir/knot.conf" || die "could not add mod-stats to knot.conf"
    setsid taskset -c "$CLIENT_CPU" knotd -c "$dir/knot.conf" >"$dir/log" 2>&1 </dev/null &
    UPSTREAM_PGID=$!
    STARTED+=("$UPSTREAM_PGID")
    UPSTREAM_DIR=$dir
    RUN_DIR=$dir
    wait_ready knot host0.bench. "$READY_TIMEOUT" >/dev/null
}

# The queries the upstream Knot has received so far (UDP and TCP).
upstream_queries() {
    knotc -c "$UPSTREAM_DIR/knot.conf" stats mod-stats.request-protocol 2>/dev/null |
        awk -F' = ' '{sum += $2} END {print sum + 0}'
}

# wait_recursive NAME TIMEOUT: until NAME answers host0.bench. A with RD=1 (forwarders
# refuse wait-answer.py's RD=0 queries).
wait_recursive() {
    local port deadline=$((SECONDS + $2))
    port=$(port_of "$1")
    while [ "$SECONDS" -lt "$deadline" ]; do
        if dig +short +tries=1 +time=1 -p "$port" @127.0.0.1 host0.bench. A 2>/dev/null |
            grep -qx '10.0.0.0'; then
            return 0
        fi
        sleep 0.2
    done
    echo "--- log of $1:" >&2
    tail -20 "$RUN_DIR/log" >&2
    die "$1 did not answer host0.bench. A within $2 s"
}

# forward_dnsperf NAME OUT QUERY_FILE ARGS...: dnsperf on CLIENT_CPU against NAME.
forward_dnsperf() {
    local name=$1 out=$2 file=$3
    shift 3
    local edns_args=()
    [ "$EDNS" = 1 ] && edns_args=(-e)
    timeout 900 taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$(port_of "$name")" \
        -d "$file" -b "$CLIENT_BUFFER_KB" \
        "${edns_args[@]}" "$@" >"$out" 2>&1 || true
}

# measure_forward NAME ROUND: one run at FWD_RATE against a warm forwarder.
measure_forward() {
    local name=$1 round=$2 out
    out="$WORK/forward/$name.$round.dnsperf"
    wait_quiet
    local pgid=${FWD_PGIDS[$name]} cpu_before server_before upstream_before
    cpu_before=$(cpu_busy_ticks "$SERVER_CPU")
    server_before=$(group_ticks "$pgid")
    upstream_before=$(upstream_queries)
    forward_dnsperf "$name" "$out" "$WORK/queries-forward.txt" -l "$DURATION" -q "$OUTSTANDING" \
        -Q "$FWD_RATE" -t "$QUERY_TIMEOUT"
    local cpu_after server_after upstream_after
    cpu_after=$(cpu_busy_ticks "$SERVER_CPU")
    server_after=$(group_ticks "$pgid")
    upstream_after=$(upstream_queries)
    local completed lost qps latency
    completed=$(dnsperf_field "$out" "Queries completed:")
    lost=$(dnsperf_field "$out" "Queries lost:")
    qps=$(dnsperf_field "$out" "Queries per second:")
    latency=$(dnsperf_field "$out" "Average Latency (s):")
    [ -n "$completed" ] && [ "$completed" -gt 0 ] || {
        cat "$out" >&2
        die "dnsperf against $name answered nothing"
    }
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$completed" "$lost" \
        "$qps" "$latency" $((cpu_after - cpu_before)) $((server_after - server_before)) \
        $((upstream_after - upstream_before)) "$QUIET" >>"$WORK/forward.tsv"
    printf '  %-7s round %s: %8.0f qps, %s lost, latency %s s, upstream got %s queries (busy before: cpu%s/cpu%s %s %%)\n' \
        "$name" "$round" "$qps" "$lost" "$latency" $((upstream_after - upstream_before)) \
        "$SERVER_CPU" "$CLIENT_CPU" "$QUIET"
}

# receive_calls DUMP...: the calls to libc's recvmmsg, recvmsg, recvfrom and recv in
# callgrind dumps (from the `calls=` lines; names are compressed to `(id)` after their
# first use). A batching server makes fewer calls than it answers queries.
receive_calls() {
    python3 - "$@" <<'PY'
import re, sys
wanted = re.compile(r"^(__libc_)?(recvmmsg|recvmsg|recvfrom|recv)(@.*)?$")
total = 0
for path in sys.argv[1:]:
    names, current = {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"^c?fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(2):
                names[m.group(1)] = m.group(2)
            current = m.group(1) if line.startswith("cfn=") else None
            continue
        if current is not None and line.startswith("calls="):
            if wanted.match(names.get(current, "")):
                total += int(line.split()[0][len("calls="):])
            current = None
print(total)
PY
}

# forward_callgrind NAME [cold]: the forwarder alone under callgrind; appends to
# forward-callgrind.tsv and prints its top functions by own cost. Cold: the distinct
# questions, no warm-up (every answer a miss).
forward_callgrind() {
    local name=$1 cold=${2:-} dir pids file="$WORK/queries-forward-callgrind.txt" tag=$1
    # The cold run's files are named apart, so that its figures and top functions are
    # its own and not the hit run's too.
    if [ -n "$cold" ]; then
        file="$WORK/queries-forward-distinct-callgrind.txt"
        tag="$name-cold"
    fi
    start_forwarder "$name" valgrind --tool=callgrind --trace-children=yes \
        --callgrind-out-file="$WORK/forward/callgrind-$tag.%p.out"
    dir=$RUN_DIR
    wait_recursive "$name" "$VALGRIND_READY_TIMEOUT"
    sleep 1
    # warm-up: every question of the measured pass is then in the cache
    if [ -z "$cold" ]; then
        forward_dnsperf "$name" "$WORK/forward/callgrind-$tag.warm-up.dnsperf" \
            "$file" -n 1 -Q "$CG_RATE" -q 50 -t 5
    fi
    pids=$(group_pids "$PGID" | tr '\n' ' ')
    # shellcheck disable=SC2086 # one argument per pid
    callgrind_control -z $pids >"$dir/callgrind-control.log" 2>&1
    local out="$WORK/forward/callgrind-$tag.dnsperf" upstream_before upstream_after
    upstream_before=$(upstream_queries)
    # One query outstanding (-q 1): each query is a wake-up of its own for every server,
    # so the count does not depend on how many queries the scheduler lets pile up
    # between wake-ups (tern's cost per wake-up is about that of a query's own work).
    forward_dnsperf "$name" "$out" "$file" -n 1 -Q "$CG_RATE" -q 1 -t 5
    upstream_after=$(upstream_queries)
    # shellcheck disable=SC2086
    callgrind_control --dump=window $pids >>"$dir/callgrind-control.log" 2>&1
    sleep 1
    stop_server "$PGID"
    local completed lost ir dumps
    completed=$(dnsperf_field "$out" "Queries completed:")
    lost=$(dnsperf_field "$out" "Queries lost:")
    dumps=$(ls "$WORK"/forward/callgrind-"$tag".*.out.[0-9]* 2>/dev/null || true)
    # shellcheck disable=SC2086 # one file per dump
    ir=$(cat $dumps /dev/null | awk '/^summary:/ {sum += $2} END {print sum + 0}')
    local receives
    # shellcheck disable=SC2086
    receives=$(receive_calls $dumps)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "${completed:-0}" "${lost:-0}" "$ir" \
        $((upstream_after - upstream_before)) "$receives" >>"$WORK/forward-callgrind.tsv"
    printf '  %-7s callgrind: %s answered, %s lost, %s Ir in the window, %s receive calls, upstream got %s queries\n' \
        "$name" "${completed:-0}" "${lost:-?}" "$ir" "$receives" $((upstream_after - upstream_before))
    local dump
    for dump in $dumps; do
        # The frames on the stack when the counters were zeroed show as 100 %: skipped.
        echo "    top functions by own Ir ($(basename "$dump")):"
        callgrind_annotate --inclusive=no --threshold=100 "$dump" 2>/dev/null |
            awk '/file:function/ {list = 1; next}
                 list && /^ *[0-9,]+ \(/ && !/\(100\.0%\)/ && n++ < 12 {print "      " $0}' || true
    done
}

# forward_setup: the tools, the forwarders' versions and the query files of both forward
# sections.
forward_setup() {
    need dig "apt-get install bind9-dnsutils"
    need knotd "apt-get install knot"
    need knotc "apt-get install knot"
    need valgrind "apt-get install valgrind"
    need callgrind_control "apt-get install valgrind"
    need callgrind_annotate "apt-get install valgrind"
    install_forwarders
    local name
    for name in $FWD_SERVERS; do
        case $name in
            tern | unbound | dnsdist) need "$(binary_of "$name")" "build tern with 'cargo build --release'" ;;
            *) die "unknown forwarder $name (FWD_SERVERS: tern, unbound, dnsdist)" ;;
        esac
        echo "  $name: $(version_of "$name")"
    done
    echo "  upstream: $(version_of knot), pinned to CPU $CLIENT_CPU"
    mkdir -p "$WORK/forward"
    # the mix without referrals (www.subN.bench.)
    grep -v '\.sub[0-9]*\.bench\. ' "$WORK/queries.txt" >"$WORK/queries-forward.txt"
    head -n "$CG_QUERIES" "$WORK/queries-forward.txt" >"$WORK/queries-forward-callgrind.txt"
    # each question once, in its first spelling: every answer a cache miss
    awk '!seen[tolower($0)]++' "$WORK/queries-forward.txt" >"$WORK/queries-forward-distinct.txt"
    head -n "$CG_QUERIES" "$WORK/queries-forward-distinct.txt" >"$WORK/queries-forward-distinct-callgrind.txt"
    echo "  queries: $(wc -l <"$WORK/queries-forward.txt") lines, $(wc -l <"$WORK/queries-forward-distinct.txt") distinct questions"
}

section_forward() {
    echo
    echo "== forward: cache hits, $FWD_SERVERS forwarding to Knot; $ROUNDS rounds x ${DURATION} s at $FWD_RATE qps, then callgrind"
    forward_setup
    local name round
    start_upstream
    declare -gA FWD_PGIDS=()
    for name in $FWD_SERVERS; do
        start_forwarder "$name"
        FWD_PGIDS[$name]=$PGID
        wait_recursive "$name" "$READY_TIMEOUT"
    done
    for name in $FWD_SERVERS; do
        local warm="$WORK/forward/$name.warm-up.dnsperf"
        forward_dnsperf "$name" "$warm" "$WORK/queries-forward.txt" -n 1 -Q "$FWD_WARM_RATE" \
            -q "$OUTSTANDING" -t "$QUERY_TIMEOUT"
        echo "  $name warm-up: $(dnsperf_field "$warm" "Queries completed:") answered," \
            "$(dnsperf_field "$warm" "Queries lost:") lost;" \
            "$(grep -o 'Response codes:.*' "$warm" | head -1)"
    done
    : >"$WORK/forward.tsv"
    for round in $(seq "$ROUNDS"); do
        for name in $FWD_SERVERS; do
            measure_forward "$name" "$round"
        done
    done
    for name in $FWD_SERVERS; do
        stop_server "${FWD_PGIDS[$name]}"
    done

    echo
    echo "  callgrind: $CG_QUERIES queries, warm-up pass, then again at $CG_RATE qps"
    : >"$WORK/forward-callgrind.tsv"
    for name in $FWD_SERVERS; do
        forward_callgrind "$name"
    done
    stop_server "$UPSTREAM_PGID"

    python3 - "$WORK/forward.tsv" "$WORK/forward-callgrind.tsv" "$(getconf CLK_TCK)" "$FWD_RATE" <<'PY'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
cg = {r[0]: r for r in (line.rstrip("\n").split("\t") for line in open(sys.argv[2]) if line.strip())}
tick_us = 1e6 / int(sys.argv[3])
rate = sys.argv[4]
names = []
for r in rows + list(cg.values()):
    if r[0] not in names:
        names.append(r[0])
def ir_per_query(name):
    r = cg.get(name)
    if not r or int(r[1]) <= 0 or int(r[3]) <= 0:
        return None
    return int(r[3]) / int(r[1])
peers = [ir_per_query(n) for n in names if n != "tern"]
peers = [v for v in peers if v is not None]
best = min(peers) if peers else None
def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)
print()
print(f"medians over rounds at {rate} qps offered; CPU = CPU time per answered query;")
print("upstream = queries Knot got during a measured run (0 = all cache hits; dnsdist: its health checks)")
print("| forwarder | QPS | lost | latency ms | CPU0 us/q | server us/q | upstream/run | Ir/q (callgrind) | Ir vs best peer | receive calls/q |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for name in names:
    runs = [r for r in rows if r[0] == name]
    med = lambda f: statistics.median(f(r) for r in runs) if runs else None
    qps = med(lambda r: float(r[4]))
    lost = med(lambda r: int(r[3]))
    latency = med(lambda r: float(r[5]) * 1e3)
    cpu = med(lambda r: int(r[6]) / int(r[2]) * tick_us)
    own = med(lambda r: int(r[7]) / int(r[2]) * tick_us)
    upstream = med(lambda r: int(r[8]))
    ir = ir_per_query(name)
    ratio = ir / best if ir is not None and best else None
    receives = int(cg[name][5]) / int(cg[name][1]) if name in cg and int(cg[name][1]) > 0 else None
    print(f"| {name} | {fmt(qps, '.0f')} | {fmt(lost, '.0f')} | {fmt(latency, '.3f')} | {fmt(cpu, '.2f')} "
          f"| {fmt(own, '.2f')} | {fmt(upstream, '.0f')} | {fmt(ir, '.0f')} | {fmt(ratio, '.2f')} | {fmt(receives, '.2f')} |")
tern = ir_per_query("tern")
if tern is not None and best:
    verdict = "met" if tern <= 0.8 * best else "NOT met"
    print(f"\ntarget: tern {tern:.0f} Ir/q <= 0.8 x best peer {best:.0f} = {0.8 * best:.0f}: {verdict} (ratio {tern / best:.2f})")
PY
}

#----------- main -------------------------------------------------------------

need dnsperf "apt-get install dnsperf"
need taskset "util-linux"
# section_forward_miss: cache misses (see the header).
section_forward_miss() {
    echo
    echo "== forward-miss: cache misses, $FWD_SERVERS forwarding to Knot; $ROUNDS rounds of one pass at $FWD_MISS_RATE qps, each forwarder freshly started, then callgrind (cold)"
    forward_setup
    local name round
    start_upstream
    : >"$WORK/forward-miss.tsv"
    for round in $(seq "$ROUNDS"); do
        for name in $FWD_SERVERS; do
            start_forwarder "$name"
            local pgid=$PGID
            wait_recursive "$name" "$READY_TIMEOUT"
            wait_quiet
            local out="$WORK/forward/$name.miss.$round.dnsperf" cpu_before server_before upstream_before
            cpu_before=$(cpu_busy_ticks "$SERVER_CPU")
            server_before=$(group_ticks "$pgid")
            upstream_before=$(upstream_queries)
            forward_dnsperf "$name" "$out" "$WORK/queries-forward-distinct.txt" -n 1 \
                -Q "$FWD_MISS_RATE" -q "$OUTSTANDING" -t "$QUERY_TIMEOUT"
            local cpu_after server_after upstream_after completed lost
            cpu_after=$(cpu_busy_ticks "$SERVER_CPU")
            server_after=$(group_ticks "$pgid")
            upstream_after=$(upstream_queries)
            stop_server "$pgid"
            completed=$(dnsperf_field "$out" "Queries completed:")
            lost=$(dnsperf_field "$out" "Queries lost:")
            [ -n "$completed" ] && [ "$completed" -gt 0 ] || {
                cat "$out" >&2
                die "dnsperf against $name answered nothing"
            }
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$completed" "$lost" \
                $((cpu_after - cpu_before)) $((server_after - server_before)) \
                $((upstream_after - upstream_before)) >>"$WORK/forward-miss.tsv"
            printf '  %-7s round %s: %s answered, %s lost, upstream got %s queries (busy before: %s %%)\n' \
                "$name" "$round" "$completed" "$lost" $((upstream_after - upstream_before)) "$QUIET"
        done
    done
    echo
    echo "  callgrind (cold): the first $CG_QUERIES distinct questions at $CG_RATE qps, one outstanding"
    : >"$WORK/forward-callgrind.tsv"
    for name in $FWD_SERVERS; do
        forward_callgrind "$name" cold
    done
    stop_server "$UPSTREAM_PGID"

    python3 - "$WORK/forward-miss.tsv" "$WORK/forward-callgrind.tsv" "$(getconf CLK_TCK)" "$FWD_MISS_RATE" <<'PY'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
cg = {r[0]: r for r in (line.rstrip("\n").split("\t") for line in open(sys.argv[2]) if line.strip())}
tick_us = 1e6 / int(sys.argv[3])
names = []
for r in rows:
    if r[0] not in names:
        names.append(r[0])
print()
print(f"medians over rounds, one pass of distinct questions at {sys.argv[4]} qps offered;")
print("CPU = CPU time per answered query (each a miss); upstream = queries Knot got")
print("| forwarder | answered | lost | CPU0 us/q | server us/q | upstream/run | Ir/q cold (callgrind) | upstream in callgrind run |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name in names:
    runs = [r for r in rows if r[0] == name]
    med = lambda f: statistics.median(f(r) for r in runs)
    answered = med(lambda r: int(r[2]))
    lost = med(lambda r: int(r[3]))
    cpu = med(lambda r: int(r[4]) / int(r[2]) * tick_us)
    own = med(lambda r: int(r[5]) / int(r[2]) * tick_us)
    upstream = med(lambda r: int(r[6]))
    c = cg.get(name)
    ir = int(c[3]) / int(c[1]) if c and int(c[1]) > 0 else None
    up = c[4] if c else "n/a"
    print(f"| {name} | {answered:.0f} | {lost:.0f} | {cpu:.2f} | {own:.2f} | {upstream:.0f} | "
          f"{'n/a' if ir is None else format(ir, '.0f')} | {up} |")
PY
}

need python3 "python3"
need bc "apt-get install bc"
for name in $SERVERS; do
    need "$(binary_of "$name")" "build tern with 'cargo build --release', or run 'make deps'"
done
[ "$(nproc)" -gt "$CLIENT_CPU" ] || die "CPU $CLIENT_CPU does not exist (SERVER_CPU/CLIENT_CPU)"
LAST_PORT=$((BASE_PORT + 3))
case " ${SECTIONS[*]} " in *" forward "* | *" forward-miss "*) LAST_PORT=$((BASE_PORT + 5)) ;; esac
for port in $(seq "$BASE_PORT" "$LAST_PORT"); do
    if ss -Hlnu "sport = :$port" | grep -q .; then
        die "UDP port $port is in use: set BASE_PORT"
    fi
done

echo "bench-peers: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (dirty)')"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r)"
echo "server CPU $SERVER_CPU, dnsperf CPU $CLIENT_CPU; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for name in $SERVERS; do
    echo "  $name: $(version_of "$name")"
done

mkdir -p "$WORK/zones"
python3 "$ROOT/scripts/gen-bench-zone.py" mixed --names "$NAMES" --zone "$WORK/zones/bench.zone" \
    --queries "$WORK/queries.txt" --count 100000

for section in "${SECTIONS[@]}"; do
    case $section in
        throughput) section_throughput ;;
        callgrind) section_callgrind ;;
        zone-load) section_zone_load ;;
        forward) section_forward ;;
        forward-miss) section_forward_miss ;;
        *) die "unknown section $section (throughput, callgrind, zone-load, forward, forward-miss)" ;;
    esac
done

echo
echo "bench-peers: done in $((SECONDS / 60)) min $((SECONDS % 60)) s"
