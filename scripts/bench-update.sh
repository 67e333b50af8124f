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
# zone, 14 records) and `large` (100,000 more records: 50,000 names with an A and a TXT).
# For ROUNDS rounds, the median of:
#   updates/s   NOERROR answers per second, all clients together
#   errors      answers other than NOERROR, and exchanges that failed (must be 0)
#   updates/version  NOERROR answers of the run (warm-up included) per step of the zone's
#               serial (SOA queries before and after): 1.0 when each update is a version
#               of its own, more when the server groups the updates that arrived together
#               into one (Knot does); a serial that did not rise, or rose more than the
#               updates, fails
# After each run every client's TXT must be there exactly when its last NOERROR added it.
# The clients are Python, one process each, signing with the hmac module (checked once
# against dnspython) and reading each answer's ID and RCODE (not its TSIG): the rate one
# client process alone signs and exchanges UPDATEs over a socket pair with no server
# (`client bound`, printed first) is the ceiling of what they can measure on CLIENT_CPU.
#
# TERN_UPDATE: 0 leaves tern out, 1 requires it, unset: tern is asked once, as in
# tests/update/differential.py, and left out (said so) if it refuses UPDATE. TERN_BIN:
# tern's binary (default target/release/tern). SERVERS (default "knot bind tern") and
# ZONES (default "small large") choose what runs. Each round also prints the server's
# resident memory (VmRSS) once the zone answers and after the round's updates: with
# DURATION long enough for 100,000 updates, the issue's memory figure.
#
# UPDATES=N (the memory figure): instead of DURATION, the clients together make N updates
# answered NOERROR (N / CLIENTS each; default 0, by time); each round then prints the
# server's VmRSS once loaded and after them, its VmHWM, and the ratio of the two RSS.
# IXFR_HISTORY (tern only, e.g. `1M`): its `transfer.ixfr-history`, the bound of the IXFR
# history the updates fill (tern's default 16 MiB otherwise).
# RSS_EVERY=S: also print the server's VmRSS every S seconds while the updates run (what
# grows, and when). HEAP=1 (with gdb): once the zone is loaded and after the updates,
# asks the server's allocator (glibc's malloc_stats() through gdb) what each arena holds
# in use and in all, and prints the main heap's Rss (`[heap]` in smaps: the main thread's
# arena, where the zones were loaded); after the updates then has it give back what it
# can (malloc_trim(0)) and prints VmRSS and that Rss again: memory in use by tern, as
# against freed memory the allocator kept.
#
# QUERIES=1 (tern only): query answering beside updates. tern answers on SERVER_CPU (its
# one core, its update thread with it); dnsperf on CLIENT_CPU sends A queries for the
# zone's names (QUERY_CLIENTS sockets, 100 queries in flight each, for DURATION
# seconds) first alone, then while the CLIENTS update clients run; prints both rates and
# their ratio (the issue: within 10 % of the rate without updates).
#
# CALLGRIND=1 (tern only, with valgrind): the same comparison, as instructions rather than
# a rate (a rate needs the clients on CPUs of their own: this machine has two). tern runs
# under `valgrind --tool=callgrind --separate-threads=yes` (one dump file per thread);
# dnsperf sends CG_RATE queries a second (default 2,000, `-Q`) from a list of the zone's
# names (the large zone: its 50,000 hosts' A records, and one query in 50 the TXT of a
# name the update clients change; the small zone: its apex and those names), first one
# unmeasured pass over the list (the answer cache filled; after a second of updates: the
# first version an update makes from the loaded one drops the zone's cached answers as a
# whole, once), then two measured windows of CG_SECONDS (default 20): alone, then while
# the CLIENTS update clients make UPDATE_RATE updates a second together (default 50; each
# client paced, not one after the other). Counters zeroed before each window and dumped
# after it (callgrind_control); prints, for each window, the answering core's thread's
# Ir (the thread whose dump holds tern_server::udp) per answered query, the other
# threads' Ir (the update thread's), the answer cache's hit share (`tern stats`) and the
# updates applied in the window (SOA serial steps); then, from `callgrind_annotate
# --inclusive=yes` of the core's two dumps, its TCP connections' tasks (the UPDATEs'
# exchanges: on the core that accepted them) per update, the rest per query, of which
# udp::answer_batch and Worker::apply (the versions' changes), and the CG_TOP functions
# whose Ir per query rose most (and fell most: the reactor's waits, as batches grow while
# valgrind runs the update thread). Keeps the dumps in CG_DIR (default: a new directory
# in /tmp, printed). tern runs with `driver: legacy` (epoll) there: valgrind does not
# let other threads run while one waits in io_uring.
set -euo pipefail

