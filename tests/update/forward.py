#!/usr/bin/env python3
"""UPDATEs to tern's secondary zones (issue 25, `zones.secondary[].update`):

    nsupdate ──UPDATE──► tern (secondary of example.org., update: forward)
                           └── forwarded (TCP, TSIG unchanged) ──► knotd (primary)
                           ◄── NOTIFY, IXFR ───────────────────────┘

1. `nsupdate` with TSIG adds a TXT record through tern: NOERROR (Knot's answer,
   relayed with Knot's TSIG, which nsupdate checks), the record is on Knot, and comes
   back to tern by NOTIFY and IXFR.
2. A secondary zone with `update: notauth` answers NOTAUTH; one without `update`
   REFUSED (the default).
3. With Knot stopped, a forwarded update is answered SERVFAIL.

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/release/tern python3 tests/update/forward.py

Exits 1 on any failure, with the reason and the servers' logs.
"""

from __future__ import annotations

import base64
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compliance"))
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.tsig  # noqa: E402
import dns.update  # noqa: E402

import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)

NAME = "update/forward"
ZONE = "example.org"
NOTAUTH_ZONE = "notauth.example"
REFUSED_ZONE = "refused.example"
SECRET = base64.b64encode(bytes(range(1, 33))).decode()
KEYRING = {dns.name.from_text("fwd-key."): dns.tsig.Key("fwd-key.", SECRET,
                                                        dns.tsig.HMAC_SHA256)}
WAIT = 30.0
SERVERS: list[smod.Server] = []


def zone_text(zone: str) -> str:
    return f"""$ORIGIN {zone}.
$TTL 300
@ SOA ns1 hostmaster 1 7200 3600 1209600 300
  NS ns1
ns1 A 192.0.2.1
"""


def fail(message: str) -> None:
    print(f"{NAME}: FAIL: {message}")
    for server in SERVERS:
        try:
            print(f"--- {server.name} log:\n{server.log_tail(60)}")
        except Exception:  # noqa: BLE001
            pass
    sys.exit(1)


class Tern(harness.ConfiguredTern):
    def command(self) -> list[str]:
        conf = self.workdir / "tern.yaml"
        conf.write_text(self.config_text)
        return [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}",
                "--config", str(conf), "--cores", "0,1"]


class KnotPrimary(smod.Knot):
    name = "knot"

    def __init__(self, workdir, zone_dir, zones, tern_port: int):
        self.tern_port = tern_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        zones = "".join(f"""  - domain: {zone}
    file: {zone}.zone
    notify: tern
    acl: [transfer, update]
""" for zone in self.zones)
        conf.write_text(self.base_config() + f"""key:
  - id: fwd-key
    algorithm: hmac-sha256
    secret: {SECRET}
remote:
  - id: tern
    address: 127.0.0.1@{self.tern_port}
acl:
  - id: transfer
    address: 127.0.0.1
    action: transfer
  - id: update
    key: fwd-key
    action: update
{self.template(self.zone_dir, "changes")}zone:
{zones}""")
        return ["knotd", "-c", str(conf)]


def tern_config(knot_port: int, state: pathlib.Path) -> str:
    return f"""keys:
  - {{name: fwd-key, algorithm: hmac-sha256, secret: "{SECRET}"}}
zones:
  secondary:
    - {{origin: {ZONE}., primaries: ["127.0.0.1:{knot_port}"], update: forward}}
    - {{origin: {NOTAUTH_ZONE}., primaries: ["127.0.0.1:{knot_port}"], update: notauth}}
    - {{origin: {REFUSED_ZONE}., primaries: ["127.0.0.1:{knot_port}"]}}
transfer:
  allow: ["127.0.0.0/8"]
state-directory: {state}
control-socket: {state}/control.sock
"""


def txt(addr, qname: str) -> set[str]:
    query = dns.message.make_query(qname, dns.rdatatype.TXT)
    try:
        reply = dns.query.udp(query, addr[0], port=addr[1], timeout=2)
    except Exception:  # noqa: BLE001  (not answering yet)
        return set()
    return {rdata.to_text().strip('"') for rrset in reply.answer for rdata in rrset
            if rdata.rdtype == dns.rdatatype.TXT}


