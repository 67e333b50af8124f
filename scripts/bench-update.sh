#!/usr/bin/env bash
# Dynamic updates per second (issue 25): Knot, BIND and tern (when it accepts UPDATE) side
# by side, on loopback.
#
#   scripts/bench-update.sh
#
# Each server in turn runs alone, pinned to SERVER_CPU with taskset (one worker: Knot's
# udp/tcp/background-workers 1, named -n 1, tern `cores: [SERVER_CPU]`), on its own copy of
# the zone, configured as tests/update/differential.py configures it (TSIG key
# hmac-sha256, the server's defaults for its journal: each update is in the journal before
# it is answered). CLIENTS client processes (default 8), pinned to CLIENT_CPU, each keep one
# TCP connection and send UPDATEs one after the other, each signed with TSIG and waited for:
# add one TXT record at the client's own name, then delete it, and so on, for DURATION
# seconds (after WARM_UP seconds not counted). Two zones: `small` (the differential suite's
# zone, 17 records) and `large` (100,000 more records: 50,000 names with an A and a TXT).
# For ROUNDS rounds, the median of:
#   updates/s   NOERROR answers per second, all clients together
#   errors      answers other than NOERROR, and exchanges that failed (must be 0)
#   updates/version  NOERROR answers of the run (warm-up included) per step of the zone's
#               serial (SOA queries before and after): 1.0 when each update is a version
#               of its own, more when the server groups the updates that arrived together
#               into one (Knot does); a serial that did not rise, or rose more than the
#               updates, fails
# After each run every client's TXT must be there exactly when its last NOERROR added it.
# The clients are Python (dnspython, one process each): the rate one client process
# alone can build, sign and verify UPDATEs with no server (`client bound`, printed first)
# is the ceiling of what the clients can measure on CLIENT_CPU.
#
# TERN_UPDATE: 0 leaves tern out, 1 requires it, unset: tern is asked once, as in
# tests/update/differential.py, and left out (said so) if it refuses UPDATE. TERN_BIN:
# tern's binary (default target/release/tern).
set -euo pipefail

cd "$(dirname "$0")/.."

export SERVER_CPU="${SERVER_CPU:-0}"
export CLIENT_CPU="${CLIENT_CPU:-1}"
export CLIENTS="${CLIENTS:-8}"
export DURATION="${DURATION:-10}"
export WARM_UP="${WARM_UP:-2}"
export ROUNDS="${ROUNDS:-3}"
export LARGE_NAMES="${LARGE_NAMES:-50000}"

for tool in knotd named taskset python3; do
    command -v "$tool" >/dev/null || { echo "bench-update: $tool is not installed (make deps)"; exit 1; }
done

exec python3 - "$@" <<'PYTHON'
import multiprocessing
import os
import pathlib
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path("tests/update").resolve()))
import differential as d  # noqa: E402  (tests/update/differential.py: servers, key, zone)

import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.update  # noqa: E402

SERVER_CPU = int(os.environ["SERVER_CPU"])
CLIENT_CPU = int(os.environ["CLIENT_CPU"])
CLIENTS = int(os.environ["CLIENTS"])
DURATION = float(os.environ["DURATION"])
WARM_UP = float(os.environ["WARM_UP"])
ROUNDS = int(os.environ["ROUNDS"])
LARGE_NAMES = int(os.environ["LARGE_NAMES"])
ORIGIN = d.ORIGIN


def zones() -> dict[str, str]:
    small, _steps = d.read_sequence(d.SEQUENCE)
    lines = [small]
    for i in range(LARGE_NAMES):
        lines.append(f"host{i}.{ORIGIN} 300 A 10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}\n")
        lines.append(f'host{i}.{ORIGIN} 300 TXT "record {i}"\n')
    return {"small": small, "large": "".join(lines)}


def pinned(server):
    """`server` started under taskset on SERVER_CPU (tern also with its one core there)."""
    command = server.command

    def pinned_command():
        cmd = command()
        if server.name == "tern":
            conf = server.workdir / "tern.yaml"
            conf.write_text(conf.read_text() + f"cores: [{SERVER_CPU}]\n")
        return ["taskset", "-c", str(SERVER_CPU)] + cmd

    server.command = pinned_command
    return server


def serial(server) -> int:
    query = dns.message.make_query(ORIGIN, dns.rdatatype.SOA)
    answer = dns.query.tcp(query, server.addr[0], port=server.addr[1], timeout=10)
    return answer.answer[0][0].serial


def client(index: int, addr, start: float, stop: float, out) -> None:
    """One client: UPDATEs one after the other over one TCP connection until `stop`;
    puts (NOERROR answers after `start`, other answers after `start`, NOERROR answers in
    all, whether its record should be there at the end)."""
    os.sched_setaffinity(0, {CLIENT_CPU})
    ring = d.keyring()
    owner = f"bench-client{index}.{ORIGIN}"
    counted = errors = total = 0
    adding = True
    present = False
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(addr)
        while True:
            now = time.time()
            if now >= stop:
                break
            message = update_message(index, adding, ring)
            dns.query.send_tcp(sock, message, time.time() + 10)
            answer, _ = dns.query.receive_tcp(sock, time.time() + 10, keyring=ring,
                                              request_mac=message.mac)
            ok = answer.rcode() == dns.rcode.NOERROR
            if ok:
                present = adding
                adding = not adding
            total += ok
            if now >= start:
                counted += ok
                errors += not ok
    except Exception as error:  # noqa: BLE001 - counted and printed, the run goes on
        print(f"bench-update: client {index}: {type(error).__name__}: {error}", file=sys.stderr)
        errors += 1
    out.put((index, counted, errors, total, present))