cd "$(dirname "$0")/.."

export SERVER_CPU="${SERVER_CPU:-0}"
export CLIENT_CPU="${CLIENT_CPU:-1}"
export CLIENTS="${CLIENTS:-8}"
export DURATION="${DURATION:-10}"
export WARM_UP="${WARM_UP:-2}"
export ROUNDS="${ROUNDS:-3}"
export LARGE_NAMES="${LARGE_NAMES:-50000}"
export SERVERS="${SERVERS:-knot bind tern}"
export ZONES="${ZONES:-small large}"
export UPDATES="${UPDATES:-0}"
export IXFR_HISTORY="${IXFR_HISTORY:-}"
export QUERIES="${QUERIES:-0}"
export QUERY_CLIENTS="${QUERY_CLIENTS:-4}"
export RSS_EVERY="${RSS_EVERY:-0}"
export HEAP="${HEAP:-0}"
export CALLGRIND="${CALLGRIND:-0}"
export CG_RATE="${CG_RATE:-2000}"
export CG_SECONDS="${CG_SECONDS:-20}"
export UPDATE_RATE="${UPDATE_RATE:-50}"
export CG_DIR="${CG_DIR:-}"

for tool in knotd named taskset python3 dnsperf; do
    command -v "$tool" >/dev/null || { echo "bench-update: $tool is not installed (make deps)"; exit 1; }
done

exec python3 - "$@" <<'PYTHON'
import base64
import hashlib
import hmac
import multiprocessing
import os
import pathlib
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path("tests/update").resolve()))
import differential as d  # noqa: E402  (tests/update/differential.py: servers, key, zone)

import dns.message  # noqa: E402
import dns.name  # noqa: E402
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
SERVERS = os.environ["SERVERS"].split()
ZONES = os.environ["ZONES"].split()
UPDATES = int(os.environ["UPDATES"])
IXFR_HISTORY = os.environ["IXFR_HISTORY"]
QUERIES = os.environ["QUERIES"] == "1"
QUERY_CLIENTS = int(os.environ["QUERY_CLIENTS"])
RSS_EVERY = float(os.environ["RSS_EVERY"])
HEAP = os.environ["HEAP"] == "1"
CALLGRIND = os.environ["CALLGRIND"] == "1"
CG_RATE = int(os.environ["CG_RATE"])
CG_SECONDS = float(os.environ["CG_SECONDS"])
UPDATE_RATE = float(os.environ["UPDATE_RATE"])
CG_DIR = os.environ["CG_DIR"]
ORIGIN = d.ORIGIN
# `tern stats` asked at most this many times before the run fails.
STATS_TRIES = 5
# CALLGRIND: the functions printed whose Ir per answered query rose most beside updates.
CG_TOP = 25
# CALLGRIND: the TCP connections' tasks in callgrind_annotate's table (cg_inclusive's key).
TCP_TASKS = "tcp.rs:monoio::task::core::CoreStage<T>::poll"
ANSWER_BATCH = "udp.rs:tern_server::udp::answer_batch"
APPLY = "mod.rs:tern_server::worker::Worker::apply"


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
            # No per-key rate limit (`update-rate`, 1,000 a second by default): all the
            # clients sign with one key, and past 1,000 updates a second tern would answer
            # REFUSED, counted as errors (Knot and BIND have no such limit).
            text = conf.read_text() + f"cores: [{SERVER_CPU}]\nupdate-rate: 0\n"
            if CALLGRIND:
                # valgrind takes io_uring_enter for a system call that does not block:
                # a core parked in it would hold valgrind's one running thread, and the
                # update thread (and the start) would wait for the next datagram. epoll's
                # wait lets the other threads run. (Checked again with valgrind 3.19 and
                # `driver: io-uring`, one core, a 4-record zone: the start's "serving"
                # line had not come 60 s later, though the core answered 4 queries;
                # with `driver: legacy` it came at once.)
                text += "driver: legacy\n"
            if IXFR_HISTORY:
                text = text.replace("transfer:\n", f"transfer:\n  ixfr-history: {IXFR_HISTORY}\n")
            conf.write_text(text)
        if CALLGRIND and server.name == "tern":
            cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
                   f"--callgrind-out-file={server.cg_out}"] + cmd
        return ["taskset", "-c", str(SERVER_CPU)] + cmd

    server.command = pinned_command
    return server


def serial(server) -> int:
    query = dns.message.make_query(ORIGIN, dns.rdatatype.SOA)
    answer = dns.query.tcp(query, server.addr[0], port=server.addr[1], timeout=10)
    return answer.answer[0][0].serial


