#!/usr/bin/env bash
# Runs the Rust test suite (`cargo test --workspace`) RUNS times, every
# other run with every core kept busy by a background load, and prints each
# failing test with its run. A test that fails one run in ten shows up
# here before it blocks a landing.
#
#   scripts/test-repeat.sh [RUNS]      (default 10; `make test-repeat RUNS=N`)
#
# Exits non-zero if any run failed. Logs go to target/test-repeat/.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-10}
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [RUNS]" >&2
    exit 2
fi
cores=$(nproc)
logs=target/test-repeat
mkdir -p "$logs"

load_pids=()
stop_load() {
    if ((${#load_pids[@]})); then
        kill "${load_pids[@]}" 2>/dev/null || true
        wait "${load_pids[@]}" 2>/dev/null || true
    fi
    load_pids=()
}
trap stop_load EXIT

# One busy process per core; each ends by itself after an hour at most, so
# that nothing is left spinning if this script is killed.
start_load() {
    for _ in $(seq "$cores"); do
        timeout 3600 sh -c 'while :; do :; done' &
        load_pids+=("$!")
    done
}

# Build once, so that every run tests the same binaries and the loaded runs
# load the tests, not the compiler.
cargo test --workspace --no-run --quiet

failed_runs=0
failures=()
for run in $(seq "$runs"); do
    if ((run % 2 == 0)); then
        mode=loaded
        start_load
    else
        mode=quiet
    fi
    log=$logs/run-$run-$mode.log
    started=$(date +%s)
    if cargo test --workspace >"$log" 2>&1; then
        outcome=passed
    else
        outcome=FAILED
        failed_runs=$((failed_runs + 1))
        while read -r name; do
            failures+=("run $run ($mode): $name")
        done < <(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log")
        if ! grep -q '^test .* \.\.\. FAILED$' "$log"; then
            failures+=("run $run ($mode): the build or a test binary failed; see $log")
        fi
    fi
    stop_load
    echo "run $run of $runs ($mode, $cores cores): $outcome in $(($(date +%s) - started)) s; log $log"
done

echo
if ((failed_runs == 0)); then
    echo "all $runs runs passed ($(((runs + 1) / 2)) quiet, $((runs / 2)) with every core loaded)"
else
    echo "failing tests:"
    printf '  %s\n' "${failures[@]}"
fi
echo "$((runs - failed_runs)) passed, $failed_runs failed"
((failed_runs == 0))
