#!/usr/bin/env bash
# tern and Knot DNS, each with XDP (AF_XDP) and with ordinary UDP sockets, loaded by
# Knot's XDP traffic generator kxdpgun over a veth pair between two network namespaces.
#
#   scripts/bench-xdp.sh            (as root; `make bench-xdp`)
#
# Set-up (all of it created by this script and deleted on exit, error or Ctrl-C):
#   two network namespaces, tern-bx-s-PID (the server) and tern-bx-c-PID (the client),
#   joined by one veth pair and nothing else: bxsPID 198.51.100.1/24 in the server's,
#   bxcPID 198.51.100.2/24 in the client's (IP=6: 2001:db8:b::1/64 and ::2). One RX and one
#   TX queue per end; GRO on at both ends (veth then always runs NAPI, which XDP redirects
#   and AF_XDP need); static neighbour entries (no ARP/ND during the runs); TX checksum
#   offload off at the client end, so that the readiness probes sent by the client's
#   kernel carry full UDP checksums as on a wire. No other interface or address of the
#   machine is touched. (Killed with SIGKILL, it cannot clean up: the next run names the
#   namespaces left over, to delete with `ip netns del`.)
#   NAPI=threaded (default): each end's veth NAPI runs in its own kernel thread, the
#   server end's pinned to SERVER_CPU, the client end's to CLIENT_CPU. On veth the receive
#   work (the XDP program, the redirect into the AF_XDP socket, or the IP/UDP stack up to
#   the socket) otherwise runs in the SENDER's softirq, i.e. the server's receive path on
#   the client's CPU and kxdpgun's on the server's: threaded NAPI puts each side's work
#   on its own CPU, as an interrupt on the server's core would. NAPI=softirq leaves the
#   kernel's default (then the CPU figures are not the server's alone).
#   AF_XDP on veth is copy mode (no zero-copy), the XDP program runs in native (driver)
#   mode; kxdpgun sends from one address and port 2000-65535, all queries with the same
#   DNS ID and RD set. Past what a server takes, the extra work of receiving what it then
#   drops shares its core (the NAPI thread is on SERVER_CPU), so the socket servers answer
#   fewer queries at "max" than at their best rate: see the "most answered/s" table.
#
# Servers (SERVERS, in this order), each alone, pinned to SERVER_CPU with one worker:
#   tern-xdp   tern serve --zones DIR --listen ADDR:53 --cores SERVER_CPU --xdp IFACE
#              (skipped with a note when `tern serve --help` does not list --xdp)
#   tern-sock  the same without --xdp
#   knot-xdp   knotd with `xdp: listen: IFACE@53` and `server: listen: ADDR@53`,
#              udp-workers 1, background-workers 1 (taskset, as bench-peers.sh does)
#   knot-sock  knotd with the socket listener only
# Zone and queries: the zone bench. of NAMES hosts and the query mix of
# scripts/gen-bench-zone.py, as scripts/bench-peers.sh uses them (kxdpgun reads the same
# "NAME TYPE" lines; EDNS=1 adds kxdpgun's E flag to every line).
#
# For ROUNDS rounds, each server in turn is started, waited for (a query from the client
# namespace through the veth), and gets one kxdpgun run per offered rate in RATES
# (kxdpgun -t DURATION -Q RATE, pinned to CLIENT_CPU with -F; "max" = -Q MAX_QPS, more
# than any one core answers), then is stopped and any XDP program left on the veth is
# detached (knotd and kxdpgun both leave theirs attached when they exit).
# Per run: queries sent (kxdpgun's count), answered (responses kxdpgun received, also
# those that arrived in the 4 s it keeps listening after sending), lost = sent - answered
# and where they were dropped (queries by the veth: the server end's NAPI ring or the AF_XDP
# receive ring full; in the server's socket buffer; answers by the veth on their way back),
# the answers' RCODEs, the busy time
# of SERVER_CPU over the whole kxdpgun run (elapsed - idle - iowait - steal of /proc/stat:
# the server, its NAPI thread and anything else that ran there; the idle time is exact on
# a tickless kernel, the user/system ticks are samples that miss short bursts), the CPU
# time of the server's processes plus its veth NAPI thread (/proc/PID/stat: exact, and not
# disturbed by other tasks on SERVER_CPU), and the UDP datagrams the server namespace's
# kernel stack received (0 for an XDP server that takes every query, all of them for a
# socket server). Printed: a table of the medians over the rounds, one row per server and
# rate, each server's best answered rate, and the ratio tern-xdp / knot-xdp at max.
#
# Run time with the defaults: 4 servers x 5 rates x 3 rounds x (DURATION + about 6 s):
# about 16 minutes.
#
# Environment (defaults in brackets):
#   TERN_BIN [target/release/tern]   SERVERS ["tern-xdp tern-sock knot-xdp knot-sock"]
#   RATES ["100000 200000 300000 400000 max"]   MAX_QPS [10000000]   DURATION [10]
#   ROUNDS [3]   NAMES [10000]   SERVER_CPU [0]   CLIENT_CPU [1]   IP [4] (or 6)
#   EDNS [0] (1: every query with EDNS)   BATCH [10] (kxdpgun -b)   NAPI [threaded]
#   QUIET_BUSY [20] QUIET_WAIT [10]: before each run wait up to QUIET_WAIT s for both
#     CPUs to be below QUIET_BUSY % busy (other tasks); the busy % seen is printed.
#   RESULTS [unset]: a directory to keep the raw results, kxdpgun outputs, logs, configs.
# Packages it installs with apt-get when missing: knot, knot-dnsutils (kxdpgun), ethtool.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TERN_BIN=${TERN_BIN:-$ROOT/target/release/tern}
SERVERS=${SERVERS:-"tern-xdp tern-sock knot-xdp knot-sock"}
RATES=${RATES:-"100000 200000 300000 400000 max"}
MAX_QPS=${MAX_QPS:-10000000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
NAMES=${NAMES:-10000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
IP=${IP:-4}
EDNS=${EDNS:-0}
BATCH=${BATCH:-10}
NAPI=${NAPI:-threaded}
QUIET_BUSY=${QUIET_BUSY:-20}
QUIET_WAIT=${QUIET_WAIT:-10}
READY_TIMEOUT=60
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || { echo "bench-xdp: DURATION must be a whole number of seconds" >&2; exit 1; }
# kxdpgun keeps receiving 4 s after it stops sending; then it needs a moment to exit.
KXDPGUN_TIMEOUT=$((DURATION + 30))
TICK_US=$((1000000 / $(getconf CLK_TCK)))

NS_SERVER=tern-bx-s-$$
NS_CLIENT=tern-bx-c-$$
IF_SERVER=bxs$$
IF_CLIENT=bxc$$
if [ "$IP" = 6 ]; then
    SERVER_ADDR=2001:db8:b::1
    CLIENT_ADDR=2001:db8:b::2
    PREFIX=64
    LISTEN_TERN="[$SERVER_ADDR]:53"
else
    SERVER_ADDR=198.51.100.1
    CLIENT_ADDR=198.51.100.2
    PREFIX=24
    LISTEN_TERN="$SERVER_ADDR:53"
fi

#----------- set-up and clean-up -------------------------------------------

die() {
    echo "bench-xdp: $*" >&2
    exit 1
}

need() {
    command -v "$1" >/dev/null || die "$1 not found ($2)"
}

WORK=$(mktemp -d /tmp/tern-bench-xdp.XXXXXX)
STARTED=()      # process group ids of every server and kxdpgun started
NAMESPACES=()   # the namespaces created

# forget PGID: the group has ended; no longer one to kill on exit (its id may be reused).
forget() {
    local kept=() pgid
    for pgid in "${STARTED[@]}"; do
        [ "$pgid" = "$1" ] || kept+=("$pgid")
    done
    STARTED=("${kept[@]}")
}

# in_ns NS COMMAND...: runs COMMAND in namespace NS.
in_ns() {
    local ns=$1
    shift
    ip netns exec "$ns" "$@"
}

cleanup() {
    local pgid ns pid
    trap - INT TERM
    for pgid in "${STARTED[@]}"; do
        kill -KILL -- "-$pgid" 2>/dev/null || true
    done
    for pgid in "${STARTED[@]}"; do
        wait "$pgid" 2>/dev/null || true
        # the rest of the group (kxdpgun under timeout) may take a moment to exit
        local i
        for i in $(seq 100); do
            kill -0 -- "-$pgid" 2>/dev/null || break
            sleep 0.1
        done
    done
    for ns in "${NAMESPACES[@]}"; do
        # Any process still in the namespace would keep it (and the veth) alive after
        # `ip netns del`: every one of them was started by this script.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null || true
        done
    done
    for ns in "${NAMESPACES[@]}"; do
        local i
        for i in $(seq 50); do
            [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
            sleep 0.1
        done
        ip netns del "$ns" 2>/dev/null || echo "bench-xdp: could not delete namespace $ns" >&2
    done
    if [ -n "${RESULTS:-}" ]; then
        mkdir -p "$RESULTS"
        cp -r "$WORK"/. "$RESULTS"/ 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# install_missing PACKAGE...: apt-get installs the Debian packages not installed yet.
install_missing() {
    local pkg missing=() sudo=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$pkg")
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
}

# mac_of NS IFACE
mac_of() {
    in_ns "$1" cat "/sys/class/net/$2/address"
}

# xdp_prog NS IFACE: the XDP program attached to IFACE as `ip link` shows it, with its
# mode ("prog/xdp id 12 name xdp_redirect_dn tag ... jited, mode xdp"; xdp = native, in the
# driver; xdpgeneric = generic, on socket buffers), or nothing.
xdp_prog() {
    ip -n "$1" link show dev "$2" | awk '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^xdp(generic|drv|offload)?$/) mode = $i }
        /prog\/xdp/ { sub(/^ +/, ""); prog = $0 }
        END { if (prog != "") print prog ", mode " mode }'
}

# detach_xdp NS IFACE: removes whatever XDP program is attached (knotd and kxdpgun leave
# theirs when they exit).
detach_xdp() {
    local mode
    for mode in xdp xdpgeneric xdpdrv; do
        ip -n "$1" link set dev "$2" "$mode" off 2>/dev/null || true
    done
    [ -z "$(xdp_prog "$1" "$2")" ] || die "cannot detach the XDP program from $2: $(xdp_prog "$1" "$2")"
}

# napi_thread IFACE: the pid of the NAPI kernel thread of IFACE ("napi/IFACE-ID"; the
# interface names carry this script's pid, so they are not another veth's).
napi_thread() {
    local pid comm
    for pid in $(pgrep "^napi/$1" || true); do
        comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
        case $comm in "napi/$1-"* | "napi/$1") echo "$pid" ;; esac
    done
}

# pin_napi: (re)pins both NAPI threads; sets NAPI_SERVER_PID.
pin_napi() {
    NAPI_SERVER_PID=""
    [ "$NAPI" = threaded ] || return 0
    local server client
    server=$(napi_thread "$IF_SERVER")
    client=$(napi_thread "$IF_CLIENT")
    [ "$(echo "$server" | wc -w)" = 1 ] && [ "$(echo "$client" | wc -w)" = 1 ] ||
        die "expected one NAPI thread per veth end, found '$server' ($IF_SERVER) and '$client' ($IF_CLIENT)"
    taskset -pc "$SERVER_CPU" "$server" >/dev/null
    taskset -pc "$CLIENT_CPU" "$client" >/dev/null
    NAPI_SERVER_PID=$server
}

setup_network() {
    local ns
    for ns in "$NS_SERVER" "$NS_CLIENT"; do
        ! ip netns list | grep -qw "^$ns" || die "network namespace $ns exists already"
        local err
        err=$(ip netns add "$ns" 2>&1) ||
            die "cannot create network namespace $ns: $err (needs root, i.e. CAP_SYS_ADMIN, a kernel with network namespaces and a writable /run/netns)"
        NAMESPACES+=("$ns")
    done
    # Created directly in the namespaces: the pair never exists in the machine's own.
    local err
    err=$(ip link add "$IF_SERVER" netns "$NS_SERVER" numtxqueues 1 numrxqueues 1 type veth \
        peer name "$IF_CLIENT" netns "$NS_CLIENT" numtxqueues 1 numrxqueues 1 2>&1) ||
        die "cannot create the veth pair: $err"
    local side iface addr
    for side in server client; do
        if [ $side = server ]; then
            ns=$NS_SERVER iface=$IF_SERVER addr=$SERVER_ADDR
        else
            ns=$NS_CLIENT iface=$IF_CLIENT addr=$CLIENT_ADDR
        fi
        if [ "$IP" = 6 ]; then
            ip -n "$ns" addr add "$addr/$PREFIX" dev "$iface" nodad
        else
            # no IPv6 at all: no router solicitations or DAD packets during the runs
            in_ns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
            in_ns "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
            ip -n "$ns" addr add "$addr/$PREFIX" dev "$iface"
        fi
        ip -n "$ns" link set dev lo up
        ip -n "$ns" link set dev "$iface" up
        # GRO on: veth runs NAPI at all times (needed for XDP redirects into it, and for
        # threaded NAPI even without an XDP program)
        in_ns "$ns" ethtool -K "$iface" gro on >/dev/null
    done
    # full UDP checksums in the packets the client's kernel sends (the readiness probes)
    in_ns "$NS_CLIENT" ethtool -K "$IF_CLIENT" tx off >/dev/null
    # tern refuses XDP on a device that takes VLAN tags out of frames (on by default on a
    # veth; docs/decisions/0012-af-xdp.md); no tagged traffic here, so nothing else changes
    in_ns "$NS_SERVER" ethtool -K "$IF_SERVER" rxvlan off rx-vlan-stag-hw-parse off >/dev/null
    SERVER_MAC=$(mac_of "$NS_SERVER" "$IF_SERVER")
    CLIENT_MAC=$(mac_of "$NS_CLIENT" "$IF_CLIENT")
    ip -n "$NS_SERVER" neigh replace "$CLIENT_ADDR" lladdr "$CLIENT_MAC" dev "$IF_SERVER" nud permanent
    ip -n "$NS_CLIENT" neigh replace "$SERVER_ADDR" lladdr "$SERVER_MAC" dev "$IF_CLIENT" nud permanent
    if [ "$NAPI" = threaded ]; then
        in_ns "$NS_SERVER" sh -c "echo 1 >/sys/class/net/$IF_SERVER/threaded" 2>/dev/null &&
            in_ns "$NS_CLIENT" sh -c "echo 1 >/sys/class/net/$IF_CLIENT/threaded" 2>/dev/null ||
            die "cannot switch the veth to threaded NAPI (kernel older than 5.12?): run with NAPI=softirq"
        pin_napi
    fi
    local i
    for i in $(seq 50); do
        ip -n "$NS_CLIENT" -br link show dev "$IF_CLIENT" | grep -qw UP && break
        sleep 0.1
    done
}

#----------- servers --------------------------------------------------------

tern_has_xdp() {
    "$TERN_BIN" serve --help 2>/dev/null | grep -q -- '--xdp'
}

# write_knot_config DIR XDP(0/1)
write_knot_config() {
    local dir=$1 xdp=$2
    mkdir -p "$dir/db"
    {
        cat <<EOF
server:
    listen: $SERVER_ADDR@53
    rundir: $dir
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
EOF
        if [ "$xdp" = 1 ]; then
            cat <<EOF
xdp:
    listen: $IF_SERVER@53
EOF
        fi
        cat <<EOF
control:
    listen: $dir/knot.sock
log:
  - target: stderr
    any: info
database:
    storage: $dir/db
template:
  - id: default
    storage: $WORK/zones
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
    semantic-checks: off
zone:
  - domain: bench.
    file: bench.zone
EOF
    } >"$dir/knot.conf"
}

# start_server NAME: starts it in the server namespace, pinned to SERVER_CPU, in a new
# process group; sets PGID and RUN_DIR.
start_server() {
    local name=$1 dir command
    dir=$(mktemp -d "$WORK/run-$name.XXXX")
    case $name in
        tern-xdp | tern-sock)
            command=("$TERN_BIN" serve --zones "$WORK/zones" --listen "$LISTEN_TERN"
                --cores "$SERVER_CPU")
            [ "$name" = tern-xdp ] && command+=(--xdp "$IF_SERVER")
            # a control socket of its own, not the default one another tern may be using
            if "$TERN_BIN" serve --help | grep -q -- --socket; then
                command+=(--socket "$dir/tern.sock")
            fi
            ;;
        knot-xdp)
            write_knot_config "$dir" 1
            command=(knotd -c "$dir/knot.conf")
            ;;
        knot-sock)
            write_knot_config "$dir" 0
            command=(knotd -c "$dir/knot.conf")
            ;;
        *) die "unknown server $name (SERVERS: tern-xdp tern-sock knot-xdp knot-sock)" ;;
    esac
    printf '%q ' "${command[@]}" >"$dir/command"
    # Not a job-control shell: the background child is not a group leader, so setsid
    # makes it one without forking and $! is the new group's id (ip netns exec and
    # taskset exec, they do not fork).
    setsid ip netns exec "$NS_SERVER" taskset -c "$SERVER_CPU" "${command[@]}" \
        >"$dir/log" 2>&1 </dev/null &
    PGID=$!
    STARTED+=("$PGID")
    RUN_DIR=$dir
}

