#!/usr/bin/env python3
"""Benchmark: a 1M-record zone transferred Knot -> tern, tern -> Knot and Knot -> Knot
(issue 10), one pair at a time on loopback, nothing else running; with `xot`, the same
zone sent by tern over TLS and over TCP (issue 26).

For each pair the receiver starts with no copy and transfers the zone by AXFR at start.
Reported: the transfer's time as the receiver logs it (Knot: "AXFR, incoming ...
finished, N seconds"; tern: "received from ... by AXFR, N records, built whole (...), in
N s"), the time as the sender logs it,
and the peak resident memory (VmHWM) of each side once the receiver serves the zone.

    TERN_BIN=target/release/tern python3 scripts/bench-transfer.py [RECORDS]
    TERN_BIN=target/release/tern python3 scripts/bench-transfer.py xot [RECORDS]

`xot`: tern alone (one core, `cores: [0]`) serves the zone on a plain listener and a
`tls.listen` one (a self-signed ECDSA P-256 certificate made by openssl), transfers allowed
to 127.0.0.0/8; a client here (one Python socket, the TLS connection's handshake done before
the clock starts) asks AXFR and reads every message until it has all the records: ROUNDS
rounds (3), each a TCP then a TLS transfer on a new connection. Reported: each transfer's
time at the client and in tern's log line, the medians and their ratio, TLS / TCP (issue
26's goal: at most 1.2).

Figures go to docs/benchmarks.md with the command that made them. The machines are
2-core and shared: times vary by tens of percent between runs; memory does not.
"""

from __future__ import annotations

import os
import pathlib
import re
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "transfer"))

import load  # noqa: E402  (tests/transfer/load.py: the zone, the servers, peak memory)
import harness  # noqa: E402
import servers as smod  # noqa: E402

def transfer_seconds(log: str, *patterns: str) -> float | None:
    """The seconds the first of `patterns` that matches in `log` captures (0.0 counts)."""
    for pattern in patterns:
        match = re.search(pattern, log)
        if match:
            return float(match.group(1))
    return None


def tern(workdir: pathlib.Path, zones: pathlib.Path, config) -> harness.ConfiguredTern:
    """tern with the configuration `config(port)`, serving big.example once ready."""
    server = harness.ConfiguredTern(harness.tern_binary(), workdir, zones, ["big.example"])
    server.config_text = config(server.port)
    server.command = lambda: [str(server.binary), "serve", "--config",
                              str(load.write(server.workdir / "tern.yaml", server.config_text))]
    return server


def run_pair(name: str, primary: smod.Server, secondary_of) -> None:
    with harness.serving({"primary": primary}):
        secondary = secondary_of(primary)
        with harness.serving({"secondary": secondary}):
            load.wait_for_record(secondary, "big.example", time.monotonic(), primary)
            logs = secondary.log_tail(100000) + "\n" + primary.log_tail(100000)
            received = transfer_seconds(
                logs, r"AXFR, incoming, remote [^,]+, finished, ([\d.]+) seconds",
                r"received from \S+ by AXFR, \d+ records,[^\n]*? in ([\d.]+) s")
            sent = transfer_seconds(
                logs, r"AXFR, outgoing, remote [^,]+, finished, ([\d.]+) seconds",
                r"AXFR, outgoing, to \S+, serial \d+: .* in ([\d.]+) s")
            if received is None or sent is None:
                raise SystemExit(f"{name}: no transfer time in the logs (receiver {received}, "
                                 f"sender {sent}): has a log line's format changed?")
            print(f"{name}: receiver {received} s, sender {sent} s; peak memory: sender "
                  f"{load.peak_kib(primary) // 1024} MiB, receiver "
                  f"{load.peak_kib(secondary) // 1024} MiB")


def main() -> None:
    if len(sys.argv) > 1:
        load.RECORDS = int(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="tern-bench-transfer-") as tmp:
        tmp = pathlib.Path(tmp)
        zones = tmp / "zones"
        zones.mkdir()
        (zones / "big.example.zone").write_text(load.big_zone("big.example"))
        print(f"zone: big.example, {load.RECORDS} A records + SOA, NS, A")

        def knot_primary(tag):
            knot = load.KnotPrimary(tmp / f"knot-primary-{tag}", zones, ["big.example"])
            knot.domain = "big.example"
            return knot

        def knot_secondary(tag):
            return lambda primary: load.KnotSecondary(tmp / f"knot-secondary-{tag}", zones,
                                                      ["big.example"], primary.port)

        def tern_secondary(primary):
            return tern(tmp / "tern-secondary", zones, lambda port: f"""listen: ["127.0.0.1:{port}"]
control-socket: {tmp}/tern-secondary.sock
transfer: {{max-zone-records: {load.RECORDS * 2}}}
zones:
  secondary:
    - {{origin: big.example., primaries: ["127.0.0.1:{primary.port}"]}}
""")

        def tern_primary():
            return tern(tmp / "tern-primary", zones, lambda port: f"""listen: ["127.0.0.1:{port}"]
control-socket: {tmp}/tern-primary.sock
transfer: {{allow: ["127.0.0.0/8"]}}
zones: {{directory: {zones}}}
""")

        run_pair("Knot -> Knot", knot_primary("a"), knot_secondary("a"))
        run_pair("Knot -> tern", knot_primary("b"), tern_secondary)
        run_pair("tern -> Knot", tern_primary(), knot_secondary("c"))


