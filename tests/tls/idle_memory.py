#!/usr/bin/env python3
"""What an idle DNS-over-TLS connection costs tern (issue 26: 10,000 idle connections in
at most 100 MiB, answering UDP at the same time).

tern (one core, `tcp.max-connections` and the timeouts raised so that nothing closes the
connections) serves a small zone on a plain and a `tls.listen` listener. WARM_UP TLS
connections are opened first (handshake, one query and its answer each, then held), so
that the core's pools and the allocator's arenas have grown; tern's VmRSS is read
(/proc); then CONNECTIONS more are opened the same way and held, and VmRSS read again.
Checks:

1. The connections all count as open (`tern_tls_connections_open`, on the metrics
   endpoint), each got its answer, and (VmRSS with them - VmRSS before) / CONNECTIONS is
   at most MAX_BYTES_PER_CONNECTION: a count of octets, not a time.
2. Meanwhile UDP is answered, and a sample of the held connections each answer a second
   query over TLS (the connections are idle, not dead).

    TERN_BIN=target/debug/tern python3 tests/tls/idle_memory.py

Every wait is for an event (an answer, a counter reaching its value) and bounded; tern and
the temporary directory go on exit.
"""

from __future__ import annotations

import pathlib
import resource
import shutil
import socket
import struct
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dot  # noqa: E402  (tests/tls/dot.py: tern, the TLS client, waits)
import dns.message  # noqa: E402

WARM_UP = 100
CONNECTIONS = 1000
SAMPLE = 20  # held connections asked a second query
# The bound on an idle connection's share of tern's VmRSS, in octets. Measured here
# (1,000 connections after 100): 24,514 with rustls's buffered API (its 4 KiB deframing
# buffer and our 2 KiB ciphertext buffer under every pending read), 15,077 (debug build)
# with the unbuffered one, 10,084 with the connection's task made smaller (boxed rare
# awaits, rustls's state on the heap), 8,331 (release build) once the task held no monoio
# timer (the connection's timeouts are slots of the core's table, tcp/deadline.rs).
# Issue 26's goal, 10,000 connections in 100 MiB, is about 9,400 per connection: this
# bound holds it, and fails on 10,084 (docs/benchmarks.md).
MAX_BYTES_PER_CONNECTION = 9_000

ZONE = """\
$TTL 300
@        SOA   ns1 hostmaster 1 7200 3600 1209600 300
         NS    ns1
ns1      A     192.0.2.1
www      A     192.0.2.80
"""


class IdleTern(dot.Tern):
    CORES = "cores: [0]\n"
    TCP = (f"  max-connections: {2 * (WARM_UP + CONNECTIONS)}\n"
           "  initial-timeout: 120s\n  idle-timeout: 600s\n")

    def vm_rss_kib(self) -> int:
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        dot.fail("no VmRSS in /proc")
        return 0


def query_wire(qid: int) -> bytes:
    query = dns.message.make_query("www.example.com.", "A")
    query.id = qid
    return query.to_wire()


def open_held(port: int, count: int, first_id: int) -> list:
    """`count` TLS connections, each having asked one query and read its answer."""
    held = []
    for i in range(count):
        sock = dot.tls_connect(port)
        answer = dot.exchange(sock, query_wire((first_id + i) & 0xFFFF))
        if struct.unpack("!H", answer[:2])[0] != (first_id + i) & 0xFFFF or answer[3] & 0x0F != 0:
            dot.fail(f"connection {first_id + i}: a wrong answer")
        held.append(sock)
    return held


def open_tls_connections(tern: IdleTern) -> float:
    values = tern.metrics()
    return sum(v for k, v in values.items() if k.startswith("tern_tls_connections_open"))


def main() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * (WARM_UP + CONNECTIONS) + 256
    if soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            print(f"idle_memory: FAILED: RLIMIT_NOFILE hard limit {hard} < {needed}", file=sys.stderr)
            return 1
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tern-tls-idle-"))
    tern = None
    held = []
    try:
        (tmp / "zones").mkdir()
        (tmp / "zones" / "example.com.zone").write_text(ZONE)
        tern = IdleTern(tmp)
        port = tern.ports["tls"]
        held += open_held(port, WARM_UP, 0)
        dot.wait_for("the warm-up connections to count as open",
                     lambda: open_tls_connections(tern) == WARM_UP)
        before = tern.vm_rss_kib()
        held += open_held(port, CONNECTIONS, WARM_UP)
        dot.wait_for("every connection to count as open",
                     lambda: open_tls_connections(tern) == WARM_UP + CONNECTIONS)
        after = tern.vm_rss_kib()
        per_connection = (after - before) * 1024 // CONNECTIONS
        print(f"idle_memory: VmRSS {before} KiB with {WARM_UP} connections, {after} KiB with "
              f"{WARM_UP + CONNECTIONS}: {per_connection} octets per idle connection "
              f"(bound {MAX_BYTES_PER_CONNECTION})")
        if per_connection > MAX_BYTES_PER_CONNECTION:
            dot.fail(f"an idle TLS connection costs {per_connection} octets of VmRSS, "
                     f"more than {MAX_BYTES_PER_CONNECTION}")
        if dot.udp_answered(tern.ports["plain"], 20) != 20:
            dot.fail("UDP queries went unanswered while the connections were held")
        step = len(held) // SAMPLE
        for i, sock in enumerate(held[::step][:SAMPLE]):
            qid = 40000 + i
            answer = dot.exchange(sock, query_wire(qid))
            if struct.unpack("!H", answer[:2])[0] != qid:
                dot.fail(f"held connection {i * step}: a wrong second answer")
        print(f"idle_memory: UDP answered meanwhile; {SAMPLE} held connections answered again")
        for sock in held:
            sock.close()
        held = []
        tern.stop()
        if tern.proc.returncode != 0:
            dot.fail(f"tern exited with {tern.proc.returncode}:\n{dot.log_tail(tern.log)}")
        print("idle_memory: 2 passed, 0 failed")
        return 0
    except (dot.Failure, OSError, socket.timeout) as err:
        print(f"idle_memory: FAILED: {err}", file=sys.stderr)
        if tern is not None:
            print(f"--- tern log:\n{dot.log_tail(tern.log)}", file=sys.stderr)
        return 1
    finally:
        for sock in held:
            sock.close()
        if tern is not None:
            tern.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