# stop_server PGID: SIGTERM to the group, SIGKILL after 5 s; then detaches any XDP program
# the server left on its veth.
stop_server() {
    local pgid=$1 i
    if kill -TERM -- "-$pgid" 2>/dev/null; then
        for i in $(seq 50); do
            kill -0 -- "-$pgid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$pgid" 2>/dev/null || true
        wait "$pgid" 2>/dev/null || true
    fi
    forget "$pgid"
    detach_xdp "$NS_SERVER" "$IF_SERVER"
}

# wait_ready NAME: a query for host0.bench. from the client namespace, over the veth
# (through the server's XDP path when it has one), until it is answered.
wait_ready() {
    in_ns "$NS_CLIENT" python3 "$ROOT/scripts/wait-answer.py" --host "$SERVER_ADDR" --port 53 \
        --name host0.bench. --timeout "$READY_TIMEOUT" --interval 0.05 >/dev/null || {
        echo "--- log of $1 ($(cat "$RUN_DIR/command")):" >&2
        tail -20 "$RUN_DIR/log" >&2
        die "$1 did not answer host0.bench. over the veth"
    }
}

group_pids() {
    pgrep -g "$1" || true
}

# pid_ticks PID: utime+stime of a process or thread, in clock ticks.
pid_ticks() {
    # the command name is in parentheses and may hold spaces: cut after the last ')'
    sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}' || echo 0
}

