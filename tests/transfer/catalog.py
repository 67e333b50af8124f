#!/usr/bin/env python3
"""Catalog zones (RFC 9432, version 2) between tern, Knot and BIND 9 (issue 10).

tern serves `example.com.` and `example.net.` from files and produces `catalog.tern.`
(`zones.catalog-producer`), NOTIFYing Knot and BIND. Each consumer is configured with the
catalog alone (Knot: `catalog-role: interpret` and a template; BIND: `catalog-zones` with
tern as default primary): it must come to serve both member zones, transferred from tern.
Then tern gets a third zone file (`example.org.`) and loses one (`example.net.`), and a
SIGHUP: the catalog's serial grows, tern NOTIFYs, and each consumer must serve
`example.org.` and stop serving `example.net.`.

Then the other way: Knot generates `catalog.knot.` from two member zones and tern
consumes it (`zones.catalog`, Knot as primary): tern must serve both members; Knot's
configuration then swaps one member for another (`knotc reload`), Knot NOTIFYs, and tern
must serve the new member and stop serving the removed one.

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
{self.template(self.workdir)}  - id: member
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


class KnotProducer(smod.Knot):
    """Knot generating `catalog.knot.` from the member zones its configuration marks
    (Knot 3.2: `catalog-role: generate`; `catalog-role: member` and `catalog-zone` on
    each member), NOTIFYing tern."""

    members = ("a.example", "b.example")

    def __init__(self, workdir, zone_dir, zones, tern_port: int):
        self.tern_port = tern_port
        super().__init__(workdir, zone_dir, zones)

    def write_config(self) -> pathlib.Path:
        conf = self.workdir / "knot.conf"
        members = "".join(f"""  - domain: {member}
    file: {member}.zone
    catalog-role: member
    catalog-zone: catalog.knot.
    notify: tern
    acl: local
""" for member in self.members)
        conf.write_text(self.base_config() + f"""
remote:
  - id: tern
    address: 127.0.0.1@{self.tern_port}
acl:
  - id: local
    address: 127.0.0.0/8
    action: transfer
{self.template(self.zone_dir, "changes")}zone:
  - domain: catalog.knot.
    catalog-role: generate
    notify: tern
    acl: local
{members}""")
        return conf

    def command(self) -> list[str]:
        return ["knotd", "-c", str(self.write_config())]

    def reload(self, members) -> None:
        import subprocess

        self.members = members
        self.write_config()
        done = subprocess.run(["knotc", "-s", str(self.workdir / "knot.sock"), "reload"],
                              capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            fail(f"knotc reload: {done.stdout}{done.stderr}", self)


def consume_knots_catalog(tmp: pathlib.Path) -> None:
    """tern consumes Knot's catalog: its members become tern's secondary zones, and
    follow the catalog when a member is added and another removed."""
    zones = tmp / "knot-zones"
    zones.mkdir()
    for origin in ("a.example", "b.example", "c.example"):
        (zones / f"{origin}.zone").write_text(zone(origin))
    tern_port = smod.free_port()
    knot = KnotProducer(tmp / "knot-producer", zones, ["a.example"], tern_port)
    config = f"""listen: ["127.0.0.1:{tern_port}"]
control-socket: {tmp}/tern-consumer.sock
zones:
  catalog:
    - {{origin: catalog.knot., primaries: ["127.0.0.1:{knot.port}"]}}
"""
    tern = harness.ConfiguredTern(harness.tern_binary(), tmp / "tern-consumer", zones,
                                  ["a.example"], config_text=config)
    tern.port = tern_port
    tern.command = lambda: [str(tern.binary), "serve", "--config",
                            str(write(tern.workdir / "tern.yaml", tern.config_text))]
    with harness.serving({"knot": knot}):
        with harness.serving({"tern": tern}):
            wait_until("tern serving b.example from Knot's catalog",
                       lambda: serves(tern, "b.example"), tern, knot)
            print("transfer/catalog: tern serves a.example and b.example from Knot's catalog")
            knot.reload(("a.example", "c.example"))
            wait_until("tern serving c.example", lambda: serves(tern, "c.example"), tern, knot)
            wait_until("tern no longer serving b.example",
                       lambda: not serves(tern, "b.example"), tern, knot)
            if not serves(tern, "a.example"):
                fail("tern dropped a.example", tern, knot)
            print("transfer/catalog: tern added c.example and removed b.example after "
                  "Knot's catalog changed")


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
        consume_knots_catalog(tmp)
    print("transfer/catalog: ok")


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.write_text(text)
    return path


if __name__ == "__main__":
    main()
