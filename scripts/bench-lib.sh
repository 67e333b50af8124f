# Helpers shared by scripts/bench-peers.sh and scripts/bench-zones.sh (sourced, not run).
# The caller sets SERVER_CPU, CLIENT_CPU, QUIET_BUSY and QUIET_WAIT (wait_quiet).

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

# group_memory PGID: "PSS RSS HWM" in KiB over the processes of a group: the sum of their
# PSS (/proc/PID/smaps_rollup: shared pages counted once, split among their users), the
# largest VmRSS and the largest VmHWM (peak RSS). Processes that exit meanwhile count 0.
group_memory() {
    local pid value pss=0 rss=0 hwm=0
    for pid in $(group_pids "$1"); do
        value=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        [ "${value:-0}" -gt "$rss" ] && rss=$value
        value=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        [ "${value:-0}" -gt "$hwm" ] && hwm=$value
        value=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
        pss=$((pss + ${value:-0}))
    done
    echo "$pss $rss $hwm"
}