# Total utime+stime, in clock ticks, of the processes of a group (all threads).
group_ticks() {
    local pid total=0 ticks
    for pid in $(group_pids "$1"); do
        ticks=$(pid_ticks "$pid")
        total=$((total + ${ticks:-0}))
    done
    echo "$total"
}

# Busy ticks of one CPU: user nice system irq softirq (not idle, iowait, steal). Sampled
# at each timer tick: with a tickless idle kernel, work done in bursts between ticks is
# missed (kept as a cross-check in results.tsv only).
cpu_busy_ticks() {
    awk -v cpu="cpu$1" '$1 == cpu {print $2 + $3 + $4 + $7 + $8}' /proc/stat
}

# Idle, iowait and steal ticks of one CPU: the idle time is measured exactly with a
# tickless kernel, so busy = elapsed - idle is too.
cpu_idle_ticks() {
    awk -v cpu="cpu$1" '$1 == cpu {print $5 + $6 + $9}' /proc/stat
}

now_us() {
    echo $(($(date +%s%N) / 1000))
}

# busy_percent START_US IDLE_TICKS_START CPU: the CPU's busy % since then.
busy_percent() {
    local elapsed idle
    elapsed=$(($(now_us) - $1))
    idle=$((($(cpu_idle_ticks "$3") - $2) * TICK_US))
    [ "$idle" -gt "$elapsed" ] && idle=$elapsed
    echo $(((elapsed - idle) * 100 / (elapsed + 1)))
}

