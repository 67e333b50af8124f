#!/usr/bin/env python3
"""1M-record transfers while tern answers a steady load (issue 10): no query lost.

0. A flood: NOTIFYs over UDP and AXFR requests over TCP, as fast as a Python thread sends
   them, for zones tern does not take them for, while dnsperf asks: no query lost.
1. Out: tern serves `big.example` (1,000,000 A records) and a small zone; Knot, its
   secondary, transfers `big.example` by AXFR while dnsperf asks tern for the small
   zone at a fixed rate. dnsperf must report every query answered, and Knot must serve
   the whole zone (its serial and a record near the end).
2. In: Knot serves `big2.example` (1,000,000 records); tern, its secondary, transfers
   it while dnsperf asks tern as before: every query answered, and tern serves the zone.

Both report the transfer's time and each side's peak memory (VmHWM), which
docs/benchmarks.md records. The rate is modest (`LOAD_QPS`, default 10,000 q/s over
4 clients): the test checks that no transfer holds a core, not how fast tern is.

Usage (from the repository root; loopback only; about a minute):

    TERN_BIN=target/release/tern python3 tests/transfer/load.py

Exits 1 on any failure.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402  (tests/transfer/common.py)
import harness  # noqa: E402
import servers as smod  # noqa: E402

RECORDS = int(os.environ.get("LOAD_RECORDS", "1000000"))
QPS = int(os.environ.get("LOAD_QPS", "10000"))
# How long dnsperf runs: long enough to cover a whole transfer.
SECONDS = int(os.environ.get("LOAD_SECONDS", "25"))
# The most AXFR requests (and about 50 times as many NOTIFYs) the flood sends: enough
# to keep a core busy, few enough not to churn through the ephemeral ports (a server
# started later picks a port that must still be free).
FLOOD_MAX = 2000
TRANSFER_WAIT = 300.0


def fail(message: str, *servers) -> None:
    common.fail("load", message, *servers)


def big_zone(origin: str) -> str:
    lines = [f"$ORIGIN {origin}.", "$TTL 300",
             "@ SOA ns hostmaster 1 3600 3600 604800 300", "  NS ns", "ns A 192.0.2.1"]
    lines += [f"h{i} A 10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}" for i in range(RECORDS)]
    return "\n".join(lines) + "\n"


SMALL = """$ORIGIN small.example.
$TTL 300
@ SOA ns hostmaster 1 3600 3600 604800 300
  NS ns