def update_message(index: int, adding: bool, ring) -> dns.update.UpdateMessage:
    """Client `index`'s TXT added (or deleted), signed."""
    owner = f"bench-client{index}.{ORIGIN}"
    message = dns.update.UpdateMessage(ORIGIN)
    if adding:
        message.add(owner, 60, "TXT", f'"client {index}"')
    else:
        message.delete(owner, "TXT", f'"client {index}"')
    message.use_tsig(ring, keyname=d.KEY_NAME, algorithm=d.ALGORITHM)
    return message


def client_bound() -> float:
    """UPDATEs per second one client process can make alone, with no server: the message
    built, signed and written, and a signed answer to it written, read and verified (the
    server's signing counted on the client's side too: a bound, not an estimate)."""
    os.sched_setaffinity(0, {CLIENT_CPU})
    ring = d.keyring()
    count, begin = 0, time.monotonic()
    while time.monotonic() - begin < 2.0:
        message = update_message(0, count % 2 == 0, ring)
        message.to_wire()
        answer = dns.message.make_response(message)
        wire = answer.to_wire()
        dns.message.from_wire(wire, keyring=ring, request_mac=message.mac)
        count += 1
    return count / (time.monotonic() - begin)


def holds_txt(server, index: int) -> bool:
    query = dns.message.make_query(f"bench-client{index}.{ORIGIN}", dns.rdatatype.TXT)
    answer = dns.query.tcp(query, server.addr[0], port=server.addr[1], timeout=10)
    return bool(answer.answer)


def load(server) -> tuple[float, int, int]:
    """(NOERROR answers per second, errors, NOERROR answers in all) of CLIENTS clients;
    checks that each client's record is there exactly when its last update added it."""
    out = multiprocessing.Queue()
    start = time.time() + 0.5 + WARM_UP
    stop = start + DURATION
    procs = [multiprocessing.Process(target=client, args=(i, server.addr, start, stop, out))
             for i in range(CLIENTS)]
    for proc in procs:
        proc.start()
    results = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    for index, _, _, _, present in results:
        if holds_txt(server, index) != present:
            sys.exit(f"bench-update: {server.name}: client {index}'s TXT is "
                     f"{'missing' if present else 'still there'} after its last NOERROR")
    counted = sum(r[1] for r in results)
    return counted / DURATION, sum(r[2] for r in results), sum(r[3] for r in results)


def main() -> None:
    os.sched_setaffinity(0, {CLIENT_CPU})
    mode = os.environ.get("TERN_UPDATE", "")
    texts = zones()
    names = ["knot", "bind"]
    if mode != "0":
        takes, why = d.tern_takes_updates(texts["small"])
        if takes:
            names.append("tern")
        elif mode == "1":
            sys.exit(f"bench-update: TERN_UPDATE=1 but {why}")
        else:
            print(f"bench-update: tern side skipped: tern refuses UPDATE ({why})")
    rows = []
    with tempfile.TemporaryDirectory(prefix="tern-bench-update-") as tmp:
        root = pathlib.Path(tmp)
        print(f"bench-update: client bound: one client process alone makes "
              f"{client_bound():,.0f} UPDATEs/s (signing and verifying, no server)")
        for zone, text in texts.items():
            for name in names:
                figures = []
                for round_ in range(ROUNDS):
                    (root / f"{zone}-{round_}").mkdir(exist_ok=True)
                    server = pinned(d.make_server(name, root / f"{zone}-{round_}", text))
                    with d.harness.serving({name: server}):
                        before = serial(server)
                        rate, errors, total = load(server)
                        rose = (serial(server) - before) % 2**32
                    if not 0 < rose <= total:
                        sys.exit(f"bench-update: {name} on {zone}: serial rose by {rose} for "
                                 f"{total} updates answered NOERROR")
                    figures.append((rate, errors, total / rose))
                rate = statistics.median(f[0] for f in figures)
                rows.append((name, zone, rate, [f[0] for f in figures],
                             sum(f[1] for f in figures), statistics.median(f[2] for f in figures)))
    records = {z: sum(1 for line in t.splitlines() if line and not line.startswith("$"))
               for z, t in texts.items()}
    print(f"\n{CLIENTS} clients over TCP on CPU {CLIENT_CPU}, server on CPU {SERVER_CPU}, "
          f"{DURATION:.0f} s per round, {ROUNDS} rounds, TSIG {d.ALGORITHM}")
    print(f"{'server':<8} {'zone':<22} {'updates/s':>10}  {'rounds':<28} {'errors':>6} {'updates/version':>15}")
    for name, zone, rate, each, errors, rose in rows:
        label = f"{zone} ({records[zone]:,} rec)"
        rounds = " ".join(f"{r:,.0f}" for r in each)
        print(f"{name:<8} {label:<22} {rate:>10,.0f}  {rounds:<28} {errors:>6} {rose:>15,.1f}")


if __name__ == "__main__":
    main()
PYTHON
