#!/usr/bin/env python3
"""Benchmark: a 1M-record zone transferred Knot -> tern, tern -> Knot and Knot -> Knot
(issue 10), one pair at a time on loopback, nothing else running.

For each pair the receiver starts with no copy and transfers the zone by AXFR at start.
Reported: the transfer's time as the receiver logs it (Knot: "AXFR, incoming ...
finished, N seconds"; tern: "received from ... in N s"), the time as the sender logs it,
and the peak resident memory (VmHWM) of each side once the receiver serves the zone.

    TERN_BIN=target/release/tern python3 scripts/bench-transfer.py [RECORDS]

Figures go to docs/benchmarks.md with the command that made them. The machines are
2-core and shared: times vary by tens of percent between runs; memory does not.
"""

from __future__ import annotations

import pathlib
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "transfer"))

import load  # noqa: E402  (tests/transfer/load.py: the zone, the servers, peak memory)
import harness  # noqa: E402
import servers as smod  # noqa: E402

def transfer_seconds(log: str, pattern: str) -> float | None:
    match = re.search(pattern, log)
    return float(match.group(1)) if match else None


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
            received = (transfer_seconds(logs, r"AXFR, incoming, remote [^,]+, finished, ([\d.]+) seconds")
                        or transfer_seconds(logs, r"received from \S+ by AXFR, \d+ records, in ([\d.]+) s"))
            sent = (transfer_seconds(logs, r"AXFR, outgoing, remote [^,]+, finished, ([\d.]+) seconds")
                    or transfer_seconds(logs, r"AXFR, outgoing, to \S+, serial \d+: .* in ([\d.]+) s"))
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


if __name__ == "__main__":
    main()