ns A 192.0.2.1
www A 192.0.2.80
"""


def peak_kib(server: smod.Server) -> int:
    """The process's peak resident memory (VmHWM), in KiB."""
    for line in pathlib.Path(f"/proc/{server.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


class Load:
    """dnsperf against `addr` for `SECONDS` at `QPS`, in the background."""

    def __init__(self, addr, queries: pathlib.Path):
        self.done = subprocess.Popen(
            ["dnsperf", "-s", addr[0], "-p", str(addr[1]), "-d", str(queries), "-c", "4",
             "-l", str(SECONDS), "-Q", str(QPS), "-t", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def result(self) -> tuple[int, int, str]:
        """(sent, lost, output) once dnsperf ends."""
        output, _ = self.done.communicate(timeout=SECONDS + 60)
        sent = re.search(r"Queries sent:\s+(\d+)", output)
        lost = re.search(r"Queries lost:\s+(\d+)", output)
        if not sent or not lost:
            fail(f"dnsperf's output has no counts:\n{output}")
        return int(sent.group(1)), int(lost.group(1)), output


def flood(addr, stop: threading.Event, counts: dict) -> None:
    """NOTIFYs over UDP (for a zone tern does not take them for: REFUSED or NOTAUTH)
    and AXFR requests over TCP for a zone tern does not serve (NOTAUTH), as fast as
    they go, until `stop`; at most FLOOD_MAX of each."""
    import socket
    import struct

    import dns.message
    import dns.opcode

    notify = dns.message.make_query("small.example.", "SOA")
    notify.set_opcode(dns.opcode.NOTIFY)
    notify_wire = notify.to_wire()
    axfr_wire = dns.message.make_query("nx.example.", "AXFR").to_wire()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setblocking(False)
    counts["notify"] = counts["axfr"] = 0
    while not stop.is_set() and counts["axfr"] < FLOOD_MAX:
        for _ in range(50):
            try:
                udp.sendto(notify_wire, addr)
                counts["notify"] += 1
            except BlockingIOError:
                break
        try:
            with socket.create_connection(addr, timeout=2) as tcp:
                tcp.sendall(struct.pack("!H", len(axfr_wire)) + axfr_wire)
                tcp.recv(512)
                counts["axfr"] += 1
        except OSError:
            pass
    udp.close()


def check_load(load: Load, what: str, *servers) -> None:
    sent, lost, output = load.result()
    if sent < QPS * SECONDS // 2 or lost != 0:
        fail(f"{what}: dnsperf sent {sent}, lost {lost}:\n{output[-1500:]}", *servers)
    print(f"transfer/load: {what}: dnsperf sent {sent} queries at up to {QPS}/s, lost {lost}")


class KnotSecondary(smod.Knot):
    """Knot transferring `domain` from the primary at `primary_port`."""

    domain = "big.example"

    def __init__(self, workdir, zone_dir, zones, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        conf.write_text(self.base_config() + f"""
remote:
  - id: tern
    address: 127.0.0.1@{self.primary_port}
{self.template(self.workdir)}zone:
  - domain: {self.domain}
    master: tern
""")
        return ["knotd", "-c", str(conf)]


class KnotPrimary(smod.Knot):
    """Knot serving `domain` from `zone_dir`/`domain`.zone to any loopback client."""

    domain = "big2.example"

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        conf.write_text(self.base_config() + f"""
acl:
  - id: local
    address: 127.0.0.0/8
    action: transfer
{self.template(self.zone_dir)}zone:
  - domain: {self.domain}
    file: {self.domain}.zone
    acl: local
""")
        return ["knotd", "-c", str(conf)]


def wait_for_record(server: smod.Server, zone: str, started: float, *logs) -> float:
    """Waits until `server` answers the zone's last record; the seconds since `started`."""
    import dns.message
    import wire

    name = f"h{RECORDS - 1}.{zone}."
    deadline = time.monotonic() + TRANSFER_WAIT
    while time.monotonic() < deadline:
        reply = wire.exchange(dns.message.make_query(name, "A").to_wire(), server.addr,
                              tcp=False, timeout=1.0, retries=0)
        if reply.ok and reply.rcode == 0 and reply.answer:
            return time.monotonic() - started
        time.sleep(0.2)
    fail(f"{server.name} did not serve {name} within {TRANSFER_WAIT:.0f}s", server, *logs)
    return 0.0


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-load-") as tmp:
        tmp = pathlib.Path(tmp)
        zones = tmp / "zones"
        zones.mkdir()
        (zones / "big.example.zone").write_text(big_zone("big.example"))
        (zones / "small.example.zone").write_text(SMALL)
        knot_zones = tmp / "knot-zones"
        knot_zones.mkdir()
        (knot_zones / "big2.example.zone").write_text(big_zone("big2.example"))
        queries = tmp / "queries"
        queries.write_text("www.small.example A\nsmall.example SOA\nnx.small.example A\n")

        # 1. Out of tern.
        tern_port = smod.free_port()
        config = f"""listen: ["127.0.0.1:{tern_port}"]
control-socket: {tmp}/tern.sock
transfer: {{allow: ["127.0.0.0/8"]}}
zones:
  directory: {zones}
"""
        tern = harness.ConfiguredTern(harness.tern_binary(), tmp / "tern", zones,
                                      ["small.example", "big.example"], config_text=config)
        tern.port = tern_port
        tern.command = lambda: [str(tern.binary), "serve", "--config",
                                str(write(tern.workdir / "tern.yaml", tern.config_text))]
        with harness.serving({"tern": tern}):
            # 0. A flood of NOTIFY and AXFR requests while dnsperf asks.
            load = Load(tern.addr, queries)
            stop, counts = threading.Event(), {}
            flooder = threading.Thread(target=flood, args=(tern.addr, stop, counts))
            flooder.start()
            sent, lost, output = load.result()
            stop.set()
            flooder.join()
            if sent < QPS * SECONDS // 2 or lost != 0:
                fail(f"flood: dnsperf sent {sent}, lost {lost}:\n{output[-1500:]}", tern)
            print(f"transfer/load: a flood of {counts['notify']} NOTIFYs and {counts['axfr']} "
                  f"AXFR requests beside dnsperf: sent {sent}, lost {lost}")

            # Knot's port is picked now, after the flood's connections.
            knot_in = KnotSecondary(tmp / "knot-in", zones, ["big.example"], tern_port)
            load = Load(tern.addr, queries)
            time.sleep(2)  # the load is steady before the transfer starts
            started = time.monotonic()
            knot_in.start()
            try:
                seconds = wait_for_record(knot_in, "big.example", started, tern)
                check_load(load, "AXFR of 1M records out of tern to Knot", tern, knot_in)
                print(f"transfer/load: out: Knot served the zone {seconds:.1f} s after it "
                      f"started; peak memory tern {peak_kib(tern) // 1024} MiB, Knot "
                      f"{peak_kib(knot_in) // 1024} MiB")
            finally:
                knot_in.stop()

        # 2. Into tern. (Knot's port is picked now, after the flood's connections.)
        knot_out = KnotPrimary(tmp / "knot-out", knot_zones, ["big2.example"])
        with harness.serving({"knot": knot_out}):
            config = f"""listen: ["127.0.0.1:{tern_port}"]
control-socket: {tmp}/tern.sock
transfer:
  max-zone-records: {RECORDS * 2}
zones:
  directory: {zones}
  secondary:
    - {{origin: big2.example., primaries: ["127.0.0.1:{knot_out.port}"]}}
"""
            tern.config_text = config
            tern.zones = ["small.example"]
            with harness.serving({"tern": tern}):
                load = Load(tern.addr, queries)
                started = time.monotonic()
                seconds = wait_for_record(tern, "big2.example", started, tern)
                check_load(load, "AXFR of 1M records from Knot into tern", tern, knot_out)
                print(f"transfer/load: in: tern served the zone {seconds:.1f} s after it "
                      f"started; peak memory tern {peak_kib(tern) // 1024} MiB, Knot "
                      f"{peak_kib(knot_out) // 1024} MiB")
    print("transfer/load: ok")


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.write_text(text)
    return path


if __name__ == "__main__":
    main()
