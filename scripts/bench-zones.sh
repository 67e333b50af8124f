#!/usr/bin/env bash
# Many small zones: tern beside Knot DNS and NSD, on loopback (issue 22).
#
#   scripts/bench-zones.sh
#
# For each COUNT in COUNTS, COUNT seven-record zones zN.example. are written once
# (scripts/gen-zones.py, with a knot.conf and an nsd.conf listing them) into WORKDIR and
# served by each server of SERVERS in turn, alone, pinned with taskset to SERVER_CPUS, with
# as many workers as SERVER_CPUS has CPUs (tern --cores SERVER_CPUS; Knot udp-, tcp- and
# background-workers; NSD server-count). The probes, the edits and the control tools run
# pinned to CLIENT_CPU. Each server, for each COUNT:
#   start    the seconds from its start until the SOA of the last zone, z(COUNT-1), and of
#            SPOT zones picked at random (the same for every server) all answer (NOERROR,
#            authoritative): the largest of those times (Knot loads its zones in the
#            background, in no promised order);
#   memory   once they answer: PSS (the sum over the server's processes of
#            /proc/PID/smaps_rollup Pss: NSD forks, and PSS counts a shared page once),
#            the largest VmRSS and the largest VmHWM (peak RSS: the load's peak);
#   then ROUNDS rounds of:
#   reload   one zone file edited (the middle zone, z(COUNT/2): its SOA serial + 1), then
#            the server told to reload what changed: tern SIGHUP, `knotc reload`,
#            `nsd-control reload`; the seconds from the command's start until that zone
#            answers its new serial (scripts/wait-serial.py, asking every 5 ms); then, once
#            the server's CPU time stops growing, its PSS;
#   zone     the same file edited again, then that zone alone reloaded by the control
#            tool: `tern reload Z`, `knotc zone-reload Z`, `nsd-control reload Z`; the
#            seconds until the new serial answers; then its PSS again.
# Medians over the rounds; every round's figures are printed as it ends. A server that
# does not finish a step within START_TIMEOUT (start) or RELOAD_TIMEOUT (each reload)
# seconds, or that dies, is recorded as "did not finish" and the script goes on with
# the next server.
# At the end: one Markdown table per COUNT and the growth of each figure from one COUNT
# to the next (ratios), ready for docs/benchmarks.md.
#
# Knot's control tool is run as `knotc -s SOCKET` rather than `knotc -c knot.conf`: with
# -c, knotc parses the whole configuration (a million zone sections) before it sends the
# command, a cost of the tool and not of the server.
#
# Disk and time: 1,000,000 zone files take about 4 GiB (one block each) and a few minutes
# to write; they are written once per COUNT and reused by the three servers, then removed
# (unless KEEP=1). An existing WORKDIR/zones-COUNT that was completed is reused.
# Every server is in its own process group and is killed on exit (normal, error, Ctrl-C).
#
# Environment (defaults in brackets):
#   TERN_BIN [target/release/tern]   COUNTS ["10000 100000 1000000"]
#   SERVERS ["tern knot nsd"]   ROUNDS [3]   SPOT [5]
#   SERVER_CPUS [0]: a taskset CPU list, e.g. 0 or 0,1; its number of CPUs is the number of
#     workers asked of every server.   CLIENT_CPU [1]
#   PORT [25453]   START_TIMEOUT [1200]   RELOAD_TIMEOUT [600]   IDLE_WAIT [60]
#   WORKDIR [a new /tmp/tern-bench-zones.XXXXXX]   KEEP [0] (1: keep the zones and logs)
#   RESULTS [unset]: a directory to copy the results, logs and configurations into.
#   QUIET_BUSY [20] QUIET_WAIT [300]: before each server starts, wait up to QUIET_WAIT s
#     for both CPUs to be below QUIET_BUSY % busy (other tasks); the busy % is printed.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TERN_BIN=${TERN_BIN:-$ROOT/target/release/tern}
COUNTS=${COUNTS:-"10000 100000 1000000"}
SERVERS=${SERVERS:-"tern knot nsd"}
ROUNDS=${ROUNDS:-3}
SPOT=${SPOT:-5}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT=${PORT:-25453}
START_TIMEOUT=${START_TIMEOUT:-1200}
RELOAD_TIMEOUT=${RELOAD_TIMEOUT:-600}
IDLE_WAIT=${IDLE_WAIT:-60}
KEEP=${KEEP:-0}
QUIET_BUSY=${QUIET_BUSY:-20}
QUIET_WAIT=${QUIET_WAIT:-300}
# wait_quiet (bench-lib.sh) watches SERVER_CPU and CLIENT_CPU: the first server CPU
SERVER_CPU=${SERVER_CPUS%%[,-]*}