def wait_for(what: str, condition) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            fail(f"{what} within {WAIT:.0f}s")
        time.sleep(0.1)


def update_rcode(tern, zone: str, owner: str) -> int:
    update = dns.update.Update(f"{zone}.", keyring=KEYRING, keyname="fwd-key.")
    update.add(f"{owner}.{zone}.", 60, "TXT", '"x"')
    return dns.query.tcp(update, "127.0.0.1", port=tern.port, timeout=20).rcode()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-update-forward-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        zones = [ZONE, NOTAUTH_ZONE, REFUSED_ZONE]
        for zone in zones:
            (zone_dir / f"{zone}.zone").write_text(zone_text(zone))
        tern_port = smod.free_port()
        knot = KnotPrimary(tmp / "knot", zone_dir, zones, tern_port)
        knot.workdir.mkdir(parents=True, exist_ok=True)
        SERVERS.append(knot)
        knot.start()
        try:
            knot.wait_ready(WAIT)
        except smod.ServerError as err:
            fail(str(err))
        tern = Tern(harness.tern_binary(), tmp / "tern", zone_dir, [ZONE],
                    config_text=tern_config(knot.port, tmp / "state"))
        tern.port = tern_port
        tern.workdir.mkdir(parents=True, exist_ok=True)
        SERVERS.append(tern)
        try:
            tern.start()
            try:
                tern.wait_ready(WAIT)
            except smod.ServerError as err:
                fail(str(err))
            wait_for(f"tern serving {ZONE}",
                     lambda: dns.query.udp(dns.message.make_query(f"{ZONE}.", "SOA"),
                                           "127.0.0.1", port=tern_port,
                                           timeout=2).rcode() == dns.rcode.NOERROR)
            script = (f"server 127.0.0.1 {tern_port}\nzone {ZONE}.\n"
                      f'update add fwd.{ZONE}. 60 TXT "forwarded"\nsend\n')
            done = subprocess.run(["nsupdate", "-y", f"hmac-sha256:fwd-key:{SECRET}"],
                                  input=script, capture_output=True, text=True, timeout=30)
            if done.returncode != 0:
                fail(f"nsupdate through tern: {done.stdout} {done.stderr}")
            if txt(knot.addr, f"fwd.{ZONE}.") != {"forwarded"}:
                fail("the forwarded update is not on Knot")
            wait_for("tern serving the forwarded update",
                     lambda: txt(tern.addr, f"fwd.{ZONE}.") == {"forwarded"})
            if not re.search(r"forwarded to 127\.0\.0\.1", tern.log_tail(100000)):
                fail("tern did not log the forward")
            print(f"{NAME}: nsupdate through tern: forwarded to Knot (NOERROR, Knot's TSIG "
                  "checked by nsupdate), served back by tern after NOTIFY")
            for zone in (NOTAUTH_ZONE, REFUSED_ZONE):
                wait_for(f"tern serving {zone}", lambda zone=zone: dns.query.udp(
                    dns.message.make_query(f"{zone}.", "SOA"), "127.0.0.1", port=tern_port,
                    timeout=2).rcode() == dns.rcode.NOERROR)
            for zone, expected in ((NOTAUTH_ZONE, dns.rcode.NOTAUTH),
                                   (REFUSED_ZONE, dns.rcode.REFUSED)):
                rcode = update_rcode(tern, zone, "no")
                if rcode != expected:
                    fail(f"{zone}: {dns.rcode.to_text(rcode)}, expected "
                         f"{dns.rcode.to_text(expected)}")
            print(f"{NAME}: notauth: NOTAUTH; no update key: REFUSED")
            knot.stop()
            rcode = update_rcode(tern, ZONE, "down")
            if rcode != dns.rcode.SERVFAIL:
                fail(f"with the primary down: {dns.rcode.to_text(rcode)}, expected SERVFAIL")
            print(f"{NAME}: with the primary down: SERVFAIL")
        finally:
            tern.stop()
            knot.stop()
    print(f"{NAME}: PASS")


if __name__ == "__main__":
    main()
