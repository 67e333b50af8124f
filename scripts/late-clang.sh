#!/usr/bin/env bash
# README's order on a machine where clang arrives after the first build
# (issue 22): `make run` builds tern without clang, then `make test`
# installs clang and builds again; that second build must carry the XDP
# program, and builds with nothing changed must compile nothing.
#
#   sudo bash scripts/late-clang.sh [REPOSITORY]    (default: this one)
#
# Clones REPOSITORY's HEAD afresh, then builds it three times with
# `make release` (what `make run` and `make test` build):
#   1. without clang; then the same build again, which must compile nothing;
#   2. after clang is "installed", which must carry the XDP program;
#   3. again, which must compile nothing.
# Needs root: clang is hidden from these builds alone, never removed from the
# machine. Each build runs in a private mount namespace whose /usr/bin is a
# copy of the real one made of hard links (the same inodes, so the same
# modification times) without the clang entries. "Installing" clang links
# the real entries back into that copy, as dpkg does: the entries keep the
# package's old times (Debian's /usr/bin/clang is dated 2023) and the
# directory's own time becomes now. Two full release builds: ~15 minutes on
# two cores. Prints the clone's path at the end (remove it when done).
set -euo pipefail

scripts=$(cd "$(dirname "$0")" && pwd)
repository=${1:-$(git -C "$scripts" rev-parse --show-toplevel)}
if [ "$(id -u)" != 0 ]; then
    echo "late-clang.sh: needs root (a private mount namespace)" >&2
    exit 2
fi
clang=$(command -v clang || true)
case "$(readlink -f "${clang:-/nonexistent}")" in
/usr/*) ;;
*)
    echo "late-clang.sh: needs Debian's clang in /usr/bin (found: ${clang:-none})" >&2
    exit 2
    ;;
esac
if [ -n "${TERN_CLANG:-}" ]; then
    echo "late-clang.sh: unset TERN_CLANG (it names clang to the build)" >&2
    exit 2
fi

work=$(mktemp -d /tmp/late-clang.XXXXXX)
usr_bin="$work/usr-bin"
trap 'rm -rf "$usr_bin"' EXIT
git clone -q "$repository" "$work/tern"
cp -a --link /usr/bin "$usr_bin" 2>/dev/null || cp -a /usr/bin "$usr_bin"
hidden=$(cd /usr/bin && ls -A | grep -E '^clang' || true)
for entry in $hidden; do
    rm "$usr_bin/$entry"
done
echo "hidden from the builds: $(echo $hidden)"

# Runs "$@" where /usr/bin is $usr_bin.
without_real_usr_bin() {
    unshare --mount --propagation private -- \
        sh -c 'mount --bind "$0" /usr/bin && exec "$@"' "$usr_bin" "$@"
}

# A release build, as the Makefile does it; prints what cargo compiled.
build() {
    local status=0
    without_real_usr_bin make -C "$work/tern" release >"$work/build.log" 2>&1 || status=$?
    grep -E '^ *(Compiling|Finished)|warning: tern-server|error' "$work/build.log" || true
    return "$status"
}

# Fails unless the last build compiled nothing.
compiled_nothing() {
    if grep -q '^ *Compiling' "$work/build.log"; then
        echo "FAIL: a build with nothing changed compiled again:" >&2
        grep '^ *Compiling' "$work/build.log" >&2
        return 1
    fi
}

check() {
    python3 "$scripts/check-xdp-program.py" "$work/tern/target/release/tern" --expect "$1"
}

status=0
echo "== 1. clang absent"
without_real_usr_bin sh -c '! command -v clang' >/dev/null
build
check absent
echo "== 1b. clang absent, nothing changed"
build
compiled_nothing || status=1

echo "== 2. clang installed (entries dated $(stat -c %y /usr/bin/clang | cut -c1-10))"
for entry in $hidden; do
    ln /usr/bin/"$entry" "$usr_bin/$entry" 2>/dev/null || cp -a /usr/bin/"$entry" "$usr_bin/$entry"
done
build || true
check present || status=1

echo "== 3. clang installed, nothing changed"
build
compiled_nothing || status=1

echo "clone: $work/tern"
if [ "$status" = 0 ]; then echo "PASS"; else echo "FAIL"; fi
exit "$status"
