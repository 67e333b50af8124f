#!/usr/bin/env python3
"""Heap allocations of answering over an established DNS-over-TLS connection (issue 26).

tern (one core, so that its "all cores" allocation count is that core's) serves a small
zone on a plain and a `tls.listen` listener; the binary counts every heap allocation per
thread (its counting allocator) and `tern stats` reports the cores' sum. A TCP
connection, then a TLS one, asks WARM_UP queries one after the other (the core's pools,
the answer cache and the connection's buffers grow to what they need); then QUERIES more,
each sent once the previous answer arrived (over TLS: a socket read of a record's header,
one of the rest, one answer written). The allocations a `tern stats` snapshot makes itself are measured first
(two snapshots in a row) and taken off. Check:

1. Over TCP: every answer is right, and the QUERIES queries made no allocation.
2. Over TLS: every answer is right, and the QUERIES queries made at most MAX_PER_ANSWER
   allocations each on the core. tern's TLS path allocates nothing per query (the header
   read uses five octets of the connection's own, the rest of a record a pool buffer,
   answers are encrypted into a pool buffer); rustls allocates twice per query and answer, which its
   unbuffered API gives no way around: it copies each decrypted record into its queue of
   received plaintext (`take_received_plaintext`, `into_vec`) and makes each encrypted
   record in a buffer of its own (`encrypt_outgoing`). Plain TCP makes none (the same
   framing). Before the pooled read (a `Vec` per socket read and reallocations joining
   the header and the rest) it was 5 per answer.

    TERN_BIN=target/debug/tern python3 tests/tls/allocations.py

Every wait is for an event (an answer, a snapshot's output) and bounded; tern and the
temporary directory go on exit.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import socket
import struct
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dot  # noqa: E402  (tests/tls/dot.py: tern, the TLS client, waits)
import dns.message  # noqa: E402

WARM_UP = 50
QUERIES = 500
# rustls's two: the query's record decrypted (copied into its plaintext queue) and the
# answer's record encrypted.
MAX_PER_ANSWER = 2

ZONE = """\
$TTL 300
@        SOA   ns1 hostmaster 1 7200 3600 1209600 300
         NS    ns1
ns1      A     192.0.2.1
www      A     192.0.2.80
"""


class OneCoreTern(dot.Tern):
    CORES = "cores: [0]\n"
    TCP = "  initial-timeout: 60s\n  idle-timeout: 60s\n"

    def allocations(self) -> int:
        """The cores' heap allocations so far (`tern stats`, the "all cores" line)."""
        out = self.control("stats")
        found = re.search(r"^all cores: .* allocations (\d+)", out, re.M)
        if not found:
            dot.fail(f"no allocation count in tern stats: {out}")
        return int(found.group(1))


def ask(sock, qid: int) -> None:
    query = dns.message.make_query("www.example.com.", "A")
    query.id = qid
    answer = dot.exchange(sock, query.to_wire())
    if struct.unpack("!H", answer[:2])[0] != qid or answer[3] & 0x0F != 0:
        dot.fail(f"query {qid}: a wrong answer")


def main() -> int:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tern-tls-alloc-"))
    tern = None
    sock = None
    try:
        (tmp / "zones").mkdir()
        (tmp / "zones" / "example.com.zone").write_text(ZONE)
        tern = OneCoreTern(tmp)
        made = {}
        for transport in ("tcp", "tls"):
            if transport == "tls":
                sock = dot.tls_connect(tern.ports["tls"])
            else:
                sock = socket.create_connection(("127.0.0.1", tern.ports["plain"]), timeout=dot.TIMEOUT)
            for qid in range(WARM_UP):
                ask(sock, qid)
            first = tern.allocations()
            second = tern.allocations()
            for qid in range(WARM_UP, WARM_UP + QUERIES):
                ask(sock, qid)
            third = tern.allocations()
            sock.close()
            sock = None
            snapshot = second - first
            made[transport] = (third - second) - snapshot
            print(f"allocations: {QUERIES} queries over one {transport.upper()} connection made "
                  f"{made[transport]} heap allocations on the core (a stats snapshot makes {snapshot})")
        if made["tcp"] > 0:
            dot.fail(f"{made['tcp']} allocations for {QUERIES} answers over TCP: the framing allocates")
        if made["tls"] > MAX_PER_ANSWER * QUERIES:
            dot.fail(f"{made['tls']} allocations for {QUERIES} answers over TLS: more than "
                     f"{MAX_PER_ANSWER} per answer (rustls's decryption and encryption)")
        tern.stop()
        if tern.proc.returncode != 0:
            dot.fail(f"tern exited with {tern.proc.returncode}:\n{dot.log_tail(tern.log)}")
        print("allocations: 2 passed, 0 failed")
        return 0
    except (dot.Failure, OSError, socket.timeout) as err:
        print(f"allocations: FAILED: {err}", file=sys.stderr)
        if tern is not None:
            print(f"--- tern log:\n{dot.log_tail(tern.log)}", file=sys.stderr)
        return 1
    finally:
        if sock is not None:
            sock.close()
        if tern is not None:
            tern.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