#----------- xot: tern's AXFR over TLS beside TCP ----------------------------

XOT_ROUNDS = int(os.environ.get("ROUNDS", "3"))


def axfr_read(sock, origin: str, expected: int) -> tuple[float, int, int]:
    """Asks AXFR of `origin` on `sock`; reads until `expected` records have come.
    Returns the seconds from the query's sending to the last message, the messages and
    the octets read."""
    import dns.message  # noqa: PLC0415 (dnspython only for the query)
    query = dns.message.make_query(origin, "AXFR").to_wire()
    reader = sock.makefile("rb", buffering=1 << 20)
    started = time.perf_counter()
    sock.sendall(struct.pack("!H", len(query)) + query)
    records = messages = octets = 0
    while records < expected:
        prefix = reader.read(2)
        if len(prefix) < 2:
            raise RuntimeError(f"closed after {records} of {expected} records")
        (size,) = struct.unpack("!H", prefix)
        message = reader.read(size)
        if len(message) < size or message[3] & 0x0F:
            raise RuntimeError(f"message {messages}: cut short or rcode {message[3] & 0x0F}")
        records += struct.unpack("!H", message[6:8])[0]
        messages += 1
        octets += 2 + size
    elapsed = time.perf_counter() - started
    reader.close()
    return elapsed, messages, octets


def xot_main() -> None:
    expected = load.RECORDS + 4  # SOA, NS, ns A, the records, the closing SOA
    with tempfile.TemporaryDirectory(prefix="tern-bench-xot-") as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "zones").mkdir()
        (tmp / "zones" / "big.example.zone").write_text(load.big_zone("big.example"))
        made = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                               "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                               str(tmp / "key.pem"), "-out", str(tmp / "cert.pem"), "-days",
                               "2", "-subj", "/CN=xot.example.test"], capture_output=True)
        if made.returncode != 0:
            sys.exit(f"openssl: {made.stderr.decode()}")
        plain, tls = smod.free_port(), smod.free_port()
        (tmp / "tern.yaml").write_text(f"""listen: ["127.0.0.1:{plain}"]
cores: [0]
control-socket: {tmp}/tern.sock
state-directory: {tmp}/state
zones: {{directory: {tmp}/zones}}
tls: {{listen: ["127.0.0.1:{tls}"], certificate: {tmp}/cert.pem, key: {tmp}/key.pem}}
transfer: {{allow: ["127.0.0.0/8"]}}
""")
        log = tmp / "tern.log"
        binary = os.environ.get("TERN_BIN", "target/release/tern")
        proc = subprocess.Popen([binary, "serve", "--config", str(tmp / "tern.yaml")],
                                stdout=open(log, "ab"), stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 300
            while "info: serving " not in log.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"tern did not start:\n{log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.1)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            context.set_alpn_protocols(["dot"])
            print(f"zone: big.example, {load.RECORDS} A records + SOA, NS, A; tern {binary}, "
                  f"one core; {XOT_ROUNDS} rounds")
            times = {"tcp": [], "tls": []}
            cpu = {"tcp": [], "tls": []}
            ticks = os.sysconf("SC_CLK_TCK")

            def tern_cpu() -> float:
                fields = pathlib.Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / ticks

            for _ in range(XOT_ROUNDS):
                for transport in ("tcp", "tls"):
                    raw = socket.create_connection(("127.0.0.1", plain if transport == "tcp" else tls),
                                                   timeout=120)
                    sock = context.wrap_socket(raw) if transport == "tls" else raw
                    before = tern_cpu()
                    with sock:
                        seconds, messages, octets = axfr_read(sock, "big.example.", expected)
                    used = tern_cpu() - before
                    times[transport].append(seconds)
                    cpu[transport].append(used)
                    print(f"  {transport}: {seconds:.3f} s at the client, tern's CPU {used:.2f} s, "
                          f"{messages} messages, {octets} octets")
            logged = re.findall(r"outgoing, to \S+, serial \d+: .* in ([\d.]+) s, over (\w+)",
                                log.read_text(errors="replace"))
            print(f"  tern's log: {', '.join(f'{t} {s} s' for s, t in logged)}")
            tcp, over_tls = statistics.median(times["tcp"]), statistics.median(times["tls"])
            print(f"median: TCP {tcp:.3f} s, TLS {over_tls:.3f} s: TLS / TCP = {over_tls / tcp:.2f}; "
                  f"fastest: TCP {min(times['tcp']):.3f} s, TLS {min(times['tls']):.3f} s: "
                  f"{min(times['tls']) / min(times['tcp']):.2f}; tern's CPU (median): TCP "
                  f"{statistics.median(cpu['tcp']):.2f} s, TLS {statistics.median(cpu['tls']):.2f} s")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "xot":
        if len(sys.argv) > 2:
            load.RECORDS = int(sys.argv[2])
        xot_main()
    else:
        main()
