#!/usr/bin/env bash
# tern against Knot DNS and NSD, side by side, on loopback.
#
#   scripts/bench-peers.sh [throughput] [callgrind] [zone-load]     (default: all three)
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
# zone-load   A zone `big.` of BIG_RECORDS A records. For each server (and BIND's named,
#             if installed) LOAD_ROUNDS times: the time from the server's start until the
#             zone's last name answers, and then its memory: the largest VmRSS of its
#             processes, the sum of their PSS (NSD forks; PSS does not count shared
#             pages twice) and the largest VmHWM (peak RSS, reached while loading). Medians.
#
# Run time with the defaults: about 3.5 min throughput (3 servers x 2 modes x 3 rounds
# x 10 s, plus idle checks), 2 min callgrind, 3 min zone load (named is slow): about 9
# minutes, 10 on a busy machine.
# Every server this script starts is in its own process group and is killed on exit
# (normal, error or Ctrl-C).
#
# Environment (defaults in brackets):
#   TERN_BIN [target/release/tern]   SERVERS ["tern knot nsd"]   NAMES [10000]
#   ROUNDS [3]   DURATION [10]   RATE [150000]   OUTSTANDING [500]
#   CG_QUERIES [5000]   CG_RATE [1000]   BIG_RECORDS [1000000]   LOAD_ROUNDS [3]
#   LOAD_SERVERS ["tern knot nsd named"]   SERVER_CPU [0]   CLIENT_CPU [1]
#   BASE_PORT [25353] (ports BASE_PORT..BASE_PORT+3)   EDNS [0] (1: dnsperf -e)
#   QUIET_BUSY [20] QUIET_WAIT [10]: before each run wait up to QUIET_WAIT s for both
#     CPUs to be below QUIET_BUSY % busy (other tasks); the measured busy % is printed.
#   RESULTS [unset]: a directory to keep the raw results, logs and configs in.

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
BIG_RECORDS=${BIG_RECORDS:-1000000}
LOAD_ROUNDS=${LOAD_ROUNDS:-3}
LOAD_SERVERS=${LOAD_SERVERS:-"tern knot nsd named"}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BASE_PORT=${BASE_PORT:-25353}
EDNS=${EDNS:-0}
QUIET_BUSY=${QUIET_BUSY:-20}
QUIET_WAIT=${QUIET_WAIT:-10}
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
        *) die "unknown server $1" ;;
    esac
}

binary_of() {
    case $1 in
        tern) echo "$TERN_BIN" ;;
        knot) echo knotd ;;
        nsd) echo nsd ;;
        named) echo named ;;
    esac
}

version_of() {
    case $1 in
        tern) echo "tern $(stat -c %y "$TERN_BIN" | cut -d. -f1)" ;;
        knot) knotd --version | head -1 ;;
        nsd) nsd -v 2>&1 | head -1 ;;
        named) named -v ;;
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

# stop_server PGID: SIGTERM to the group, SIGKILL after 5 s.
stop_server() {
    local pgid=$1 i
    kill -TERM -- "-$pgid" 2>/dev/null || return 0
    for i in $(seq 50); do
        kill -0 -- "-$pgid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$pgid" 2>/dev/null || true
    wait "$pgid" 2>/dev/null || true
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

group_pids() {
    pgrep -g "$1" || true
}

# Total utime+stime, in clock ticks, of the processes of a group (all threads).
group_ticks() {
    local pid total=0 ticks
    for pid in $(group_pids "$1"); do
        # the command name is in parentheses and may hold spaces: cut after the last ')'
        ticks=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13}') || continue
        total=$((total + ${ticks:-0}))
    done
    echo "$total"
}

# Busy ticks of one CPU: user nice system irq softirq (not idle, iowait, steal).
cpu_busy_ticks() {
    awk -v cpu="cpu$1" '$1 == cpu {print $2 + $3 + $4 + $7 + $8}' /proc/stat
}

cpu_total_ticks() {
    awk -v cpu="cpu$1" '$1 == cpu {print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat
}

# wait_quiet: waits (at most QUIET_WAIT s) until both CPUs were under QUIET_BUSY %
# busy for one second; sets QUIET to the busy % seen last ("cpu0/cpu1").
wait_quiet() {
    local start=$SECONDS b0 b1 t0 t1 p0 p1
    while :; do
        b0=$(cpu_busy_ticks "$SERVER_CPU") t0=$(cpu_total_ticks "$SERVER_CPU")
        b1=$(cpu_busy_ticks "$CLIENT_CPU") t1=$(cpu_total_ticks "$CLIENT_CPU")
        sleep 1
        p0=$(((($(cpu_busy_ticks "$SERVER_CPU") - b0) * 100) / ($(cpu_total_ticks "$SERVER_CPU") - t0 + 1)))
        p1=$(((($(cpu_busy_ticks "$CLIENT_CPU") - b1) * 100) / ($(cpu_total_ticks "$CLIENT_CPU") - t1 + 1)))
        QUIET="$p0/$p1"
        if [ "$p0" -lt "$QUIET_BUSY" ] && [ "$p1" -lt "$QUIET_BUSY" ]; then
            return 0
        fi
        [ $((SECONDS - start)) -ge "$QUIET_WAIT" ] && return 0
    done
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
    head -n "$CG_QUERIES" "$WORK/queries.txt" >"$WORK/queries-callgrind.txt"
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
            -d "$WORK/queries-callgrind.txt" -n 1 -Q "$CG_RATE" -q 50 -t 5 -b "$CLIENT_BUFFER_KB" \
            >"$WORK/callgrind-$name.warm-up.dnsperf" 2>&1 || true
        local pids
        pids=$(group_pids "$PGID" | tr '\n' ' ')
        # shellcheck disable=SC2086 # one argument per pid
        callgrind_control -z $pids >"$dir/callgrind-control.log" 2>&1
        local out="$WORK/callgrind-$name.dnsperf"
        timeout 600 taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$(port_of "$name")" \
            -d "$WORK/queries-callgrind.txt" -n 1 -Q "$CG_RATE" -q 50 -t 5 -b "$CLIENT_BUFFER_KB" >"$out" 2>&1 || true
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

#----------- main -------------------------------------------------------------

need dnsperf "apt-get install dnsperf"
need taskset "util-linux"
need python3 "python3"
need bc "apt-get install bc"
for name in $SERVERS; do
    need "$(binary_of "$name")" "build tern with 'cargo build --release', or run 'make deps'"
done
[ "$(nproc)" -gt "$CLIENT_CPU" ] || die "CPU $CLIENT_CPU does not exist (SERVER_CPU/CLIENT_CPU)"
for port in $(seq "$BASE_PORT" $((BASE_PORT + 3))); do
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
        *) die "unknown section $section (throughput, callgrind, zone-load)" ;;
    esac
done

echo
echo "bench-peers: done in $((SECONDS / 60)) min $((SECONDS % 60)) s"