# stop_server, group_pids, group_ticks, group_memory, cpu_*_ticks, wait_quiet
# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"

die() {
    echo "bench-zones: $*" >&2
    exit 1
}

need() {
    command -v "$1" >/dev/null || die "$1 not found ($2)"
}

# the number of CPUs in a taskset list such as 0,2-3
cpu_count() {
    local part count=0
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then
            count=$((count + ${part#*-} - ${part%-*} + 1))
        else
            count=$((count + 1))
        fi
    done
    echo "$count"
}
WORKERS=$(cpu_count "$SERVER_CPUS")

OWN_WORKDIR=0
if [ -z "${WORKDIR:-}" ]; then
    WORKDIR=$(mktemp -d /tmp/tern-bench-zones.XXXXXX)
    OWN_WORKDIR=1
fi
mkdir -p "$WORKDIR"
WORKDIR=$(cd "$WORKDIR" && pwd)
RESULTS_TSV=$WORKDIR/results.tsv
STARTED=() # process group ids of every server started

cleanup() {
    local pgid
    for pgid in "${STARTED[@]}"; do
        kill -KILL -- "-$pgid" 2>/dev/null || true
    done
    if [ -n "${RESULTS:-}" ]; then
        mkdir -p "$RESULTS"
        cp "$WORKDIR"/*.tsv "$WORKDIR"/*.md "$RESULTS"/ 2>/dev/null || true
        cp -r "$WORKDIR"/run-* "$RESULTS"/ 2>/dev/null || true
        cp -r "$WORKDIR"/conf-* "$RESULTS"/ 2>/dev/null || true
    fi
    if [ "$KEEP" != 1 ]; then
        if [ "$OWN_WORKDIR" = 1 ]; then
            rm -rf "$WORKDIR"
        else
            rm -rf "$WORKDIR"/zones-* "$WORKDIR"/state-* "$WORKDIR"/conf-* "$WORKDIR"/run-*
        fi
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

#----------- zones -----------------------------------------------------------

# generate COUNT: the zones and the Knot and NSD configurations, once.
generate() {
    local count=$1 zones=$WORKDIR/zones-$1 conf=$WORKDIR/conf-$1
    if [ -f "$zones/.complete" ] && [ -f "$conf/knot.conf" ] && [ -f "$conf/nsd.conf" ]; then
        echo "  zones: reusing $zones"
        return 0
    fi
    rm -rf "$zones" "$conf"
    mkdir -p "$conf"
    local start=$SECONDS
    python3 "$ROOT/scripts/gen-zones.py" "$zones" "$count" --knot "$conf/knot.conf" \
        --nsd "$conf/nsd.conf" --port "$PORT" --state "$WORKDIR/state-$count" \
        --workers "$WORKERS"
    touch "$zones/.complete"
    echo "  zones: $count written in $((SECONDS - start)) s, $(du -sh "$zones" | cut -f1) on disk"
}

# edit_zone FILE: adds one to the SOA serial of the file, written in place; makes sure its
# modification time moves forward; prints the new serial.
edit_zone() {
    "$PYTHON" - "$1" <<'PY'
import os, re, sys
path = sys.argv[1]
before = os.stat(path)
with open(path) as zone:
    text = zone.read()
match = re.search(r"\bSOA\s+\S+\s+\S+\s+(\d+)", text)
serial = int(match.group(1)) + 1
with open(path, "w") as zone:
    zone.write(text[: match.start(1)] + str(serial) + text[match.end(1) :])
after = os.stat(path)
if after.st_mtime_ns <= before.st_mtime_ns:
    later = before.st_mtime_ns + 1_000_000
    os.utime(path, ns=(later, later))
print(serial)
PY
}

#----------- servers ---------------------------------------------------------

# start_server NAME COUNT ZONE: starts it pinned to SERVER_CPUS in a new process group;
# sets PGID, RUN_DIR, RELOAD_ALL (the command that reloads what changed) and RELOAD_ONE
# (the control tool's reload of ZONE alone).
start_server() {
    local name=$1 count=$2 zone=$3 conf=$WORKDIR/conf-$2 state=$WORKDIR/state-$2 command
    RUN_DIR=$WORKDIR/run-$count-$name
    rm -rf "$RUN_DIR" "$state"
    mkdir -p "$RUN_DIR" "$state"
    case $name in
        tern)
            command=("$TERN_BIN" serve --zones "$WORKDIR/zones-$count" --listen "127.0.0.1:$PORT"
                --cores "$SERVER_CPUS" --socket "$RUN_DIR/tern.sock")
            RELOAD_ONE=("$TERN_BIN" reload --socket "$RUN_DIR/tern.sock" "$zone")
            ;;
        knot)
            command=(knotd -c "$conf/knot.conf")
            # knotc's timeout is whole seconds
            local timeout=${RELOAD_TIMEOUT%.*}
            [ "${timeout:-0}" -ge 1 ] || timeout=1
            RELOAD_ALL=(knotc -s "$state/knot.sock" -t "$timeout" reload)
            RELOAD_ONE=(knotc -s "$state/knot.sock" -t "$timeout" zone-reload "$zone")
            ;;
        nsd)
            command=(nsd -d -c "$conf/nsd.conf")
            RELOAD_ALL=(nsd-control -c "$conf/nsd.conf" reload)
            RELOAD_ONE=(nsd-control -c "$conf/nsd.conf" reload "$zone")
            ;;
        *) die "unknown server $name (SERVERS: tern, knot, nsd)" ;;
    esac
    # Not a job-control shell: the background child is not a group leader, so setsid
    # makes it one without forking and $! is the new group's id (and tern's pid).
    STARTED_AT=$(date +%s.%N)
    setsid taskset -c "$SERVER_CPUS" "${command[@]}" >"$RUN_DIR/log" 2>&1 </dev/null &
    PGID=$!
    STARTED+=("$PGID")
    # tern reloads on SIGHUP; the group's id is tern's pid
    [ "$name" = tern ] && RELOAD_ALL=(kill -HUP "$PGID")
    return 0
}

alive() {
    kill -0 -- "-$1" 2>/dev/null
}

# wait_idle PGID: until the group's CPU time grew by at most one tick over half a second
# (a reload's work done: freed memory returned), at most IDLE_WAIT s.
wait_idle() {
    local start=$SECONDS before after
    while [ $((SECONDS - start)) -lt "$IDLE_WAIT" ]; do
        before=$(group_ticks "$1")
        sleep 0.5
        after=$(group_ticks "$1")
        [ $((after - before)) -le 1 ] && return 0
    done
}

# group_cpu PGID: the CPU time (user + system, s) of the group's processes and of the
# children they reaped (NSD's reload runs in a child process that exits).
group_cpu() {
    local pid total=0 ticks
    for pid in $(group_pids "$1"); do
        # the command name is in parentheses and may hold spaces: cut after the last ')'
        ticks=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13 + $14 + $15}') || continue
        total=$((total + ${ticks:-0}))
    done
    awk -v ticks="$total" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", ticks / hz}'
}

# cpu_since BEFORE PGID: the group's CPU seconds since BEFORE (a group_cpu figure)
cpu_since() {
    awk -v before="$1" -v now="$(group_cpu "$2")" 'BEGIN {printf "%.2f", now - before}'
}

# record COUNT NAME FIELD ROUND VALUE
record() {
    printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS_TSV"
}

mib() {
    echo $(($1 / 1024))
}

# reload_step NAME COUNT ROUND FIELD ZONE FILE CMD...: edits FILE, runs CMD and records
# the seconds until ZONE answers the new serial. Returns 1 if it did not.
reload_step() {
    local name=$1 count=$2 round=$3 field=$4 zone=$5 file=$6 serial out
    shift 6
    serial=$(edit_zone "$file")
    STEP_CPU_BEFORE=$(group_cpu "$PGID")
    out=$(taskset -c "$CLIENT_CPU" "$PYTHON" "$ROOT/scripts/wait-serial.py" --port "$PORT" \
        --name "$zone" --serial "$serial" --timeout "$RELOAD_TIMEOUT" \
        --log "$RUN_DIR/control.log" -- "$@") || true
    case $out in
        dnf* | "")
            record "$count" "$name" "$field" "$round" dnf
            echo "  $name $field round $round: did not finish within $RELOAD_TIMEOUT s (${out:-no output}; serial $serial)"
            return 1
            ;;
    esac
    local elapsed rc took
    read -r elapsed rc took <<<"$out"
    record "$count" "$name" "$field" "$round" "$elapsed"
    STEP="$elapsed s (command exit $rc after $took s)"
}

# run_server NAME COUNT
run_server() {
    local name=$1 count=$2 zones=$WORKDIR/zones-$2
    local last="z$((count - 1)).example." middle=$((count / 2))
    local zone="z$middle.example." file="$zones/z$middle.example.zone"
    wait_quiet
    echo
    echo "-- $name, $count zones (CPUs busy before the start: $QUIET %; load average $(cut -d' ' -f1-3 /proc/loadavg))"
    local names=("$last") spot elapsed slowest=0
    # SPOT zones at random, the same for every server (seeded by COUNT)
    mapfile -t spot < <("$PYTHON" -c "import random, sys
r = random.Random(int(sys.argv[1]))
print('\n'.join(f'z{r.randrange(int(sys.argv[1]))}.example.' for _ in range(int(sys.argv[2]))))" \
        "$count" "$SPOT")
    names+=("${spot[@]}")
    start_server "$name" "$count" "$zone"
    local pgid=$PGID since=$STARTED_AT
    local asked
    for asked in "${names[@]}"; do
        if ! elapsed=$(taskset -c "$CLIENT_CPU" "$PYTHON" "$ROOT/scripts/wait-answer.py" \
            --port "$PORT" --name "$asked" --type SOA --timeout "$START_TIMEOUT" \
            --since "$since" 2>>"$RUN_DIR/probe.log"); then
            record "$count" "$name" start 0 dnf
            if alive "$pgid"; then
                echo "  $name: $asked did not answer within $START_TIMEOUT s: did not finish"
            else
                echo "  $name: exited before $asked answered: did not finish; its log ends:"
                tail -5 "$RUN_DIR/log" | sed 's/^/    /'
            fi
            stop_server "$pgid"
            return 0
        fi
        slowest=$("$PYTHON" -c "import sys; print(max(float(sys.argv[1]), float(sys.argv[2])))" \
            "$slowest" "$elapsed")
    done
    record "$count" "$name" start 0 "$slowest"
    local cpu
    cpu=$(group_cpu "$pgid")
    record "$count" "$name" start_cpu 0 "$cpu"
    local pss rss hwm
    read -r pss rss hwm <<<"$(group_memory "$pgid")"
    record "$count" "$name" pss 0 "$pss"
    record "$count" "$name" rss 0 "$rss"
    record "$count" "$name" hwm 0 "$hwm"
    echo "  start: $slowest s ($cpu s CPU) until $last and ${#spot[@]} random zones answered;" \
        "PSS $(mib "$pss") MiB, RSS $(mib "$rss") MiB, VmHWM $(mib "$hwm") MiB"

    local round
    for round in $(seq "$ROUNDS"); do
        wait_idle "$pgid"
        if ! reload_step "$name" "$count" "$round" reload "$zone" "$file" "${RELOAD_ALL[@]}"; then
            break
        fi
        wait_idle "$pgid"
        cpu=$(cpu_since "$STEP_CPU_BEFORE" "$pgid")
        record "$count" "$name" reload_cpu "$round" "$cpu"
        local reload_text="$STEP, $cpu s CPU"
        read -r pss rss hwm <<<"$(group_memory "$pgid")"
        record "$count" "$name" pss_reload "$round" "$pss"
        if ! reload_step "$name" "$count" "$round" zone "$zone" "$file" "${RELOAD_ONE[@]}"; then
            break
        fi
        wait_idle "$pgid"
        cpu=$(cpu_since "$STEP_CPU_BEFORE" "$pgid")
        record "$count" "$name" zone_cpu "$round" "$cpu"
        local pss_zone
        read -r pss_zone rss hwm <<<"$(group_memory "$pgid")"
        record "$count" "$name" pss_zone "$round" "$pss_zone"
        echo "  round $round: reload after 1 edit $reload_text, PSS then $(mib "$pss") MiB;" \
            "reload of $zone $STEP, $cpu s CPU, PSS then $(mib "$pss_zone") MiB"
        alive "$pgid" || break
    done
    if ! alive "$pgid"; then
        record "$count" "$name" died 0 1
        echo "  $name exited during the reloads; its log ends:"
        tail -5 "$RUN_DIR/log" | sed 's/^/    /'
    fi
    stop_server "$pgid"
}

#----------- report -----------------------------------------------------------

report() {
    python3 - "$RESULTS_TSV" "$COUNTS" "$SERVERS" "$START_TIMEOUT" "$RELOAD_TIMEOUT" <<'PY'
import statistics, sys
path, counts, servers = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
start_limit, reload_limit = sys.argv[4], sys.argv[5]
rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
def values(count, server, field):
    return [r[4] for r in rows if r[0] == count and r[1] == server and r[2] == field]
def median(count, server, field):
    """The median over the rounds; 'dnf' if any round did not finish; None if none ran."""
    got = values(count, server, field)
    if not got:
        return None
    if "dnf" in got:
        return "dnf"
    return statistics.median(float(v) for v in got)
def fmt_s(v, limit):
    if v is None:
        return "-"
    if v == "dnf":
        return f"did not finish (> {limit} s)"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"
def fmt_cpu(wall, cpu, limit):
    """wall seconds, and the server's CPU seconds in brackets"""
    text = fmt_s(wall, limit)
    if isinstance(wall, float) and isinstance(cpu, float):
        text += f" ({cpu:.2f})" if cpu < 10 else f" ({cpu:.0f})"
    return text
def fmt_mib(v):
    if v is None or v == "dnf":
        return "-"
    return f"{v / 1024:.0f}"
def last(count, server, field):
    got = [v for v in values(count, server, field) if v != "dnf"]
    return float(got[-1]) if got else None
FIGURES = [
    ("start, s", lambda c, s: median(c, s, "start"), "s"),
    ("start, CPU s", lambda c, s: median(c, s, "start_cpu"), "s"),
    ("PSS, MiB", lambda c, s: median(c, s, "pss"), "mib"),
    ("VmHWM, MiB", lambda c, s: median(c, s, "hwm"), "mib"),
    ("reload after 1 edit, s", lambda c, s: median(c, s, "reload"), "s"),
    ("reload after 1 edit, CPU s", lambda c, s: median(c, s, "reload_cpu"), "s"),
    ("PSS after reloads, MiB", lambda c, s: last(c, s, "pss_zone"), "mib"),
    ("reload of 1 zone, s", lambda c, s: median(c, s, "zone"), "s"),
    ("reload of 1 zone, CPU s", lambda c, s: median(c, s, "zone_cpu"), "s"),
]
for count in counts:
    if not any(r[0] == count for r in rows):
        continue
    print()
    print(f"### {int(count):,} zones")
    print()
    print("(seconds: wall clock, and in brackets the server's CPU time)")
    print()
    print("| server | start until every zone answers, s | PSS, MiB | RSS, MiB | VmHWM, MiB "
          "| reload after 1 edit (SIGHUP, knotc or nsd-control reload), s | PSS after it, MiB | reload of that zone, s "
          "| PSS after the last round, MiB | PSS per zone, bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for server in servers:
        if not any(r[0] == count and r[1] == server for r in rows):
            continue
        pss = median(count, server, "pss")
        per_zone = "-" if pss in (None, "dnf") else f"{pss * 1024 / int(count):.0f}"
        died = " (exited)" if values(count, server, "died") else ""
        print(f"| {server}{died} | {fmt_cpu(median(count, server, 'start'), median(count, server, 'start_cpu'), start_limit)} "
              f"| {fmt_mib(pss)} | {fmt_mib(median(count, server, 'rss'))} "
              f"| {fmt_mib(median(count, server, 'hwm'))} "
              f"| {fmt_cpu(median(count, server, 'reload'), median(count, server, 'reload_cpu'), reload_limit)} "
              f"| {fmt_mib(last(count, server, 'pss_reload'))} "
              f"| {fmt_cpu(median(count, server, 'zone'), median(count, server, 'zone_cpu'), reload_limit)} "
              f"| {fmt_mib(last(count, server, 'pss_zone'))} | {per_zone} |")
ran = [c for c in counts if any(r[0] == c for r in rows)]
if len(ran) > 1:
    print()
    print("### Growth with the number of zones")
    print()
    steps = list(zip(ran, ran[1:]))
    def short(c):
        c = int(c)
        return f"{c // 1000000}M" if c % 1000000 == 0 else f"{c // 1000}k" if c % 1000 == 0 else str(c)
    header = " | ".join(short(c) for c in ran)
    ratios = " | ".join(f"{short(b)} / {short(a)}" for a, b in steps)
    print(f"| server | figure | {header} | {ratios} |")
    print("|---|---|" + "---:|" * (len(ran) + len(steps)))
    for server in servers:
        for label, get, kind in FIGURES:
            got = [get(c, server) for c in ran]
            if all(v is None for v in got):
                continue
            shown = [fmt_s(v, "limit") if kind == "s" else fmt_mib(v) for v in got]
            ratio = []
            for a, b in zip(got, got[1:]):
                if isinstance(a, float) and isinstance(b, float) and a > 0:
                    ratio.append(f"{b / a:.1f}")
                else:
                    ratio.append("-")
            print(f"| {server} | {label} | " + " | ".join(shown) + " | " + " | ".join(ratio) + " |")
PY
}

#----------- main ---------------------------------------------------------------

need python3 "python3"
# the interpreter itself, not a version manager's shim that starts slower
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
CLK_TCK=$(getconf CLK_TCK)
need taskset "util-linux"
for name in $SERVERS; do
    case $name in
        tern) [ -x "$TERN_BIN" ] || die "$TERN_BIN not found: cargo build --release --bin tern" ;;
        knot)
            need knotd "make deps"
            need knotc "make deps"
            ;;
        nsd)
            need nsd "make deps"
            need nsd-control "make deps"
            ;;
        *) die "unknown server $name (SERVERS: tern, knot, nsd)" ;;
    esac
done
[ "$(nproc)" -gt "$CLIENT_CPU" ] || die "CPU $CLIENT_CPU does not exist (CLIENT_CPU)"
if ss -Hlnu "sport = :$PORT" | grep -q .; then
    die "UDP port $PORT is in use: set PORT"
fi

echo "bench-zones: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (dirty)')"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
echo "uptime: $(uptime)"
echo "servers on CPU(s) $SERVER_CPUS with $WORKERS worker(s) each; probes and control tools on CPU $CLIENT_CPU"
for name in $SERVERS; do
    case $name in
        tern) echo "  tern: $TERN_BIN, built $(stat -c %y "$TERN_BIN" | cut -d. -f1)" ;;
        knot) echo "  knot: $(knotd --version | head -1)" ;;
        nsd) echo "  nsd: $(nsd -v 2>&1 | head -1)" ;;
    esac
done
echo "workdir: $WORKDIR; $ROUNDS rounds; limits: start $START_TIMEOUT s, each reload $RELOAD_TIMEOUT s"
: >"$RESULTS_TSV"

for count in $COUNTS; do
    echo
    echo "== $count zones (uptime: $(uptime | sed 's/.*load/load/'))"
    generate "$count"
    for name in $SERVERS; do
        run_server "$name" "$count"
    done
    if [ "$KEEP" != 1 ]; then
        rm -rf "$WORKDIR/zones-$count"
    fi
done

echo
echo "bench-zones: done in $((SECONDS / 60)) min $((SECONDS % 60)) s"
report | tee "$WORKDIR/summary.md"
