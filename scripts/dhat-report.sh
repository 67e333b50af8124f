#!/usr/bin/env bash
# `make dhat`: heap allocations per answered query, measured with dhat.
#
#   scripts/dhat-report.sh [mix|flood]
#
# 1. Builds tern with the `dhat-heap` feature into DHAT_TARGET_DIR (so the ordinary
#    target/release/tern is left alone). With that feature `tern serve` profiles every
#    allocation and writes dhat-heap.json in its working directory when it stops on
#    SIGTERM or SIGINT.
# 2. Generates the benchmark zone `bench.` (scripts/gen-bench-zone.py, NAMES hosts) and
#    the queries of the mode.
# 3. Runs tern twice, pinned to one core (taskset and --cores SERVER_CPU), on 127.0.0.1,
#    dnsperf pinned to CLIENT_CPU sending each query once at RATE queries/s, and compares
#    the two runs' allocations:
#    mix (the default): once without queries (start-up: loading the zone, sockets,
#      threads), once answering QUERIES queries of the bench-peers.sh mix (a warm cache:
#      most queries hit). Allocations per query are (blocks with queries - blocks
#      without) / queries answered.
#    flood: a random-subdomain flood (`gen-bench-zone.py flood`: every name distinct,
#      NXDOMAIN, wildcard and NODATA answers), so every query is a cache miss, an answer
#      written by respond and an insert into the answer cache, which tern starts with
#      `cache.entries: FLOOD_CACHE_ENTRIES` (small, so that it is full after the
#      warm-up and evicts for every insert after). Once with the FLOOD_WARM_UP first
#      queries (warm-up: the cache fills), once with those and then FLOOD_QUERIES more,
#      never asked before. Allocations per query after the warm-up are (blocks of the
#      second run - blocks of the first) / flood queries answered: 0 means a cold-cache
#      flood, evictions included, allocates nothing.
# 4. Keeps the second run's dhat-heap.json (in OUT, the repository root by default; open
#    it with dhat's viewer, dh_view.html) and prints one line: the allocations (blocks)
#    of both runs and the allocations per query, then the call stacks that allocated
#    more in the second run, if any.
#
# Run time: a build, then well under a minute (flood: about a minute).
# Every process it starts is killed on exit.
#
# Environment: NAMES [10000] QUERIES [100000] RATE [20000] SERVER_CPU [0] CLIENT_CPU [1]
#              PORT [25453] OUT [repository root] DHAT_TARGET_DIR [target/dhat]
#              FLOOD_WARM_UP [20000] FLOOD_QUERIES [200000] FLOOD_CACHE_ENTRIES [10000]

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=${1:-mix}
NAMES=${NAMES:-10000}
QUERIES=${QUERIES:-100000}
RATE=${RATE:-20000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT=${PORT:-25453}
OUT=${OUT:-$ROOT}
TARGET_DIR=${DHAT_TARGET_DIR:-$ROOT/target/dhat}
BIN=$TARGET_DIR/release/tern
FLOOD_WARM_UP=${FLOOD_WARM_UP:-20000}
FLOOD_QUERIES=${FLOOD_QUERIES:-200000}
FLOOD_CACHE_ENTRIES=${FLOOD_CACHE_ENTRIES:-10000}
READY_TIMEOUT=120
# tern must stop within 2 s of SIGTERM (issue 3); dhat's file write gets some slack.
STOP_TIMEOUT=30

die() {
    echo "dhat-report: $*" >&2
    exit 1
}

case "$MODE" in
mix | flood) ;;
*) die "unknown mode '$MODE' (mix or flood)" ;;
esac

for tool in cargo dnsperf taskset python3; do
    command -v "$tool" >/dev/null || die "$tool not found"
done

# The feature must exist: the binary owns it (crates/tern/Cargo.toml [features]).
if ! (cd "$ROOT" && cargo metadata --no-deps --format-version 1) | python3 -c '
import json, sys
packages = json.load(sys.stdin)["packages"]
sys.exit(0 if any(p["name"] == "tern" and "dhat-heap" in p["features"] for p in packages) else 1)
'; then
    die "the tern package has no 'dhat-heap' feature yet (crates/tern/Cargo.toml [features]); \
it must swap in dhat's allocator and write dhat-heap.json when 'tern serve' stops"
fi

