#!/usr/bin/env python3
"""Dynamic updates (RFC 2136, issue 25) to tern, on two cores, with TSIG:

    nsupdate (hmac-sha256) / knsupdate (hmac-md5) / dnspython ──UPDATE──► tern (primary)
                                                                   └── NOTIFY, IXFR ──► knotd (secondary)

1. `nsupdate` with an HMAC-SHA256 key and `knsupdate` with an HMAC-MD5 key add and
   delete TXT records; after each NOERROR the next query, from many source ports (so
   on both cores), answers the new data.
2. A key outside its rule (a name its rule does not list) is REFUSED; an UPDATE of a
   zone tern does not serve is NOTAUTH; an unsigned one (no rule without a key) is
   REFUSED; one signed with a wrong secret is NOTAUTH.
3. Knot, a secondary of the zone, receives the updates by IXFR (after tern's NOTIFY)
   and answers the new record.
4. `kill -9` during a stream of updates from several clients (dnspython threads over
   TCP): after a restart, every update answered NOERROR is served; a normal stop then
   writes the zone file (zone-file-sync) and empties the journal, and a start from that
   file serves the same.

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/release/tern python3 tests/update/update.py

Exits 1 on any failure, with the reason and the servers' logs.
"""

from __future__ import annotations

import base64
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
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
import wire  # noqa: E402  (tests/differential/wire.py)

ZONE = "example.com"
SHA_SECRET = base64.b64encode(bytes(range(1, 33))).decode()
MD5_SECRET = base64.b64encode(bytes(range(40, 56))).decode()
STREAM_SECRET = base64.b64encode(bytes(range(60, 92))).decode()
# How long a server may take to start, a secondary to follow.
WAIT = 30.0
COMMAND_TIMEOUT = 30
# The stream before kill -9: clients, updates each, and how many answered first.
CLIENTS = 4
PER_CLIENT = 200
KILL_AFTER = 60
# Fresh UDP sockets asked after each update: SO_REUSEPORT spreads them over the cores.
PROBES = 16

ZONE_TEXT = f"""$ORIGIN {ZONE}.
$TTL 300
@ SOA ns1 hostmaster 1 7200 3600 1209600 300
  NS ns1
ns1 A 192.0.2.1
www A 192.0.2.80
"""

def ring(name: str, secret: str, algorithm) -> dict:
    return {dns.name.from_text(name): dns.tsig.Key(name, secret, algorithm)}


KEYRINGS = {
    "sha": ring("sha-key.", SHA_SECRET, dns.tsig.HMAC_SHA256),
    "md5": ring("md5-key.", MD5_SECRET, dns.tsig.HMAC_MD5),
    "stream": ring("stream-key.", STREAM_SECRET, dns.tsig.HMAC_SHA256),
    "wrong": ring("sha-key.", MD5_SECRET, dns.tsig.HMAC_SHA256),
}


def fail(message: str, *servers: smod.Server) -> None:
    print(f"update/update: FAIL: {message}")
    for server in servers:
        print(f"--- {server.name} log:\n{server.log_tail(60)}")
    sys.exit(1)


class Tern(harness.ConfiguredTern):
    """tern from its configuration file alone (zones.list, not --zones), on two cores."""

    def command(self) -> list[str]:
        conf = self.workdir / "tern.yaml"
        conf.write_text(self.config_text)
        return [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}",
                "--config", str(conf), "--cores", "0,1"]


