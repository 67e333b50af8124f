#!/usr/bin/env python3
"""tern's catalog zone (RFC 9432, version 2) consumed by Knot and BIND 9 (issue 10).

tern serves `example.com.` and `example.net.` from files and produces `catalog.tern.`
(`zones.catalog-producer`), NOTIFYing Knot and BIND. Each consumer is configured with the
catalog alone (Knot: `catalog-role: interpret` and a template; BIND: `catalog-zones` with
tern as default primary): it must come to serve both member zones, transferred from tern.
Then tern gets a third zone file (`example.org.`) and loses one (`example.net.`), and a
SIGHUP: the catalog's serial grows, tern NOTIFYs, and each consumer must serve
`example.org.` and stop serving `example.net.`.

Usage (from the repository root; loopback only):

    TERN_BIN=target/release/tern python3 tests/transfer/catalog.py

Exits 1 on any failure, with the logs.
"""

from __future__ import annotations

import os
import pathlib
import signal
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.message  # noqa: E402
import dns.rcode  # noqa: E402

import common  # noqa: E402  (tests/transfer/common.py)
import harness  # noqa: E402
import servers as smod  # noqa: E402
import wire  # noqa: E402

CATALOG = "catalog.tern"
WAIT = 60.0


def fail(message: str, *servers) -> None:
    common.fail("catalog", message, *servers)


def zone(origin: str, serial: int = 1) -> str:
    return (f"$ORIGIN {origin}.\n$TTL 300\n@ SOA ns hostmaster {serial} 3600 3600 604800 300\n"
            f"  NS ns\nns A 192.0.2.1\nwww A 192.0.2.80\n")


def serves(server: smod.Server, origin: str) -> bool:
    """Whether `server` answers the zone's SOA authoritatively."""
    query = dns.message.make_query(origin + ".", "SOA")
    reply = wire.exchange(query.to_wire(), server.addr, tcp=False, timeout=1.0, retries=0)
    return bool(reply.ok and reply.rcode == dns.rcode.NOERROR and reply.answer
                and reply.message.flags & 0x0400)


def wait_until(what: str, condition, *logs) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    fail(f"{what} within {WAIT:.0f}s", *logs)


class KnotConsumer(smod.Knot):
    def __init__(self, workdir, zone_dir, zones, tern_port: int):
        self.tern_port = tern_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        conf.write_text(self.base_config() + f"""
remote:
  - id: tern
    address: 127.0.0.1@{self.tern_port}
acl:
  - id: notify
    address: 127.0.0.1
    action: notify
template:
  - id: default
    storage: {self.workdir}
    zonefile-sync: -1
    journal-content: none
    semantic-checks: off
  - id: member
    storage: {self.workdir}
    zonefile-sync: -1
    journal-content: none
    semantic-checks: off
    master: tern
    acl: notify
zone:
  - domain: {CATALOG}
    master: tern
    acl: notify
    catalog-role: interpret
    catalog-template: member
""")
        return ["knotd", "-c", str(conf)]


class BindConsumer(harness.Bind):
    def __init__(self, workdir, zone_dir, zones, tern_port: int):
        self.tern_port = tern_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        options = (f"    notify no;\n    allow-new-zones yes;\n"
                   f"    catalog-zones {{ zone \"{CATALOG}\" default-primaries "
                   f"{{ 127.0.0.1 port {self.tern_port}; }}; }};")
        conf.write_text(self.options_section(options) + f"""zone "{CATALOG}" {{
    type secondary;
    primaries {{ 127.0.0.1 port {self.tern_port}; }};
    file "{self.workdir}/catalog.db";
}};
""")
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-catalog-") as tmp:
        tmp = pathlib.Path(tmp)
        zones = tmp / "zones"
        zones.mkdir()
        for origin in ("example.com", "example.net"):
            (zones / f"{origin}.zone").write_text(zone(origin))
        tern_port = smod.free_port()
        # Ready once a member zone is served: Knot does not answer for a catalog it
        # interprets.
        consumers = [KnotConsumer(tmp / "knot", zones, ["example.com"], tern_port),
                     BindConsumer(tmp / "bind", zones, ["example.com"], tern_port)]
        targets = ", ".join(f'"127.0.0.1:{c.port}"' for c in consumers)
        config = f"""listen: ["127.0.0.1:{tern_port}"]
control-socket: {tmp}/tern.sock
transfer: {{allow: ["127.0.0.0/8"]}}
notify: {{targets: [{targets}]}}
zones:
  directory: {zones}
  catalog-producer: {CATALOG}.
"""
        tern = harness.ConfiguredTern(harness.tern_binary(), tmp / "tern", zones,
                                      ["example.com", CATALOG], config_text=config)
        tern.port = tern_port
        tern.command = lambda: [str(tern.binary), "serve", "--config",
                                str(write(tern.workdir / "tern.yaml", tern.config_text))]
        with harness.serving({"tern": tern}):
            with harness.serving({c.name: c for c in consumers}):
                for consumer in consumers:
                    for origin in ("example.com", "example.net"):
                        wait_until(f"{consumer.name} serving {origin} from tern's catalog",
                                   lambda: serves(consumer, origin), consumer, tern)
                    print(f"transfer/catalog: {consumer.name} serves example.com and "
                          "example.net from tern's catalog")

                # A zone comes, another goes; SIGHUP; the catalog follows.
                (zones / "example.org.zone").write_text(zone("example.org"))
                (zones / "example.net.zone").unlink()
                os.killpg(tern.proc.pid, signal.SIGHUP)
                for consumer in consumers:
                    wait_until(f"{consumer.name} serving example.org",
                               lambda: serves(consumer, "example.org"), consumer, tern)
                    wait_until(f"{consumer.name} no longer serving example.net",
                               lambda: not serves(consumer, "example.net"), consumer, tern)
                    print(f"transfer/catalog: {consumer.name} added example.org and removed "
                          "example.net after tern's catalog changed")
    print("transfer/catalog: ok")


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.write_text(text)
    return path


if __name__ == "__main__":
    main()