WORK=$(mktemp -d /tmp/tern-dhat.XXXXXX)
STARTED=()
cleanup() {
    local pgid
    for pgid in "${STARTED[@]}"; do
        kill -KILL -- "-$pgid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "dhat-report: building tern with --features dhat-heap into $TARGET_DIR"
(cd "$ROOT" && cargo build --release --bin tern --features tern/dhat-heap --target-dir "$TARGET_DIR")

mkdir -p "$WORK/zones"
python3 "$ROOT/scripts/gen-bench-zone.py" mixed --names "$NAMES" --zone "$WORK/zones/bench.zone" \
    --queries "$WORK/queries.txt" --count "$QUERIES"
if [ "$MODE" = flood ]; then
    python3 "$ROOT/scripts/gen-bench-zone.py" flood --count $((FLOOD_WARM_UP + FLOOD_QUERIES)) \
        --queries "$WORK/flood.txt"
    head -n "$FLOOD_WARM_UP" "$WORK/flood.txt" >"$WORK/flood-warm-up.txt"
    tail -n +$((FLOOD_WARM_UP + 1)) "$WORK/flood.txt" >"$WORK/flood-measured.txt"
    printf 'cache:\n  entries: %s\n' "$FLOOD_CACHE_ENTRIES" >"$WORK/flood.yaml"
fi

# send DIR NAME FILE: dnsperf sends each query of FILE once; its report is DIR/NAME.
send() {
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$PORT" -d "$3" -n 1 \
        -Q "$RATE" -q 100 -t 5 >"$1/$2" 2>&1 || die "dnsperf failed: $(tail -3 "$1/$2")"
}

# run_tern DIR without|with-queries|flood-warm-up|flood: one profiled run; dhat-heap.json
# lands in DIR.
run_tern() {
    local dir=$1 mode=$2 pgid extra=()
    mkdir -p "$dir"
    # a control socket of its own, not the default one another tern may be using
    if "$BIN" serve --help | grep -q -- --socket; then
        extra=(--socket "$dir/tern.sock")
    fi
    if [ "$MODE" = flood ]; then
        extra+=(--config "$WORK/flood.yaml")
    fi
    (cd "$dir" && exec setsid taskset -c "$SERVER_CPU" "$BIN" serve --zones "$WORK/zones" \
        --listen "127.0.0.1:$PORT" --cores "$SERVER_CPU" "${extra[@]}" >"$dir/log" 2>&1 </dev/null) &
    pgid=$!
    STARTED+=("$pgid")
    python3 "$ROOT/scripts/wait-answer.py" --port "$PORT" --name host0.bench. \
        --timeout "$READY_TIMEOUT" >/dev/null || {
        tail -20 "$dir/log" >&2
        die "tern did not answer within $READY_TIMEOUT s"
    }
    case "$mode" in
    with-queries) send "$dir" dnsperf "$WORK/queries.txt" ;;
    flood-warm-up) send "$dir" dnsperf-warm-up "$WORK/flood-warm-up.txt" ;;
    flood)
        send "$dir" dnsperf-warm-up "$WORK/flood-warm-up.txt"
        send "$dir" dnsperf "$WORK/flood-measured.txt"
        ;;
    esac
    kill -TERM -- "-$pgid"
    local i
    for i in $(seq $((STOP_TIMEOUT * 10))); do
        kill -0 -- "-$pgid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 -- "-$pgid" 2>/dev/null; then
        die "tern did not stop within $STOP_TIMEOUT s of SIGTERM"
    fi
    wait "$pgid" 2>/dev/null || true
    [ -s "$dir/dhat-heap.json" ] || {
        tail -20 "$dir/log" >&2
        die "tern stopped without writing $dir/dhat-heap.json"
    }
}

if [ "$MODE" = flood ]; then
    run_tern "$WORK/idle" flood-warm-up
    run_tern "$WORK/load" flood
    BASE="after the warm-up of $FLOOD_WARM_UP new names (cache.entries $FLOOD_CACHE_ENTRIES)"
else
    run_tern "$WORK/idle" without
    run_tern "$WORK/load" with-queries
    BASE="at start-up without queries"
fi

answered=$(awk '/Queries completed:/ {print $3; exit}' "$WORK/load/dnsperf")
lost=$(awk '/Queries lost:/ {print $3; exit}' "$WORK/load/dnsperf")
mkdir -p "$OUT"
cp "$WORK/load/dhat-heap.json" "$OUT/dhat-heap.json"

python3 - "$WORK/idle/dhat-heap.json" "$WORK/load/dhat-heap.json" "${answered:-0}" "${lost:-0}" "$OUT/dhat-heap.json" "$MODE" "$BASE" <<'EOF'
import collections, json, re, sys
def profile(path):
    """Total blocks and bytes, and blocks per call stack (addresses dropped: PIE)."""
    data = json.load(open(path))
    frames = [re.sub(r"^0x[0-9a-f]+: ", "", frame) for frame in data["ftbl"]]
    stacks = collections.Counter()
    for pp in data["pps"]:
        stacks[tuple(frames[f] for f in pp["fs"])] += pp["tbk"]
    return sum(pp["tbk"] for pp in data["pps"]), sum(pp["tb"] for pp in data["pps"]), stacks
idle_blocks, idle_bytes, idle_stacks = profile(sys.argv[1])
load_blocks, load_bytes, load_stacks = profile(sys.argv[2])
answered, lost, mode, base = int(sys.argv[3]), int(sys.argv[4]), sys.argv[6], sys.argv[7]
if answered == 0:
    sys.exit("dhat-report: no query was answered")
# Rounded, and -0.0 made 0.0: the two runs' start-ups may differ by a block or two (a
# core that waits on its start channel allocates its waker), which is not the queries'.
per_query = round((load_blocks - idle_blocks) / answered, 4) + 0.0
per_query_bytes = round((load_bytes - idle_bytes) / answered, 1) + 0.0
queries = "flood queries (new names)" if mode == "flood" else "queries"
print(f"dhat {mode}: {per_query:.4f} allocations per query ({per_query_bytes:.1f} bytes): "
      f"{load_blocks} blocks with {answered} {queries} answered ({lost} lost), "
      f"{idle_blocks} {base} ({load_blocks - idle_blocks:+d}); profile in {sys.argv[5]}")
# Where the queries' allocations come from: the stacks that allocated more with queries.
extra = sorted(((load_stacks[k] - idle_stacks.get(k, 0), k) for k in load_stacks), reverse=True)
for count, stack in [e for e in extra if e[0] > 0][:3]:
    ours = [f for f in stack if not re.match(r"<?(alloc|allocator_api2|core|dhat|hashbrown|std)::|\[root\]", f)]
    print(f"  {count / answered:.4f} per query from {ours[0] if ours else stack[0]}")
EOF
