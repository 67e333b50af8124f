#!/usr/bin/env python3
"""Hostile TLS record streams against tern's DNS over TLS (issue 26).

tern serves a small zone on a plain and a `tls.listen` listener. Checks:

1. Tiny records: a client (Python's ssl over memory BIOs, so that each write is one
   record) sends QUERIES queries pipelined, every octet of them in a record of its own
   (one octet of plaintext, about 22 of ciphertext each): every query is answered, in one
   connection; tern's VmRSS grows by less than MAX_GROWTH_KIB meanwhile (what it holds for
   unprocessed records is bounded, not proportional to the flood).
2. TLS 1.2 renegotiation: `openssl s_client -tls1_2` asks to renegotiate (its `R`
   command, its stdin held open) on an established connection: rustls refuses it with a
   no_renegotiation warning alert (its log line is the event waited for; a server that
   accepted would not log it). The alert is queued and leaves with the connection's next
   write; rustls ends a connection that keeps asking.
3. Afterwards a new DoT connection is answered.

    TERN_BIN=target/debug/tern python3 tests/tls/hostile_records.py
"""

from __future__ import annotations

import pathlib
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dot  # noqa: E402  (tests/tls/dot.py: tern, the TLS client, waits)
import idle_memory  # noqa: E402  (the zone, VmRSS)

QUERIES = 500
MAX_GROWTH_KIB = 4096


class Tern(idle_memory.IdleTern):
    pass


def handshake(context: ssl.SSLContext, port: int):
    sock = socket.create_connection(("127.0.0.1", port), timeout=dot.TIMEOUT)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing)
    # Each pass sends what the client made and reads at least one octet, or ends.
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            sock.sendall(outgoing.read())
            data = sock.recv(65536)
            if not data:
                dot.fail("closed during the handshake")
            incoming.write(data)
    sock.sendall(outgoing.read())
    return sock, tls, incoming, outgoing


def check_tiny_records(tern: Tern) -> None:
    sock, tls, incoming, outgoing = handshake(dot.tls_context(), tern.ports["tls"])
    wires = [idle_memory.query_wire(i) for i in range(QUERIES)]
    stream = b"".join(struct.pack("!H", len(w)) + w for w in wires)
    before = tern.vm_rss_kib()
    for octet in stream:
        tls.write(bytes([octet]))
    records = outgoing.read()
    sock.sendall(records)
    answered = set()
    data = b""
    # Each pass reads at least one octet of plaintext or ciphertext, or ends.
    while len(answered) < QUERIES:
        try:
            data += tls.read(65536)
        except ssl.SSLWantReadError:
            chunk = sock.recv(65536)
            if not chunk:
                dot.fail(f"closed after {len(answered)} of {QUERIES} answers")
            incoming.write(chunk)
            continue
        while len(data) >= 2 and len(data) >= 2 + struct.unpack("!H", data[:2])[0]:
            size = struct.unpack("!H", data[:2])[0]
            answered.add(struct.unpack("!H", data[2:4])[0])
            data = data[2 + size:]
    growth = tern.vm_rss_kib() - before
    sock.close()
    if growth > MAX_GROWTH_KIB:
        dot.fail(f"VmRSS grew by {growth} KiB over a flood of tiny records")
    print(f"hostile_records: {len(stream)} one-octet records ({len(records)} octets): "
          f"{QUERIES} queries answered; VmRSS grew {growth} KiB")


def check_renegotiation(tern: Tern) -> None:
    client = subprocess.Popen(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{tern.ports['tls']}", "-tls1_2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # s_client's `R` command, its stdin kept open until tern has refused.
        client.stdin.write(b"R\n")
        client.stdin.flush()
        dot.wait_for("the renegotiation's refusal",
                     lambda: "alert NoRenegotiation" in tern.log_text())
        client.stdin.close()
        output = client.stdout.read().decode(errors="replace")
        client.wait(timeout=dot.WAIT)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    if "RENEGOTIATING" not in output:
        dot.fail(f"s_client did not try to renegotiate:\n{output[-1500:]}")
    print("hostile_records: TLS 1.2 renegotiation refused (no_renegotiation)")


def main() -> int:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tern-tls-hostile-"))
    tern = None
    try:
        (tmp / "zones").mkdir()
        (tmp / "zones" / "example.com.zone").write_text(idle_memory.ZONE)
        tern = Tern(tmp)
        check_tiny_records(tern)
        check_renegotiation(tern)
        with dot.tls_connect(tern.ports["tls"]) as sock:
            answer = dot.exchange(sock, idle_memory.query_wire(7))
            if struct.unpack("!H", answer[:2])[0] != 7:
                dot.fail("a wrong answer after the hostile clients")
        tern.stop()
        if tern.proc.returncode != 0:
            dot.fail(f"tern exited with {tern.proc.returncode}:\n{dot.log_tail(tern.log)}")
        print("hostile_records: 3 passed, 0 failed")
        return 0
    except (dot.Failure, OSError, ssl.SSLError, subprocess.TimeoutExpired) as err:
        print(f"hostile_records: FAILED: {err}", file=sys.stderr)
        if tern is not None:
            print(f"--- tern log:\n{dot.log_tail(tern.log)}", file=sys.stderr)
        return 1
    finally:
        if tern is not None:
            tern.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