class Signer:
    """TSIG (RFC 8945 4.3) of the benchmark's requests, with the hmac module: dnspython
    renders and signs about ten times slower, and the clients would measure themselves.
    Checked once against dnspython at start (`check`)."""

    def __init__(self):
        self.secret = base64.b64decode(d.SECRET)
        self.key = dns.name.from_text(d.KEY_NAME).canonicalize().to_wire()
        self.algorithm = dns.name.from_text(d.ALGORITHM).to_wire()

    def sign(self, wire: bytes) -> bytes:
        now = int(time.time())
        when = struct.pack("!HIH", now >> 32, now & 0xFFFFFFFF, 300)
        variables = (self.key + struct.pack("!HI", 255, 0) + self.algorithm + when
                     + struct.pack("!HH", 0, 0))
        mac = hmac.new(self.secret, wire + variables, hashlib.sha256).digest()
        rdata = (self.algorithm + when + struct.pack("!H", len(mac)) + mac
                 + wire[:2] + struct.pack("!HH", 0, 0))
        record = self.key + struct.pack("!HHIH", 250, 255, 0, len(rdata)) + rdata
        count = struct.unpack("!H", wire[10:12])[0] + 1
        return wire[:10] + struct.pack("!H", count) + wire[12:] + record

    def check(self) -> None:
        wire = self.sign(unsigned_update(0, True, 0x1234))
        dns.message.from_wire(wire, keyring=d.keyring())  # raises if the MAC is wrong


def unsigned_update(index: int, adding: bool, ident: int) -> bytes:
    """Client `index`'s TXT added (or deleted), unsigned, with ID `ident`."""
    owner = f"bench-client{index}.{ORIGIN}"
    message = dns.update.UpdateMessage(ORIGIN, id=ident)
    if adding:
        message.add(owner, 60, "TXT", f'"client {index}"')
    else:
        message.delete(owner, "TXT", f'"client {index}"')
    return message.to_wire()


def client(index: int, addr, start: float, stop: float, out, quota: int = 0,
           pace: float = 0.0) -> None:
    """One client: UPDATEs one after the other over one TCP connection until `stop` (or,
    `quota` > 0, until `quota` of them are answered NOERROR; `pace` > 0: one every `pace`
    seconds at most, the next sent at its time, or at once when late),
    each signed and its answer waited for (its ID and RCODE read; its TSIG is not
    checked here: the servers' answers to these requests are checked by the test
    suites); puts (NOERROR answers after `start`, other answers after `start`, NOERROR
    answers in all, whether its record should be there at the end)."""
    os.sched_setaffinity(0, {CLIENT_CPU})
    signer = Signer()
    # The two messages, IDs set per request.
    messages = {adding: unsigned_update(index, adding, 0) for adding in (True, False)}
    counted = errors = total = 0
    adding = True
    present = False
    ident = index << 12
    due = time.time()
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(addr)
        while True:
            now = time.time()
            if now >= stop or 0 < quota <= total:
                break
            if pace > 0:
                # A benchmark's pacing (CALLGRIND's fixed update rate), not a test's event.
                if due > now:
                    time.sleep(due - now)
                    now = time.time()
                due = max(due + pace, now)
            ident = (ident + 1) & 0xFFFF
            wire = signer.sign(struct.pack("!H", ident) + messages[adding][2:])
            sock.sendall(struct.pack("!H", len(wire)) + wire)
            answer = read_exactly(sock, struct.unpack("!H", read_exactly(sock, 2))[0])
            if answer[:2] != wire[:2]:
                raise RuntimeError(f"answer ID {answer[:2].hex()} for request {wire[:2].hex()}")
            ok = answer[3] & 0x0F == 0
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