# wait_quiet: waits (at most QUIET_WAIT s) until both CPUs were under QUIET_BUSY %
# busy for one second; sets QUIET to the busy % seen last ("cpu0/cpu1").
wait_quiet() {
    local start=$SECONDS t i0 i1 p0 p1
    while :; do
        t=$(now_us) i0=$(cpu_idle_ticks "$SERVER_CPU") i1=$(cpu_idle_ticks "$CLIENT_CPU")
        sleep 1
        p0=$(busy_percent "$t" "$i0" "$SERVER_CPU")
        p1=$(busy_percent "$t" "$i1" "$CLIENT_CPU")
        QUIET="$p0/$p1"
        if [ "$p0" -lt "$QUIET_BUSY" ] && [ "$p1" -lt "$QUIET_BUSY" ]; then
            return 0
        fi
        [ $((SECONDS - start)) -ge "$QUIET_WAIT" ] && return 0
    done
}

# drop_counters: "UDP_IN SOCKET_DROPS IN_DROPS OUT_DROPS", cumulative:
#   UDP_IN        UDP datagrams the server namespace's kernel stack received (delivered,
#                 dropped for a full receive buffer or another error, or to a closed port)
#   SOCKET_DROPS  of those, dropped for a full socket receive buffer (RcvbufErrors)
#   IN_DROPS      queries the veth dropped on their way in: the server end's NAPI ring
#                 full (counted as the client end's tx_dropped), or an XDP redirect into a
#                 full AF_XDP receive ring (the server end's rx_dropped)
#   OUT_DROPS     the same for the answers on their way back to kxdpgun
drop_counters() {
    local udp stats
    if [ "$IP" = 6 ]; then
        udp=$(in_ns "$NS_SERVER" awk '$1 ~ /^Udp6(InDatagrams|NoPorts|InErrors)$/ {n += $2}
            $1 == "Udp6RcvbufErrors" {b = $2} END {print n + 0, b + 0}' /proc/net/snmp6)
    else
        udp=$(in_ns "$NS_SERVER" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ {print $2 + $3 + $4, $6; exit}' /proc/net/snmp)
    fi
    stats() {
        in_ns "$1" cat "/sys/class/net/$2/statistics/rx_dropped" "/sys/class/net/$2/statistics/tx_dropped" |
            tr '\n' ' '
    }
    # server rx, server tx, client rx, client tx
    stats=$(stats "$NS_SERVER" "$IF_SERVER")$(stats "$NS_CLIENT" "$IF_CLIENT")
    echo "$udp $stats" | awk '{print $1, $2, $3 + $6, $4 + $5}'
}

# kxdpgun_field FILE PATTERN: the first number after the pattern
kxdpgun_field() {
    awk -v pattern="$2" 'i = index($0, pattern) { $0 = substr($0, i + length(pattern)); gsub(/,/, "", $1); print $1; exit }' "$1"
}

#----------- measurement -----------------------------------------------------

# measure NAME PGID RATE ROUND: one kxdpgun run; appends a line to results.tsv.
measure() {
    local name=$1 pgid=$2 rate=$3 round=$4 qps out
    qps=$rate
    [ "$rate" = max ] && qps=$MAX_QPS
    out="$WORK/kxdpgun/$name.$rate.$round.out"
    pin_napi
    wait_quiet
    local start_us cpu_before idle_before server_before napi_before=0 drops_before
    start_us=$(now_us)
    cpu_before=$(cpu_busy_ticks "$SERVER_CPU")
    idle_before=$(cpu_idle_ticks "$SERVER_CPU")
    server_before=$(group_ticks "$pgid")
    [ -n "$NAPI_SERVER_PID" ] && napi_before=$(pid_ticks "$NAPI_SERVER_PID")
    drops_before=$(drop_counters)
    # kxdpgun in a process group of its own (killed on exit like the servers); -F pins
    # its thread (its default is CPU 0, the server's), taskset the rest of it.
    # The source address: -l for IPv4; with IPv6, kxdpgun 3.2.6 given -l sends from an
    # address the server's kernel takes for a local one (its answers never leave), so
    # there kxdpgun takes it from the route to SERVER_ADDR (CLIENT_ADDR, the only one).
    local source=(-l "$CLIENT_ADDR")
    [ "$IP" = 6 ] && source=()
    setsid ip netns exec "$NS_CLIENT" taskset -c "$CLIENT_CPU" \
        timeout -k 5 "$KXDPGUN_TIMEOUT" kxdpgun -t "$DURATION" -Q "$qps" -b "$BATCH" \
        -F "$CLIENT_CPU" -I "$IF_CLIENT" "${source[@]}" -L "$CLIENT_MAC" -R "$SERVER_MAC" \
        -p 53 -i "$WORK/queries.kxdpgun" "$SERVER_ADDR" >"$out" 2>&1 </dev/null &
    local gun=$!
    STARTED+=("$gun")
    local status=0
    wait "$gun" || status=$?
    # timeout's child may outlive it by a moment
    local i
    for i in $(seq 100); do
        kill -0 -- "-$gun" 2>/dev/null || break
        sleep 0.1
    done
    forget "$gun"
    local elapsed_us cpu_after idle_after server_after napi_after=0 drops_after
    elapsed_us=$(($(now_us) - start_us))
    cpu_after=$(cpu_busy_ticks "$SERVER_CPU")
    idle_after=$(cpu_idle_ticks "$SERVER_CPU")
    server_after=$(group_ticks "$pgid")
    [ -n "$NAPI_SERVER_PID" ] && napi_after=$(pid_ticks "$NAPI_SERVER_PID")
    drops_after=$(drop_counters)
    # kxdpgun leaves its XDP program attached: off, so that the next readiness probe's
    # answer reaches the client's kernel
    detach_xdp "$NS_CLIENT" "$IF_CLIENT"
    local sent answered stalls noerror nxdomain other
    sent=$(kxdpgun_field "$out" "total queries:")
    answered=$(kxdpgun_field "$out" "total replies:")
    stalls=$(kxdpgun_field "$out" " lost ")
    noerror=$(kxdpgun_field "$out" "responded NOERROR:")
    nxdomain=$(kxdpgun_field "$out" "responded NXDOMAIN:")
    other=$(awk '/^responded / && $2 != "NOERROR:" && $2 != "NXDOMAIN:" {printf "%s%s%s", sep, $2, $3; sep = ","}' "$out")
    if [ "$status" -ne 0 ] || [ -z "$sent" ] || [ "$sent" -eq 0 ]; then
        echo "--- kxdpgun output ($name, $rate, exit status $status):" >&2
        cat "$out" >&2
        die "kxdpgun sent nothing to $name"
    fi
    : "${answered:=0}" "${stalls:=0}" "${noerror:=0}" "${nxdomain:=0}"
    [ "$answered" -gt 0 ] || {
        echo "  WARNING: $name answered nothing at $rate; kxdpgun said:" >&2
        sed 's/^/    /' "$out" >&2
    }
    [ -z "$other" ] || echo "  WARNING: $name answered with other RCODEs than NOERROR/NXDOMAIN: $other" >&2
    if [ -z "${KXDPGUN_SHOWN:-}" ]; then
        echo "  kxdpgun: $(grep -m1 '^using interface' "$out" || echo '?')"
        KXDPGUN_SHOWN=1
    fi
    local udp socket_drops in_drops out_drops
    read -r udp socket_drops in_drops out_drops < <(echo "$drops_before $drops_after" |
        awk '{print $5 - $1, $6 - $2, $7 - $3, $8 - $4}')
    printf '%s\t' "$name" "$rate" "$round" "$DURATION" "$sent" "$answered" \
        "$elapsed_us" $((idle_after - idle_before)) $((cpu_after - cpu_before)) \
        $((server_after - server_before)) $((napi_after - napi_before)) "$udp" "$socket_drops" \
        "$in_drops" "$out_drops" "$noerror" "$nxdomain" "${other:--}" "$stalls" \
        >>"$WORK/results.tsv"
    echo "$QUIET" >>"$WORK/results.tsv"
    printf '  %-9s %-8s round %s: sent %8s, answered %8s (%5.1f %%) = %s/s, NXDOMAIN %s; kernel UDP in %s; drops: in %s, socket %s, out %s; busy before %s %%\n' \
        "$name" "$rate" "$round" "$sent" "$answered" "$(echo "100 * $answered / $sent" | bc -l)" \
        $((answered / DURATION)) "$nxdomain" "$udp" "$in_drops" "$socket_drops" "$out_drops" "$QUIET"
}

# run_server NAME ROUND: starts the server, one run per rate, stops it.
run_server() {
    local name=$1 round=$2 rate pgid
    start_server "$name"
    pgid=$PGID
    wait_ready "$name"
    local prog
    prog=$(xdp_prog "$NS_SERVER" "$IF_SERVER")
    case $name in
        *-xdp)
            [ -n "$prog" ] || {
                tail -20 "$RUN_DIR/log" >&2
                die "$name answers but attached no XDP program to $IF_SERVER"
            }
            ;;
        *) [ -z "$prog" ] || die "$name runs with an XDP program on $IF_SERVER: $prog" ;;
    esac
    if [ "$round" = 1 ]; then
        echo "  $name: $(cat "$RUN_DIR/command")"
        echo "    XDP on $IF_SERVER: ${prog:-none}"
        local threads
        threads=$(for pid in $(group_pids "$pgid"); do ls "/proc/$pid/task"; done | wc -l)
        echo "    $threads threads, CPUs allowed: $(for pid in $(group_pids "$pgid"); do
            for t in /proc/"$pid"/task/*; do awk '/Cpus_allowed_list/ {print $2}' "$t/status"; done
        done | sort -u | tr '\n' ' ')"
        case $name in
            knot-*) grep -E 'XDP|binding' "$RUN_DIR/log" | sed 's/^/    knotd: /' || true ;;
            tern-*) grep -iE 'xdp|serving' "$RUN_DIR/log" | head -5 | sed 's/^/    tern: /' || true ;;
        esac
        case $name in
            *-sock)
                echo "    UDP receive buffer $(in_ns "$NS_SERVER" ss -Hulnm "sport = :53" |
                    grep -o 'rb[0-9]*' | head -1 | tr -d rb) bytes"
                ;;
        esac
    fi
    for rate in $RATES; do
        measure "$name" "$pgid" "$rate" "$round"
        kill -0 -- "-$pgid" 2>/dev/null || {
            echo "--- log of $name:" >&2
            tail -20 "$RUN_DIR/log" >&2
            die "$name exited during the run at $rate queries/s"
        }
    done
    cp "$RUN_DIR/log" "$WORK/logs/$name.$round.log" 2>/dev/null || true
    stop_server "$pgid"
}

summarize() {
    python3 - "$WORK/results.tsv" "$(getconf CLK_TCK)" "$MAX_QPS" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
tick_us = 1e6 / int(sys.argv[2])
max_qps = sys.argv[3]
def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)
def per_answer(ticks, r):
    return ticks * tick_us / int(r["answered"]) if int(r["answered"]) > 0 else None
keys = []
for r in rows:
    if (r["server"], r["rate"]) not in keys:
        keys.append((r["server"], r["rate"]))
stats = {}
print()
print("medians over rounds. answered/s = answers kxdpgun received / sending time; lost = sent - answered,")
print("which the drops about add up to (unless a server ignores queries): in = queries the veth dropped (its NAPI ring or")
print("the AF_XDP receive ring full), socket = in the server's socket buffer, out = answers the veth")
print("dropped on their way back. CPU0 = busy time of the server CPU (elapsed - idle in /proc/stat, over")
print("the whole kxdpgun run with its 4 s of listening after sending) per answered query; server = CPU")
print("time of the server's processes plus its veth NAPI thread (/proc/PID/stat) per answered query;")
print("kernel UDP = datagrams the server namespace's UDP stack got (0: XDP took them all).")
print()
print("| server | offered/s | sent/s | answered/s | answered % | lost | in drops | socket drops | out drops "
      "| CPU0 us/q | server us/q | kernel UDP | NXDOMAIN % |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for name, rate in keys:
    runs = [r for r in rows if r["server"] == name and r["rate"] == rate]
    n = lambda r, k: int(r[k])
    sent = med([n(r, "sent") / n(r, "duration") for r in runs])
    answered = med([n(r, "answered") / n(r, "duration") for r in runs])
    pct = med([100 * n(r, "answered") / n(r, "sent") for r in runs])
    lost = med([n(r, "sent") - n(r, "answered") for r in runs])
    drops = [med([n(r, k) for r in runs]) for k in ("in_drops", "socket_drops", "out_drops")]
    cpu = med([max(0, n(r, "elapsed_us") - n(r, "cpu0_idle_ticks") * tick_us) / n(r, "answered")
               if n(r, "answered") > 0 else None for r in runs])
    own = med([per_answer(n(r, "server_ticks") + n(r, "napi_ticks"), r) for r in runs])
    udp = med([n(r, "udp_in") for r in runs])
    nx = med([100 * n(r, "nxdomain") / n(r, "answered") if n(r, "answered") > 0 else None for r in runs])
    stats[(name, rate)] = (answered, cpu, own)
    offered = f"max ({max_qps})" if rate == "max" else rate
    print(f"| {name} | {offered} | {fmt(sent, '.0f')} | {fmt(answered, '.0f')} | {fmt(pct, '.1f')} "
          f"| {fmt(lost, '.0f')} | " + " | ".join(fmt(d, ".0f") for d in drops) +
          f" | {fmt(cpu, '.2f')} | {fmt(own, '.2f')} | {fmt(udp, '.0f')} | {fmt(nx, '.1f')} |")
print()
print("| server | most answered/s | at offered/s |")
print("|---|---:|---:|")
names = []
for name, _ in keys:
    if name not in names:
        names.append(name)
for name in names:
    best = max(((stats[(m, r)][0] or 0, r) for m, r in keys if m == name), default=None)
    if best:
        print(f"| {name} | {best[0]:.0f} | {best[1]} |")
def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None
print()
for a, b in (("tern-xdp", "knot-xdp"), ("tern-sock", "knot-sock")):
    t, k = stats.get((a, "max")), stats.get((b, "max"))
    if t and k:
        print(f"{a} / {b} at max: answered/s {fmt(ratio(t[0], k[0]), '.2f')}, "
              f"CPU0 us/q {fmt(ratio(t[1], k[1]), '.2f')}, server us/q {fmt(ratio(t[2], k[2]), '.2f')}")
    elif a == "tern-xdp":
        print(f"{a} / {b} at max: n/a (needs a run of both at max)")
EOF
}

#----------- main -------------------------------------------------------------

[ "$(id -u)" -eq 0 ] || die "needs root: it creates network namespaces and attaches XDP programs (run it with sudo)"
install_missing knot knot-dnsutils ethtool iproute2
need ip "apt-get install iproute2"
need knotd "apt-get install knot"
need kxdpgun "apt-get install knot-dnsutils"
need ethtool "apt-get install ethtool"
need taskset "util-linux"
need python3 "python3"
need bc "apt-get install bc"
[ "$NAPI" = threaded ] || [ "$NAPI" = softirq ] || die "NAPI must be threaded or softirq"
[ "$IP" = 4 ] || [ "$IP" = 6 ] || die "IP must be 4 or 6"
[ "$(nproc)" -gt "$CLIENT_CPU" ] && [ "$(nproc)" -gt "$SERVER_CPU" ] ||
    die "CPU $CLIENT_CPU or $SERVER_CPU does not exist (SERVER_CPU/CLIENT_CPU)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive whole number"
[[ $MAX_QPS =~ ^[1-9][0-9]*$ ]] || die "MAX_QPS must be a positive whole number"
for rate in $RATES; do
    [[ $rate =~ ^([1-9][0-9]*|max)$ ]] || die "RATES: $rate is neither a number nor max"
done

RUN_SERVERS=()
SKIPPED=()
for name in $SERVERS; do
    case $name in
        tern-xdp | tern-sock)
            [ -x "$TERN_BIN" ] || die "$TERN_BIN not found (build tern with 'cargo build --release')"
            if [ "$name" = tern-xdp ] && ! tern_has_xdp; then
                SKIPPED+=("tern-xdp: skipped: tern was built without --xdp support ('$TERN_BIN serve --help' does not list --xdp)")
                continue
            fi
            ;;
        knot-xdp | knot-sock) ;;
        *) die "unknown server $name (SERVERS: tern-xdp tern-sock knot-xdp knot-sock)" ;;
    esac
    RUN_SERVERS+=("$name")
done
[ ${#RUN_SERVERS[@]} -gt 0 ] || die "no server to measure${SKIPPED:+ (${SKIPPED[*]})}"

echo "bench-xdp: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (dirty)')"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r)"
echo "server CPU $SERVER_CPU, kxdpgun CPU $CLIENT_CPU; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  tern: $TERN_BIN ($(stat -c %y "$TERN_BIN" 2>/dev/null | cut -d. -f1))"
echo "  $(knotd --version | head -1); $(kxdpgun --version 2>&1 | head -1)"
echo "rates: $RATES (max = -Q $MAX_QPS); $DURATION s each, $ROUNDS rounds; kxdpgun batch $BATCH; IPv$IP; EDNS $EDNS; NAPI $NAPI"
echo "servers: ${RUN_SERVERS[*]}"
# namespaces left by a run of this script that was killed with SIGKILL (no clean-up)
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tern-bx-[sc]-[0-9]+$' || true); do
    kill -0 "${ns##*-}" 2>/dev/null ||
        echo "note: namespace $ns is left from an earlier run that was killed: ip netns del $ns"
done
for line in "${SKIPPED[@]}"; do
    echo "$line"
done

mkdir -p "$WORK/zones" "$WORK/kxdpgun" "$WORK/logs"
python3 "$ROOT/scripts/gen-bench-zone.py" mixed --names "$NAMES" --zone "$WORK/zones/bench.zone" \
    --queries "$WORK/queries.txt" --count 100000
# kxdpgun's query file: "NAME TYPE [FLAG]" (E = with EDNS), the dnsperf lines as they are
if [ "$EDNS" = 1 ]; then
    awk 'NF >= 2 {print $1, $2, "E"}' "$WORK/queries.txt" >"$WORK/queries.kxdpgun"
else
    awk 'NF >= 2 {print $1, $2}' "$WORK/queries.txt" >"$WORK/queries.kxdpgun"
fi
echo "zone bench.: $NAMES hosts; queries: $(wc -l <"$WORK/queries.kxdpgun") lines, $(awk '{print $2}' "$WORK/queries.kxdpgun" | sort | uniq -c | awk '{printf "%s%s %s", sep, $1, $2; sep = ", "}')"

setup_network
echo "network: namespaces $NS_SERVER ($IF_SERVER $SERVER_ADDR/$PREFIX $SERVER_MAC) and $NS_CLIENT ($IF_CLIENT $CLIENT_ADDR/$PREFIX $CLIENT_MAC)"
if [ "$NAPI" = threaded ]; then
    echo "  veth NAPI threads: $(cat "/proc/$(napi_thread "$IF_SERVER")/comm") on CPU $SERVER_CPU, $(cat "/proc/$(napi_thread "$IF_CLIENT")/comm") on CPU $CLIENT_CPU"
fi

printf '%s\t' server rate round duration sent answered elapsed_us cpu0_idle_ticks \
    cpu0_busy_ticks server_ticks \
    napi_ticks udp_in socket_drops in_drops out_drops noerror nxdomain other_rcodes \
    kxdpgun_stalls >"$WORK/results.tsv"
echo quiet_before >>"$WORK/results.tsv"
for round in $(seq "$ROUNDS"); do
    echo
    echo "== round $round of $ROUNDS"
    for name in "${RUN_SERVERS[@]}"; do
        run_server "$name" "$round"
    done
done

summarize
echo
echo "bench-xdp: done in $((SECONDS / 60)) min $((SECONDS % 60)) s"
