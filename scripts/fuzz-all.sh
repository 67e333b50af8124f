#!/usr/bin/env bash
# Runs every cargo-fuzz target of crates/fuzz for SECONDS each (default 60),
# one after the other, and fails if any of them finds a crash.
#
#   scripts/fuzz-all.sh [SECONDS] [TARGET...]
#
# The machines have only the stable toolchain; RUSTC_BOOTSTRAP=1 lets
# cargo-fuzz use the nightly-only sanitizer flags on it. cargo-fuzz is
# installed if missing. New inputs the fuzzer finds go to crates/fuzz/work/
# (git-ignored); the committed seeds in crates/fuzz/corpus/ are only read.
# Crashes are saved in crates/fuzz/artifacts/<target>/ (git-ignored).
# Extra libFuzzer flags can be passed in FUZZ_FLAGS (e.g. "-jobs=2").
set -euo pipefail

SECONDS_EACH=${1:-60}
shift || true
ALL_TARGETS=(parse_message roundtrip zone_scan name_from_text respond forward_answer xfr_incoming frame update proxy_header sign_zone signed_update)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

case $SECONDS_EACH in
    ''|*[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

# One input may take this long before it counts as a hang. Each body runs
# in microseconds; the margin is for a loaded, shared machine, where a
# 10-second limit once fired on an input that runs in 0.1 s (docs/testing.md).
UNIT_TIMEOUT=60

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ_DIR=$ROOT/crates/fuzz

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-all: installing cargo-fuzz" >&2
    cargo install cargo-fuzz
fi

export RUSTC_BOOTSTRAP=1
cd "$ROOT"
failed=()
for target in "${TARGETS[@]}"; do
    work=$FUZZ_DIR/work/$target
    mkdir -p "$work" "$FUZZ_DIR/artifacts/$target"
    log=$FUZZ_DIR/work/$target.log
    # The run's temporary files (signed_update's state directory of keys)
    # go here, removed after it: a fuzz process ends without cleaning up.
    tmp=$FUZZ_DIR/work/$target.tmp
    rm -rf "$tmp" && mkdir -p "$tmp"
    echo "fuzz-all: $target for ${SECONDS_EACH}s (log: $log)" >&2
    # shellcheck disable=SC2086
    if TMPDIR=$tmp cargo fuzz run --fuzz-dir "$FUZZ_DIR" "$target" "$work" "$FUZZ_DIR/corpus/$target" -- \
        -max_total_time="$SECONDS_EACH" -timeout="$UNIT_TIMEOUT" -rss_limit_mb=2048 \
        -print_final_stats=1 ${FUZZ_FLAGS:-} >"$log" 2>&1; then
        final=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | cut -f 2- | cut -c 1-90)
        echo "fuzz-all: $target ok after ${SECONDS_EACH}s: $final" >&2
    else
        echo "fuzz-all: $target FAILED; tail of $log:" >&2
        tail -n 30 "$log" >&2
        failed+=("$target")
    fi
    rm -rf "$tmp"
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-all: crashes in: ${failed[*]} (inputs in crates/fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz-all: all ${#TARGETS[@]} targets ran ${SECONDS_EACH}s without a crash" >&2