def read_exactly(sock, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("connection closed before the answer's end")
        data += chunk
    return data


def client_bound() -> float:
    """UPDATEs per second one client process can sign and send with no server (into a
    local socket pair, the answer read back as the server's): the ceiling of what the
    clients measure on CLIENT_CPU."""
    os.sched_setaffinity(0, {CLIENT_CPU})
    signer = Signer()
    signer.check()
    base = unsigned_update(0, True, 0)
    ours, theirs = socket.socketpair()
    count, begin = 0, time.monotonic()
    with ours, theirs:
        while time.monotonic() - begin < 2.0:
            wire = signer.sign(struct.pack("!H", count & 0xFFFF) + base[2:])
            ours.sendall(struct.pack("!H", len(wire)) + wire)
            echoed = read_exactly(theirs, struct.unpack("!H", read_exactly(theirs, 2))[0])
            theirs.sendall(struct.pack("!H", len(echoed)) + echoed)
            read_exactly(ours, struct.unpack("!H", read_exactly(ours, 2))[0])
            count += 1
    return count / (time.monotonic() - begin)


def rss_mib(server, field: str = "VmRSS") -> float:
    """The server process's resident memory (VmRSS, or `field`: VmHWM), MiB."""
    for line in pathlib.Path(f"/proc/{server.proc.pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sample_rss(server, stop: threading.Event) -> None:
    """Prints the server's VmRSS every RSS_EVERY seconds until `stop`."""
    began = time.time()
    while not stop.wait(RSS_EVERY):
        print(f"bench-update:   {time.time() - began:6.0f} s  VmRSS {rss_mib(server):6.1f} MiB",
              flush=True)


def heap_mib(server) -> float:
    """The Rss of the server's main heap (`[heap]` in /proc/PID/smaps: the main thread's
    arena, where the zones were loaded), MiB."""
    lines = pathlib.Path(f"/proc/{server.proc.pid}/smaps").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.endswith("[heap]"):
            for entry in lines[i + 1:i + 8]:
                if entry.startswith("Rss:"):
                    return int(entry.split()[1]) / 1024
    return float("nan")


def heap_probe(server, trim: bool = True) -> None:
    """glibc's own count of the server's heap (malloc_stats(), to its stderr, read back
    from its log: each arena's system and in-use octets, then the totals), the main
    heap's Rss, then (`trim`) VmRSS and the main heap's Rss after malloc_trim(0): all
    through gdb."""
    pid = str(server.proc.pid)
    for call in ["(void)malloc_stats()", "(int)malloc_trim(0)"][:2 if trim else 1]:
        subprocess.run(["gdb", "-p", pid, "-batch", "-ex", f"call {call}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        if "stats" in call:
            time.sleep(0.5)  # stderr is the log file: written at once, read after
            tail = server.log_tail(400).splitlines()
            firsts = [i for i, line in enumerate(tail) if line.startswith("Arena 0:")]
            at = firsts[-1] if firsts else len(tail)
            for line in tail[at:]:
                if line.startswith(("Arena", "system bytes", "in use bytes", "Total")):
                    print(f"bench-update:   malloc_stats: {line.strip()}", flush=True)
            print(f"bench-update:   main heap Rss {heap_mib(server):,.1f} MiB", flush=True)
    if trim:
        print(f"bench-update:   after malloc_trim(0): VmRSS {rss_mib(server):,.1f} MiB, main "
              f"heap Rss {heap_mib(server):,.1f} MiB", flush=True)


def holds_txt(server, index: int) -> bool:
    query = dns.message.make_query(f"bench-client{index}.{ORIGIN}", dns.rdatatype.TXT)
    answer = dns.query.tcp(query, server.addr[0], port=server.addr[1], timeout=10)
    return bool(answer.answer)


def load(server, seconds: float = 0.0, rate: float = 0.0) -> tuple[float, int, int]:
    """(NOERROR answers per second, errors, NOERROR answers in all) of CLIENTS clients;
    checks that each client's record is there exactly when its last update added it.
    With UPDATES, the clients make that many (warm-up included) and the rate is of them
    all, over the time they took. `seconds` > 0: counted for that long rather than
    DURATION; `rate` > 0: the clients together send at most `rate` updates a second."""
    out = multiprocessing.Queue()
    start = time.time() + 0.5 + WARM_UP
    quota = -(-UPDATES // CLIENTS) if UPDATES else 0
    stop = start + (24 * 3600 if quota else seconds or DURATION)
    pace = CLIENTS / rate if rate > 0 else 0.0
    procs = [multiprocessing.Process(target=client,
                                     args=(i, server.addr, start, stop, out, quota, pace))
             for i in range(CLIENTS)]
    began = time.time()
    for proc in procs:
        proc.start()
    sampled = threading.Event()
    if RSS_EVERY > 0:  # started after the forks: no thread is copied into a client
        threading.Thread(target=sample_rss, args=(server, sampled), daemon=True).start()
    results = [out.get() for _ in procs]
    sampled.set()
    for proc in procs:
        proc.join()
    took = time.time() - began
    for index, _, _, _, present in results:
        if holds_txt(server, index) != present:
            sys.exit(f"bench-update: {server.name}: client {index}'s TXT is "
                     f"{'missing' if present else 'still there'} after its last NOERROR")
    counted = sum(r[1] for r in results)
    total = sum(r[3] for r in results)
    if quota:
        return total / took, sum(r[2] for r in results), total
    return counted / (seconds or DURATION), sum(r[2] for r in results), total


def query_file(zone: str, path: pathlib.Path) -> None:
    """dnsperf's input: A queries for the zone's names (the large zone's hosts, or the
    small zone's apex and the names of its A records), in a shuffled order."""
    if zone == "large":
        names = [f"host{(i * 7919) % LARGE_NAMES}.{ORIGIN}" for i in range(LARGE_NAMES)]
    else:
        names = [ORIGIN] + [f"bench-client{i}.{ORIGIN}" for i in range(CLIENTS)]
    path.write_text("".join(f"{name} A\n" for name in names))


def dnsperf(server, queries: pathlib.Path, seconds: float) -> float:
    """Queries per second tern answered to dnsperf on CLIENT_CPU (UDP, QUERY_CLIENTS
    sockets with 100 queries in flight each) over `seconds`."""
    done = subprocess.run(
        ["taskset", "-c", str(CLIENT_CPU), "dnsperf", "-s", server.addr[0], "-p",
         str(server.addr[1]), "-d", str(queries), "-l", str(seconds), "-c",
         str(QUERY_CLIENTS), "-q", str(100 * QUERY_CLIENTS), "-t", "2"],
        capture_output=True, text=True, check=True)
    for line in done.stdout.splitlines():
        if "Queries per second:" in line:
            return float(line.split(":")[1])
    sys.exit(f"bench-update: dnsperf printed no rate:\n{done.stdout}\n{done.stderr}")


def cache_counts(server) -> tuple[int, int]:
    """tern's answer cache hits and misses so far, all cores (`tern stats`; asked up to
    STATS_TRIES times: under callgrind, tern's first answers can take longer than the
    command's 2 s)."""
    for _ in range(STATS_TRIES):
        done = subprocess.run([str(server.binary), "stats", "--config",
                               str(server.workdir / "tern.yaml")],
                              capture_output=True, text=True)
        if done.returncode == 0:
            break
    else:
        sys.exit(f"bench-update: tern stats failed:\n{done.stdout}{done.stderr}")
    for line in done.stdout.splitlines():
        if " cache hits " in line and line.startswith("all cores:"):
            words = line.split(" cache hits ")[1].split()
            return int(words[0]), int(words[2])
    sys.exit(f"bench-update: tern stats printed no cache counts:\n{done.stdout}")


def hit_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    hits, misses = after[0] - before[0], after[1] - before[1]
    return hits / max(1, hits + misses)


def queries_beside_updates(server, zone: str, root: pathlib.Path) -> tuple[float, float, float]:
    """(queries/s alone, queries/s while the update clients run, updates/s meanwhile);
    prints the share of queries the answer cache answered in each run."""
    queries = root / f"queries-{zone}.txt"
    query_file(zone, queries)
    counts = [cache_counts(server)]
    seconds = max(DURATION - 1, 1)
    alone = dnsperf(server, queries, seconds)
    counts.append(cache_counts(server))
    outcome = []
    updating = threading.Thread(target=lambda: outcome.append(load(server)))
    updating.start()
    # A benchmark's timing, not a test's event: the clients start counting after
    # 0.5 s and WARM_UP (load()); dnsperf runs inside their counted time.
    time.sleep(0.5 + WARM_UP)
    beside = dnsperf(server, queries, seconds)
    counts.append(cache_counts(server))
    updating.join()
    print(f"bench-update: tern {zone}: answer cache hits {hit_share(counts[0], counts[1]):.1%} "
          f"of queries alone, {hit_share(counts[1], counts[2]):.1%} beside updates", flush=True)
    rate, errors, _ = outcome[0]
    if errors:
        sys.exit(f"bench-update: {errors} update(s) failed beside the queries")
    return alone, beside, rate


def cg_query_file(zone: str, path: pathlib.Path) -> None:
    """CALLGRIND's dnsperf input: query_file's names (A), and in the large zone one query
    in 50 the TXT of a name the update clients change (the small zone's list is mostly
    those names already: each also asked for its TXT)."""
    touched = [f"bench-client{i}.{ORIGIN} TXT\n" for i in range(CLIENTS)]
    query_file(zone, path)
    lines = path.read_text().splitlines(keepends=True)
    if zone == "large":
        out = []
        for i, line in enumerate(lines):
            out.append(line)
            if i % 49 == 48:
                out.append(touched[(i // 49) % CLIENTS])
        lines = out
    else:
        lines += touched
    path.write_text("".join(lines))


def cg_dnsperf(server, queries: pathlib.Path, seconds: float, passes: int = 0) -> tuple[int, int]:
    """(queries answered, queries lost) of dnsperf at CG_RATE queries a second for
    `seconds` (or `passes` times over the list), on CLIENT_CPU."""
    limit = ["-n", str(passes)] if passes else ["-l", str(seconds)]
    done = subprocess.run(
        ["taskset", "-c", str(CLIENT_CPU), "dnsperf", "-s", server.addr[0], "-p",
         str(server.addr[1]), "-d", str(queries), "-Q", str(CG_RATE), "-q", "100", "-t", "5"]
        + limit, capture_output=True, text=True, check=True)
    counts = {}
    for line in done.stdout.splitlines():
        for field in ("Queries completed:", "Queries lost:"):
            if field in line:
                counts[field] = int(line.split(":")[1].split()[0])
    if len(counts) != 2:
        sys.exit(f"bench-update: dnsperf printed no counts:\n{done.stdout}\n{done.stderr}")
    return counts["Queries completed:"], counts["Queries lost:"]


def cg_window(server, label: str, queries: pathlib.Path) -> dict:
    """One measured window: callgrind's counters zeroed, dnsperf for CG_SECONDS, a dump
    named `label`; the dnsperf counts, the cache's and the serial's steps around it."""
    pid = str(server.proc.pid)
    cache_before, serial_before = cache_counts(server), serial(server)
    subprocess.run(["callgrind_control", "-z", pid], capture_output=True, check=True)
    answered, lost = cg_dnsperf(server, queries, CG_SECONDS)
    subprocess.run(["callgrind_control", f"--dump={label}", pid], capture_output=True,
                   check=True)
    cache_after, serial_after = cache_counts(server), serial(server)
    return {"answered": answered, "lost": lost,
            "hits": hit_share(cache_before, cache_after),
            "updates": (serial_after - serial_before) % 2**32}


def cg_dumps(out: str, pid: int, label: str) -> dict[str, int]:
    """Ir (`summary:`) of each thread's dump of window `label`: the files `out` (with its
    `%p` the server's `pid`) `.PART-THREAD` whose trigger is `dump label`."""
    prefix = pathlib.Path(out.replace("%p", str(pid)))
    found: dict[str, int] = {}
    for path in sorted(prefix.parent.glob(f"{prefix.name}.*-*")):
        lines = path.read_text(errors="replace").splitlines()
        if f"desc: Trigger: dump {label}" not in lines[:30]:
            continue
        total = [line for line in lines[:40] if line.startswith("summary:")]
        if total:
            found[str(path)] = int(total[0].split()[1])
    if not found:
        sys.exit(f"bench-update: no callgrind dump of {label} ({prefix}.*)")
    return found


def cg_core_file(files: dict[str, int]) -> str:
    """The answering core's thread: its dump holds the UDP loop (tern_server::udp)."""
    for path in files:
        if "tern_server::udp::" in pathlib.Path(path).read_text(errors="replace"):
            return path
    sys.exit("bench-update: no dump holds tern_server::udp")


def cg_inclusive(path: str) -> dict[str, int]:
    """Inclusive Ir of each function of a dump (`callgrind_annotate --inclusive=yes`),
    keyed by its source file's name and the function (`udp.rs:tern_server::udp::...`)."""
    done = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100",
                           "--auto=no", path], capture_output=True, text=True, check=True)
    costs: dict[str, int] = {}
    table = False
    for line in done.stdout.splitlines():
        if line.rstrip().endswith("file:function"):
            table = True
            continue
        words = line.split(None, 2)
        if not table or len(words) < 3 or not words[1].startswith("("):
            continue
        key = words[2].split(" [")[0]
        file, _, function = key.partition(":")
        key = f"{pathlib.Path(file).name}:{function}"
        # Listed twice (with and without its object's name): the larger kept. The code
        # inlined into a function from other files is listed under those files' names
        # (`query.rs:tern_server::udp::answer_batch`) and not added: summed, those lines
        # count more than their caller's task.
        costs[key] = max(costs.get(key, 0), int(words[0].replace(",", "")))
    return costs


def cg_difference(alone: tuple[str, int], beside: tuple[str, int], count: int = CG_TOP) -> None:
    """Prints the `count` functions whose inclusive Ir per answered query grew most from
    the window alone to the window beside updates (each: (core dump, answered))."""
    before, after = cg_inclusive(alone[0]), cg_inclusive(beside[0])
    rows = []
    for key in set(before) | set(after):
        a = before.get(key, 0) / max(1, alone[1])
        b = after.get(key, 0) / max(1, beside[1])
        rows.append((b - a, a, b, key))
    rows.sort(reverse=True)
    print("bench-update:   inclusive Ir per answered query, alone -> beside (the largest rises):")
    for rise, a, b, key in rows[:count]:
        print(f"bench-update:   {a:8,.0f} -> {b:8,.0f}  ({rise:+8,.0f})  {key[:150]}")
    print("bench-update:   and the largest falls:")
    for rise, a, b, key in sorted(rows[count:])[:count // 2]:
        if rise < 0:
            print(f"bench-update:   {a:8,.0f} -> {b:8,.0f}  ({rise:+8,.0f})  {key[:150]}")


def callgrind_run(zone: str, text: str, root: pathlib.Path, out_dir: pathlib.Path) -> None:
    """CALLGRIND=1: tern under callgrind, Ir per answered query alone and beside updates."""
    workdir = root / f"{zone}-callgrind"
    workdir.mkdir(exist_ok=True)
    server = d.make_server("tern", workdir, text)
    server.cg_out = str(out_dir / f"callgrind-{zone}.%p.out")
    server = pinned(server)
    queries = workdir / "queries.txt"
    cg_query_file(zone, queries)
    server.start()
    pid = server.proc.pid
    try:
        began = time.monotonic()
        server.wait_ready(900)
        print(f"bench-update: tern {zone} under callgrind: serving after "
              f"{time.monotonic() - began:.0f} s (pid {server.proc.pid})", flush=True)
        # Updates first, for a second: the first version made by an update from the loaded
        # one drops the zone's cached answers as a whole (the loaded version lists no
        # changed names); the windows measure the steady state after it, the cache filled
        # after that first drop.
        primed = load(server, seconds=1.0, rate=UPDATE_RATE)
        if primed[1]:
            sys.exit(f"bench-update: {primed[1]} update(s) failed before the windows")
        warm = cg_dnsperf(server, queries, 0, passes=1)
        print(f"bench-update:   warm-up pass: {warm[0]:,} answered, {warm[1]:,} lost", flush=True)
        windows = {"alone": cg_window(server, f"alone-{zone}", queries)}
        outcome = []
        updating = threading.Thread(target=lambda: outcome.append(
            load(server, seconds=CG_SECONDS + 10, rate=UPDATE_RATE)))
        updating.start()
        # A benchmark's timing, not a test's event: the clients start after 0.5 s and
        # WARM_UP (load()); the window runs inside their time.
        time.sleep(0.5 + WARM_UP)
        windows["beside"] = cg_window(server, f"beside-{zone}", queries)
        updating.join()
        _, errors, _ = outcome[0]
        if errors:
            sys.exit(f"bench-update: {errors} update(s) failed beside the queries")
    finally:
        server.stop()
    rows = []
    for name, window in windows.items():
        files = cg_dumps(server.cg_out, pid, f"{name}-{zone}")
        core = cg_core_file(files)
        core_ir = files[core]
        other_ir = sum(ir for path, ir in files.items() if path != core)
        answered = max(1, window["answered"])
        rows.append((name, window, core_ir, other_ir, core))
        print(f"bench-update: tern {zone} {name}: {window['answered']:,} answered, "
              f"{window['lost']:,} lost, {window['updates']:,} updates "
              f"({window['updates'] / CG_SECONDS:.1f}/s), cache hits {window['hits']:.1%}; "
              f"core thread {core_ir:,} Ir = {core_ir / answered:,.0f} Ir per answered query; "
              f"other threads {other_ir:,} Ir; core dump {core}", flush=True)
    alone, beside = (r[2] / max(1, r[1]["answered"]) for r in rows)
    print(f"bench-update: tern {zone}: Ir per answered query beside updates / alone "
          f"= {beside / alone:.3f}", flush=True)
    # The core's TCP connections' tasks: the UPDATEs' exchanges (read, TSIG checked, handed
    # off, answer signed and sent), which land on the core that accepted the connection;
    # without them, what a core that receives no UPDATE would spend.
    # The answering itself (the UDP batches' answers: cache, lookups, writing), apart
    # from the reactor's waits and receives, whose share per query falls as batches grow.
    apart = []
    for name, window, core_ir, _, core in rows:
        costs = cg_inclusive(core)
        tcp = costs.get(TCP_TASKS, 0)
        answered = max(1, window["answered"])
        apart.append((core_ir - tcp) / answered)
        print(f"bench-update: tern {zone} {name}: TCP connections' tasks {tcp:,} Ir "
              f"({tcp / max(1, window['updates']):,.0f} per update); the rest "
              f"{apart[-1]:,.0f} Ir per answered query, of which answer_batch "
              f"{costs.get(ANSWER_BATCH, 0) / answered:,.0f} and the versions' "
              f"changes (Worker::apply) {costs.get(APPLY, 0) / answered:,.0f}",
              flush=True)
    print(f"bench-update: tern {zone}: without the TCP tasks, beside updates / alone "
          f"= {apart[1] / apart[0]:.3f}", flush=True)
    cg_difference((rows[0][4], rows[0][1]["answered"]), (rows[1][4], rows[1][1]["answered"]))


def main() -> None:
    os.sched_setaffinity(0, {CLIENT_CPU})
    mode = os.environ.get("TERN_UPDATE", "")
    texts = zones()
    names = [name for name in ["knot", "bind"] if name in SERVERS and not QUERIES]
    if mode != "0" and "tern" in SERVERS:
        takes, why = d.tern_takes_updates(texts["small"])
        if takes:
            names.append("tern")
        elif mode == "1":
            sys.exit(f"bench-update: TERN_UPDATE=1 but {why}")
        else:
            print(f"bench-update: tern side skipped: tern refuses UPDATE ({why})")
    rows = []
    if CALLGRIND:
        if "tern" not in names:
            sys.exit("bench-update: CALLGRIND=1 measures tern, which is left out")
        out_dir = pathlib.Path(CG_DIR or tempfile.mkdtemp(prefix="tern-bench-update-cg-"))
        out_dir.mkdir(parents=True, exist_ok=True)
        print(f"bench-update: callgrind dumps in {out_dir}", flush=True)
        with tempfile.TemporaryDirectory(prefix="tern-bench-update-") as tmp:
            for zone, text in texts.items():
                if zone in ZONES:
                    callgrind_run(zone, text, pathlib.Path(tmp), out_dir)
        return
    with tempfile.TemporaryDirectory(prefix="tern-bench-update-") as tmp:
        root = pathlib.Path(tmp)
        print(f"bench-update: client bound: one client process alone signs and sends "
              f"{client_bound():,.0f} UPDATEs/s (to a socket pair, no server)")
        for zone, text in texts.items():
            if zone not in ZONES:
                continue
            for name in names:
                figures = []
                for round_ in range(ROUNDS):
                    (root / f"{zone}-{round_}").mkdir(exist_ok=True)
                    server = pinned(d.make_server(name, root / f"{zone}-{round_}", text))
                    with d.harness.serving({name: server}):
                        if QUERIES:
                            alone, beside, rate = queries_beside_updates(
                                server, zone, root / f"{zone}-{round_}")
                            print(f"bench-update: {name} {zone} round {round_ + 1}: "
                                  f"{alone:,.0f} queries/s alone, {beside:,.0f} beside "
                                  f"{rate:,.0f} updates/s ({beside / alone:.1%})", flush=True)
                            continue
                        before = serial(server)
                        rss_before = rss_mib(server)
                        if HEAP and name == "tern":
                            heap_probe(server, trim=False)
                        rate, errors, total = load(server)
                        rose = (serial(server) - before) % 2**32
                        rss_after = rss_mib(server)
                        peak = rss_mib(server, "VmHWM")
                        if HEAP and name == "tern":
                            heap_probe(server)
                    print(f"bench-update: {name} {zone} round {round_ + 1}: {rate:,.0f} "
                          f"updates/s, {total:,} updates, RSS {rss_before:,.1f} MiB when "
                          f"loaded, {rss_after:,.1f} MiB after them "
                          f"({rss_after / rss_before:.2f}x), peak {peak:,.1f} MiB", flush=True)
                    if not 0 < rose <= total:
                        sys.exit(f"bench-update: {name} on {zone}: serial rose by {rose} for "
                                 f"{total} updates answered NOERROR")
                    figures.append((rate, errors, total / rose))
                if not figures:
                    continue
                rate = statistics.median(f[0] for f in figures)
                rows.append((name, zone, rate, [f[0] for f in figures],
                             sum(f[1] for f in figures), statistics.median(f[2] for f in figures)))
    records = {z: sum(1 for line in t.splitlines() if line and not line.startswith("$"))
               for z, t in texts.items()}
    per_round = f"{UPDATES:,} updates" if UPDATES else f"{DURATION:.0f} s"
    print(f"\n{CLIENTS} clients over TCP on CPU {CLIENT_CPU}, server on CPU {SERVER_CPU}, "
          f"{per_round} per round, {ROUNDS} rounds, TSIG {d.ALGORITHM}")
    print(f"{'server':<8} {'zone':<22} {'updates/s':>10}  {'rounds':<28} {'errors':>6} {'updates/version':>15}")
    for name, zone, rate, each, errors, rose in rows:
        label = f"{zone} ({records[zone]:,} rec)"
        rounds = " ".join(f"{r:,.0f}" for r in each)
        print(f"{name:<8} {label:<22} {rate:>10,.0f}  {rounds:<28} {errors:>6} {rose:>15,.1f}")


if __name__ == "__main__":
    main()
PYTHON
