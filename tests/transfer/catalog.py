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
must serve the new member and stop serving the removed one. Knot answers no query over
UDP for a catalog it generates (REFUSED, unsigned, checked here with a query like tern's),
so tern's SOA query before each refresh of the catalog gets nothing usable: tern must go
on to IXFR (issue 22), and its log must say so.

Both checks run twice: without TSIG, then with the key `transfer-key` (hmac-sha256) on
every transfer and NOTIFY of both (tern's `transfer.key` and `notify.key`, the consumers'
primaries; Knot's ACL and remote, tern's `zones.catalog` key). With the key, Knot's REFUSED
is unsigned too: tern must neither trust it nor stop at it.

Usage (from the repository root; loopback only):

    TERN_BIN=target/release/tern python3 tests/transfer/catalog.py

Exits 1 on any failure, with the logs.
"""

from __future__ import annotations

import base64
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
import dns.tsig  # noqa: E402

import common  # noqa: E402  (tests/transfer/common.py)
import harness  # noqa: E402
import servers as smod  # noqa: E402
import wire  # noqa: E402

CATALOG = "catalog.tern"
WAIT = 60.0
KEY_NAME = common.KEY_NAME
SECRET = base64.b64encode(bytes(range(100, 132))).decode()


def fail(message: str, *servers) -> None:
    common.fail("catalog", message, *servers)


def zone(origin: str, serial: int = 1) -> str:
    return (f"$ORIGIN {origin}.\n$TTL 300\n@ SOA ns hostmaster {serial} 3600 3600 604800 300\n"
            f"  NS ns\nns A 192.0.2.1\nwww A 192.0.2.80\n")


def knot_key(secret: str | None) -> str:
    """Knot's `key` section for the secret, if any."""
    if not secret:
        return ""
    return f"""key:
  - id: {KEY_NAME}
    algorithm: hmac-sha256
    secret: {secret}
"""


def knot_key_line(secret: str | None) -> str:
    """The `key:` line of a Knot remote or ACL, if a secret is given."""
    return f"    key: {KEY_NAME}\n" if secret else ""


def bind_key(secret: str | None) -> tuple[str, str]:
    """BIND's key statement and the ` key "..."` of a primary, if a secret is given."""
    if not secret:
        return "", ""
    return (f'key "{KEY_NAME}" {{ algorithm hmac-sha256; secret "{secret}"; }};\n',
            f' key "{KEY_NAME}"')


def tern_keys(secret: str | None) -> str:
    """tern's `keys` list, if a secret is given."""
    if not secret:
        return ""
    return (f"keys:\n  - {{name: {KEY_NAME}, algorithm: hmac-sha256, "
            f'secret: "{secret}"}}\n')


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
    def __init__(self, workdir, zone_dir, zones, tern_port: int, secret: str | None):
        self.tern_port = tern_port
        self.secret = secret
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        key = knot_key_line(self.secret)
        conf.write_text(self.base_config() + knot_key(self.secret) + f"""
remote:
  - id: tern
    address: 127.0.0.1@{self.tern_port}
{key}acl:
  - id: notify
    address: 127.0.0.1
{key}    action: notify
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
    def __init__(self, workdir, zone_dir, zones, tern_port: int, secret: str | None):
        self.tern_port = tern_port
        self.secret = secret
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        statement, key = bind_key(self.secret)
        options = (f"    notify no;\n    allow-new-zones yes;\n"
                   f"    catalog-zones {{ zone \"{CATALOG}\" default-primaries "
                   f"{{ 127.0.0.1 port {self.tern_port}{key}; }}; }};")
        conf.write_text(statement + self.options_section(options) + f"""zone "{CATALOG}" {{
    type secondary;
    primaries {{ 127.0.0.1 port {self.tern_port}{key}; }};
    file "{self.workdir}/catalog.db";
}};
""")
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


class KnotProducer(smod.Knot):
    """Knot generating `catalog.knot.` from the member zones its configuration marks
    (Knot 3.2: `catalog-role: generate`; `catalog-role: member` and `catalog-zone` on
    each member), NOTIFYing tern."""

    members = ("a.example", "b.example")

    def __init__(self, workdir, zone_dir, zones, tern_port: int, secret: str | None):
        self.tern_port = tern_port
        self.secret = secret
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
        key = knot_key_line(self.secret)
        conf.write_text(self.base_config() + knot_key(self.secret) + f"""
remote:
  - id: tern
    address: 127.0.0.1@{self.tern_port}
{key}acl:
  - id: local
    address: 127.0.0.0/8
{key}    action: transfer
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


def soa_query_answer(addr, origin: str, secret: str | None) -> tuple[int, bool]:
    """The rcode of `addr`'s answer to a SOA query for `origin` over UDP, signed with the
    key if a secret is given (as tern asks before a refresh), and whether the answer
    carries a TSIG record."""
    query = dns.message.make_query(origin + ".", "SOA")
    query.flags = 0
    if secret:
        query.use_tsig(common.keyring(secret), keyname=KEY_NAME,
                       algorithm=dns.tsig.HMAC_SHA256)
    wire_query = query.to_wire()
    reply = harness.udp_exchange(addr, wire_query)
    if reply is None or len(reply) < 12 or reply[:2] != wire_query[:2]:
        fail(f"no answer from {addr} to a SOA query for {origin}")
    # keyring=False: parse a TSIG record without checking it.
    signed = dns.message.from_wire(reply, keyring=False).had_tsig
    return reply[3] & 0x0F, signed


def consume_knots_catalog(tmp: pathlib.Path, secret: str | None, label: str) -> None:
    """tern consumes Knot's catalog: its members become tern's secondary zones, and
    follow the catalog when a member is added and another removed, though Knot refuses
    tern's SOA queries for the catalog."""
    zones = tmp / "knot-zones"
    zones.mkdir()
    for origin in ("a.example", "b.example", "c.example"):
        (zones / f"{origin}.zone").write_text(zone(origin))
    tern_port = smod.free_port()
    knot = KnotProducer(tmp / "knot-producer", zones, ["a.example"], tern_port, secret)
    key = f", key: {KEY_NAME}" if secret else ""
    config = f"""listen: ["127.0.0.1:{tern_port}"]
control-socket: {tmp}/tern-consumer.sock
{tern_keys(secret)}zones:
  catalog:
    - {{origin: catalog.knot., primaries: ["127.0.0.1:{knot.port}"]{key}}}
"""
    tern = harness.ConfiguredTern(harness.tern_binary(), tmp / "tern-consumer", zones,
                                  ["a.example"], config_text=config)
    tern.port = tern_port
    tern.command = lambda: [str(tern.binary), "serve", "--config",
                            str(write(tern.workdir / "tern.yaml", tern.config_text))]
    with harness.serving({"knot": knot}):
        # The condition of issue 22: Knot answers tern's SOA query for the catalog
        # REFUSED, and unsigned though the query is signed.
        rcode, signed = soa_query_answer(knot.addr, "catalog.knot", secret)
        if rcode != dns.rcode.REFUSED or signed:
            fail(f"Knot answered a SOA query for catalog.knot. rcode {rcode}"
                 f"{', signed' if signed else ''}: not the REFUSED this check is about", knot)
        print(f"transfer/catalog ({label}): Knot answers a SOA query for its catalog "
              "REFUSED, unsigned")
        with harness.serving({"tern": tern}):
            wait_until("tern serving b.example from Knot's catalog",
                       lambda: serves(tern, "b.example"), tern, knot)
            print(f"transfer/catalog ({label}): tern serves a.example and b.example from "
                  "Knot's catalog")
            knot.reload(("a.example", "c.example"))
            wait_until("tern serving c.example", lambda: serves(tern, "c.example"), tern, knot)
            wait_until("tern no longer serving b.example",
                       lambda: not serves(tern, "b.example"), tern, knot)
            if not serves(tern, "a.example"):
                fail("tern dropped a.example", tern, knot)
            went_on = (f"catalog.knot.: no usable answer to the SOA query from "
                       f"127.0.0.1:{knot.port}")
            if went_on not in tern.log_path.read_text(errors="replace"):
                fail(f"tern's log does not say '{went_on}'", tern, knot)
            print(f"transfer/catalog ({label}): tern added c.example and removed b.example "
                  "after Knot's catalog changed, by IXFR past the refused SOA query")


def produce_catalog(tmp: pathlib.Path, secret: str | None, label: str) -> None:
    """Knot and BIND consume tern's catalog and follow a member added and one removed."""
    zones = tmp / "zones"
    zones.mkdir(parents=True)
    for origin in ("example.com", "example.net"):
        (zones / f"{origin}.zone").write_text(zone(origin))
    tern_port = smod.free_port()
    # Ready once a member zone is served: Knot does not answer for a catalog it
    # interprets.
    consumers = [KnotConsumer(tmp / "knot", zones, ["example.com"], tern_port, secret),
                 BindConsumer(tmp / "bind", zones, ["example.com"], tern_port, secret)]
    targets = ", ".join(f'"127.0.0.1:{c.port}"' for c in consumers)
    key = f", key: {KEY_NAME}" if secret else ""
    config = f"""listen: ["127.0.0.1:{tern_port}"]
control-socket: {tmp}/tern.sock
{tern_keys(secret)}transfer: {{allow: ["127.0.0.0/8"]{key}}}
notify: {{targets: [{targets}]{key}}}
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
                print(f"transfer/catalog ({label}): {consumer.name} serves example.com and "
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
                print(f"transfer/catalog ({label}): {consumer.name} added example.org and "
                      "removed example.net after tern's catalog changed")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-catalog-") as tmp:
        tmp = pathlib.Path(tmp)
        for secret, label in ((None, "no TSIG"), (SECRET, "TSIG")):
            run = tmp / ("tsig" if secret else "plain")
            produce_catalog(run, secret, label)
            consume_knots_catalog(run, secret, label)
    print("transfer/catalog: ok")


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.write_text(text)
    return path


if __name__ == "__main__":
    main()