class KnotSecondary(smod.Knot):
    name = "knot"

    def __init__(self, workdir, zone_dir, zones, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        conf.write_text(self.base_config() + f"""remote:
  - id: tern
    address: 127.0.0.1@{self.primary_port}
acl:
  - id: notify
    address: 127.0.0.1
    action: notify
{self.template(self.workdir, "changes")}zone:
  - domain: {ZONE}
    master: tern
    acl: [notify]
""")
        return ["knotd", "-c", str(conf)]


def tern_config(zone_file: pathlib.Path, state: pathlib.Path, knot_port: int) -> str:
    return f"""keys:
  - {{name: sha-key, algorithm: hmac-sha256, secret: "{SHA_SECRET}"}}
  - {{name: md5-key, algorithm: hmac-md5, secret: "{MD5_SECRET}"}}
  - {{name: stream-key, algorithm: hmac-sha256, secret: "{STREAM_SECRET}"}}
zones:
  list:
    - origin: {ZONE}.
      file: {zone_file}
      update:
        - {{key: sha-key, types: [TXT]}}
        - {{key: md5-key, types: [TXT], names: ["_acme-challenge.{ZONE}."]}}
        - {{key: stream-key, addresses: ["127.0.0.0/8"]}}
transfer:
  allow: ["127.0.0.0/8"]
notify:
  targets: ["127.0.0.1:{knot_port}"]
state-directory: {state}
control-socket: {state}/control.sock
zone-file-sync: 0
"""


def txt(addr, owner: str) -> set[str] | None:
    """The TXT strings at `owner` as one fresh UDP socket gets them (None: no answer)."""
    query = dns.message.make_query(f"{owner}.{ZONE}.", dns.rdatatype.TXT)
    reply = wire.exchange(query.to_wire(), addr, tcp=False, timeout=2.0, retries=1)
    if not reply.ok:
        return None
    return {rdata.to_text().strip('"') for rrset in reply.message.answer for rdata in rrset
            if rdata.rdtype == dns.rdatatype.TXT}


def expect_everywhere(tern, owner: str, expected: set[str], context: str) -> None:
    """Every one of PROBES fresh sockets (so every core) answers exactly `expected`."""
    for _ in range(PROBES):
        got = txt(tern.addr, owner)
        if got != expected:
            fail(f"{context}: {owner} answered {got}, not {expected}", tern)


def run_tool(tool: str, addr, key: str, commands: str) -> tuple[int, str]:
    script = f"server {addr[0]} {addr[1]}\nzone {ZONE}.\n{commands}\nsend\n"
    done = subprocess.run([tool, "-y", key], input=script, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT)
    return done.returncode, done.stdout + done.stderr


def update_rcode(addr, keyring, keyname: str | None, zone: str, owner: str, text: str) -> int:
    update = dns.update.Update(zone + ".", keyring=keyring, keyname=keyname)
    update.add(owner, 60, "TXT", f'"{text}"')
    try:
        reply = dns.query.tcp(update, addr[0], port=addr[1], timeout=5)
    except dns.tsig.PeerError as err:  # the answer's TSIG error, as dnspython raises it
        return {"PeerBadKey": 9, "PeerBadSignature": 9}.get(type(err).__name__, -1)
    return reply.rcode()


def tools(tern) -> None:
    """Step 1: nsupdate and knsupdate add and delete; every core serves the change."""
    sha = f"hmac-sha256:sha-key:{SHA_SECRET}"
    md5 = f"hmac-md5:md5-key:{MD5_SECRET}"
    code, out = run_tool("nsupdate", tern.addr, sha, f'update add t1.{ZONE}. 60 TXT "one"')
    if code != 0:
        fail(f"nsupdate (hmac-sha256) add: {out}", tern)
    expect_everywhere(tern, "t1", {"one"}, "after nsupdate's add")
    code, out = run_tool("knsupdate", tern.addr, md5,
                         f'update add _acme-challenge.{ZONE}. 60 TXT "token"')
    if code != 0:
        fail(f"knsupdate (hmac-md5) add: {out}", tern)
    expect_everywhere(tern, "_acme-challenge", {"token"}, "after knsupdate's add")
    code, out = run_tool("nsupdate", tern.addr, md5,
                         f"update delete _acme-challenge.{ZONE}. TXT")
    if code != 0:
        fail(f"nsupdate (hmac-md5) delete: {out}", tern)
    expect_everywhere(tern, "_acme-challenge", set(), "after nsupdate's delete")
    code, out = run_tool("knsupdate", tern.addr, sha, f'update add t2.{ZONE}. 60 TXT "two"')
    if code != 0:
        fail(f"knsupdate (hmac-sha256) add: {out}", tern)
    expect_everywhere(tern, "t2", {"two"}, "after knsupdate's add")
    print("update/update: nsupdate and knsupdate (hmac-sha256, hmac-md5) add and delete; "
          f"{PROBES} sockets each see the change")


def refusals(tern) -> None:
    """Step 2: the answers the rules and TSIG give."""
    cases = [
        ("md5-key outside its names", KEYRINGS["md5"], "md5-key.", ZONE, "www", dns.rcode.REFUSED),
        ("unsigned", None, None, ZONE, "u", dns.rcode.REFUSED),
        ("a zone not ours", KEYRINGS["sha"], "sha-key.", "example.org", "x", dns.rcode.NOTAUTH),
        ("a wrong secret", KEYRINGS["wrong"], "sha-key.", ZONE, "w", dns.rcode.NOTAUTH),
    ]
    for what, keyring, name, zone, owner, expected in cases:
        got = update_rcode(tern.addr, keyring, name, zone, owner, "no")
        if got != expected:
            fail(f"{what}: rcode {got}, expected {dns.rcode.to_text(expected)}", tern)
    if txt(tern.addr, "www") != set() or txt(tern.addr, "u") != set():
        fail("a refused update changed the zone", tern)
    print("update/update: REFUSED outside the rules and unsigned, NOTAUTH for another zone "
          "and a wrong secret")


def soa_serial(addr) -> int | None:
    query = dns.message.make_query(ZONE + ".", dns.rdatatype.SOA)
    reply = wire.exchange(query.to_wire(), addr, tcp=False, timeout=1.0, retries=0)
    if not reply.ok or reply.rcode != 0:
        return None
    return next((rdata.serial for rrset in reply.message.answer for rdata in rrset
                 if rdata.rdtype == dns.rdatatype.SOA), None)


def secondary(tern, knot) -> None:
    """Step 3: Knot follows by IXFR."""
    serial = soa_serial(tern.addr)
    deadline = time.monotonic() + WAIT
    while soa_serial(knot.addr) != serial:
        if time.monotonic() > deadline:
            fail(f"knot did not reach serial {serial}", tern, knot)
        time.sleep(0.1)
    if txt(knot.addr, "t2") != {"two"}:
        fail("knot does not answer the updated record", tern, knot)
    if not re.search(r"IXFR, incoming, remote 127\.0\.0\.1@\d+, finished", knot.log_tail(100000)):
        fail("knot did not log an incoming IXFR", tern, knot)
    print(f"update/update: knot followed to serial {serial} by IXFR")


def stream_and_kill(tern) -> set[str]:
    """Step 4: CLIENTS threads send updates over TCP; tern is killed with SIGKILL once
    KILL_AFTER were answered. Returns the owners whose update was answered NOERROR."""
    answered: set[str] = set()
    lock = threading.Lock()
    enough = threading.Event()

    def client(number: int) -> None:
        for i in range(PER_CLIENT):
            owner = f"s{number}-{i}"
            update = dns.update.Update(ZONE + ".", keyring=KEYRINGS["stream"],
                                       keyname="stream-key.")
            update.add(owner, 60, "TXT", f'"{owner}"')
            try:
                reply = dns.query.tcp(update, tern.addr[0], port=tern.addr[1], timeout=5)
            except Exception:  # noqa: BLE001  (the server was killed: the stream ends)
                return
            if reply.rcode() == dns.rcode.NOERROR:
                with lock:
                    answered.add(owner)
                    if len(answered) >= KILL_AFTER:
                        enough.set()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    if not enough.wait(WAIT):
        fail(f"fewer than {KILL_AFTER} updates answered", tern)
    os.killpg(tern.proc.pid, signal.SIGKILL)
    for thread in threads:
        thread.join(WAIT)
    tern.proc.wait(5)
    with lock:
        return set(answered)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-update-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        zone_file = zone_dir / f"{ZONE}.zone"
        zone_file.write_text(ZONE_TEXT)
        tern_port = smod.free_port()
        knot = KnotSecondary(tmp / "knot", zone_dir, [ZONE], tern_port)
        config = tern_config(zone_file, tmp / "state", knot.port)

        def start_tern(name: str):
            server = Tern(harness.tern_binary(), tmp / name, zone_dir, [ZONE],
                          config_text=config)
            server.port = tern_port
            server.workdir.mkdir(parents=True, exist_ok=True)
            server.start()
            try:
                server.wait_ready(WAIT)
            except smod.ServerError as err:
                fail(str(err), server)
            return server

        tern = start_tern("tern")
        knot.workdir.mkdir(parents=True, exist_ok=True)
        knot.start()
        try:
            knot.wait_ready(WAIT)
            tools(tern)
            refusals(tern)
            secondary(tern, knot)
        finally:
            knot.stop()

        answered = stream_and_kill(tern)
        journal = pathlib.Path(str(zone_file) + ".tern-journal")
        if zone_file.read_text() != ZONE_TEXT:
            fail("the zone file changed before any zone-file-sync", tern)
        tern.stop()
        tern = start_tern("tern-restarted")
        try:
            missing = sorted(owner for owner in answered if txt(tern.addr, owner) != {owner})
            if missing:
                fail(f"{len(missing)} of {len(answered)} updates answered NOERROR are not "
                     f"served after kill -9: {missing[:5]}", tern)
            if txt(tern.addr, "t2") != {"two"}:
                fail("the tools' update is not served after kill -9", tern)
            print(f"update/update: kill -9 after {len(answered)} NOERROR answers from "
                  f"{CLIENTS} clients: all served after the restart")
            serial = soa_serial(tern.addr)
        finally:
            tern.stop()
        text = zone_file.read_text()
        if "zone-file-sync" not in text or journal.stat().st_size != 0:
            fail("a stop did not write the zone file and empty the journal", tern)
        tern = start_tern("tern-from-file")
        try:
            if soa_serial(tern.addr) != serial or any(
                    txt(tern.addr, owner) != {owner} for owner in sorted(answered)[:20]):
                fail("the written zone file does not serve what was served", tern)
        finally:
            tern.stop()
        print(f"update/update: the stop wrote serial {serial} to the zone file; a start "
              "from it serves the same")
    print("update/update: PASS")


if __name__ == "__main__":
    main()
