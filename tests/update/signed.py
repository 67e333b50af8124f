#!/usr/bin/env python3
"""Dynamic updates (issue 25) to zones tern signs (issue 24), with TSIG:

    nsupdate ──UPDATE──► tern (signs example.com. with NSEC, example.net. with NSEC3)
                          ├── NOTIFY, IXFR ──► named (secondary)
                          └── stub ◄── unbound (validating; the zones' DNSKEYs its trust anchors)

For each zone:
1. `nsupdate` adds a TXT record: the AXFR passes `dnssec-verify` and `ldns-verify-zone`,
   and Unbound answers it secure (AD).
2. `nsupdate` deletes the name: the AXFR verifies, and Unbound answers NXDOMAIN secure
   for it (a type it never asked there before, so no cached answer stands in).
3. Updates naming the signer's records are REFUSED (as Knot: RRSIG, NSEC, NSEC3, CDS,
   CDNSKEY anywhere; DNSKEY and NSEC3PARAM at the apex) and change nothing. A
   prerequisite "DNSKEY exists" at the apex holds (NOERROR) and "DNSKEY does not exist"
   is YXRRSET: prerequisites see the signer's keys, as Knot's do.
4. In the NSEC3 zone, names added and deleted below new and old empty non-terminals
   and the apex changed: each signed as a window, the AXFR verifies, and its NSEC3
   chain is the one the whole zone's signing makes.
5. DNAMEs made, changed and removed, delegations made and removed above names the
   update does not touch: each AXFR verifies, each signed as a window (the names below
   the cut found in the served version's list of them; its debug log says).
6. BIND, a secondary of both zones, follows by IXFR; its copy verifies.
7. With a key file damaged, an update is answered SERVFAIL and changes nothing (the
   serial, the name, the journal); with the file back, the next update is NOERROR.
8. `kill -9` after an update answered NOERROR: the restart serves it, signed (the
   journal's unsigned changes signed again at start), and the AXFR verifies.

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/release/tern python3 tests/update/signed.py

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
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compliance"))
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.tsig  # noqa: E402
import dns.update  # noqa: E402

import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)

NAME = "update/signed"
# Zone and its denial of existence.
ZONES = {"example.com": "nsec", "example.net": "nsec3"}
SECRET = base64.b64encode(bytes(range(1, 33))).decode()
KEY = f"hmac-sha256:sha-key:{SECRET}"
KEYRING = {dns.name.from_text("sha-key."): dns.tsig.Key("sha-key.", SECRET,
                                                        dns.tsig.HMAC_SHA256)}
WAIT = 30.0
COMMAND_TIMEOUT = 30


def zone_text(zone: str) -> str:
    return f"""$ORIGIN {zone}.
$TTL 300
@ SOA ns1 hostmaster 1 7200 3600 1209600 300
  NS ns1
ns1 A 192.0.2.1
www A 192.0.2.80
"""


class Failed(Exception):
    pass


SERVERS: list[smod.Server] = []


def fail(message: str) -> None:
    print(f"{NAME}: FAIL: {message}")
    for server in SERVERS:
        try:
            print(f"--- {server.name} log:\n{server.log_tail(60)}")
        except Exception:  # noqa: BLE001  (a server that never started has no log)
            pass
    sys.exit(1)


def run(command: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, input=stdin, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT)


class Tern(harness.ConfiguredTern):
    def command(self) -> list[str]:
        conf = self.workdir / "tern.yaml"
        conf.write_text(self.config_text)
        return [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}",
                "--config", str(conf), "--cores", "0,1"]


class BindSecondary(harness.Bind):
    name = "named"

    def __init__(self, workdir: pathlib.Path, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, workdir, list(ZONES))

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        options = ("    notify no;\n    allow-notify { 127.0.0.0/8; };\n"
                   "    allow-transfer { 127.0.0.0/8; };")
        zones = "".join(f"""zone "{zone}" {{
    type secondary;
    primaries {{ 127.0.0.1 port {self.primary_port}; }};
    file "{self.workdir}/{zone}.db";
}};
""" for zone in ZONES)
        conf.write_text(self.options_section(options) + zones)
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


class Unbound(smod.Server):
    """A validating Unbound that reaches the zones by stub-zone at tern, each zone's
    DNSKEY RRset its trust anchor (a private anchor: no root involved)."""

    name = "unbound"

    def __init__(self, workdir: pathlib.Path, tern_port: int, anchors: list[str]):
        self.tern_port = tern_port
        self.anchors = anchors
        super().__init__(workdir, workdir, [])

    def command(self) -> list[str]:
        conf = self.workdir / "unbound.conf"
        anchors = "".join(f'    trust-anchor: "{anchor}"\n' for anchor in self.anchors)
        stubs = "".join(f"stub-zone:\n    name: {zone}.\n"
                        f"    stub-addr: 127.0.0.1@{self.tern_port}\n" for zone in ZONES)
        conf.write_text(f"""server:
    interface: 127.0.0.1@{self.port}
    do-ip6: no
    num-threads: 1
    username: ""
    chroot: ""
    directory: "{self.workdir}"
    pidfile: "{self.workdir}/unbound.pid"
    use-syslog: no
    logfile: ""
    verbosity: 1
    val-log-level: 2
    module-config: "validator iterator"
{anchors}    do-not-query-localhost: no
    outgoing-interface: 127.0.0.1
    access-control: 127.0.0.0/8 allow
    harden-dnssec-stripped: yes
    aggressive-nsec: no
{stubs}remote-control:
    control-enable: no
""")
        done = run(["unbound-checkconf", str(conf)])
        if done.returncode != 0:
            fail(f"unbound-checkconf: {done.stdout} {done.stderr}")
        return ["unbound", "-d", "-c", str(conf)]

    def wait_ready(self, timeout: float, check_stop=lambda: None) -> None:
        deadline = time.monotonic() + timeout
        query = dns.message.make_query("version.server.", "TXT", "CH")
        while True:
            if not self.alive():
                fail("unbound exited while starting")
            try:
                dns.query.udp(query, self.addr[0], port=self.addr[1], timeout=0.5)
                return
            except (dns.exception.Timeout, OSError):
                pass
            if time.monotonic() > deadline:
                fail(f"unbound did not answer within {timeout:.0f}s")


def tern_config(zone_dir: pathlib.Path, state: pathlib.Path, bind_port: int) -> str:
    zones = "".join(f"""    - origin: {zone}.
      file: {zone_dir}/{zone}.zone
      dnssec-policy: {denial}
      update:
        - {{key: sha-key}}
""" for zone, denial in ZONES.items())
    return f"""keys:
  - {{name: sha-key, algorithm: hmac-sha256, secret: "{SECRET}"}}
dnssec:
  policies:
    - name: nsec
      algorithm: ecdsap256sha256
      keys: ksk-zsk
    - name: nsec3
      algorithm: ecdsap256sha256
      keys: ksk-zsk
      nsec3: {{iterations: 0, salt-length: 8, opt-out: false}}
zones:
  list:
{zones}transfer:
  allow: ["127.0.0.0/8"]
notify:
  targets: ["127.0.0.1:{bind_port}"]
state-directory: {state}
control-socket: {state}/control.sock
zone-file-sync: 0
log-level: debug
"""


def ask(addr, qname: str, rtype: str, rd: bool = False) -> dns.message.Message:
    query = dns.message.make_query(qname, rtype, want_dnssec=True)
    if not rd:
        query.flags &= ~dns.flags.RD
    return dns.query.tcp(query, addr[0], port=addr[1], timeout=10)


def serial(addr, zone: str) -> int | None:
    try:
        reply = ask(addr, f"{zone}.", "SOA")
    except Exception:  # noqa: BLE001  (not answering yet)
        return None
    return next((rdata.serial for rrset in reply.answer for rdata in rrset
                 if rdata.rdtype == dns.rdatatype.SOA), None)


def nsupdate(tern, zone: str, commands: str) -> str:
    script = f"server 127.0.0.1 {tern.port}\nzone {zone}.\n{commands}\nsend\n"
    done = run(["nsupdate", "-y", KEY], script)
    if done.returncode != 0:
        fail(f"nsupdate in {zone}: {commands!r}: {done.stdout} {done.stderr}")
    return done.stdout + done.stderr


def update_rcode(tern, zone: str, build) -> int:
    update = dns.update.Update(f"{zone}.", keyring=KEYRING, keyname="sha-key.")
    build(update)
    return dns.query.tcp(update, "127.0.0.1", port=tern.port, timeout=10).rcode()


def axfr_verified(server, zone: str, path: pathlib.Path) -> str:
    """`server`'s AXFR of `zone` passes dnssec-verify and ldns-verify-zone; its text."""
    done = run(["dig", "@127.0.0.1", "-p", str(server.port), f"{zone}.", "AXFR", "+onesoa",
                "+nocmd", "+nostats"])
    if done.returncode != 0 or "Transfer failed" in done.stdout or "SOA" not in done.stdout:
        fail(f"AXFR of {zone} from {server.name}: {done.stdout[-400:]} {done.stderr[-400:]}")
    text = done.stdout
    path.write_text(text)
    denial = "NSEC3" if ZONES[zone] == "nsec3" else "NSEC"
    if not re.search(rf"\sIN\s+{denial}\s", text) or not re.search(r"\sIN\s+RRSIG\s", text):
        fail(f"{server.name}'s AXFR of {zone} holds no {denial} or RRSIG")
    done = run(["dnssec-verify", "-o", f"{zone}.", str(path)])
    if done.returncode != 0:
        fail(f"dnssec-verify rejects {server.name}'s {zone}: "
             f"{done.stdout[-600:]} {done.stderr[-600:]}")
    done = run(["ldns-verify-zone", str(path)])
    if done.returncode != 0:
        fail(f"ldns-verify-zone rejects {server.name}'s {zone}: "
             f"{done.stdout[-600:]} {done.stderr[-600:]}")
    return text


def expected_nsec3_chain(text: str, zone: str) -> tuple[dict, dict]:
    """The NSEC3 chain an AXFR's records make (each name not below a cut, the empty
    non-terminals above them; RFC 5155 section 7.1), and the one it holds: each as
    {hashed owner: (next hashed owner, types)}."""
    import dns.dnssec
    import dns.zone
    origin = dns.name.from_text(f"{zone}.")
    parsed = dns.zone.from_text(text, origin=origin, relativize=False, check_origin=False)
    held, data = {}, {}
    param = None
    for name, node in parsed.nodes.items():
        for rdataset in node.rdatasets:
            if rdataset.rdtype == dns.rdatatype.NSEC3:
                rdata = rdataset[0]
                held[name.labels[0].decode().upper()] = (
                    base64.b32encode(rdata.next).decode().translate(
                        str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
                                      "0123456789ABCDEFGHIJKLMNOPQRSTUV")).rstrip("="),
                    sorted(t for window in rdata.windows for t in _types(window)))
            elif rdataset.rdtype == dns.rdatatype.NSEC3PARAM:
                param = rdataset[0]
            if rdataset.rdtype not in (dns.rdatatype.NSEC3, dns.rdatatype.RRSIG):
                data.setdefault(name, set()).add(rdataset.rdtype)
    if param is None:
        fail(f"{zone}: the AXFR holds no NSEC3PARAM")
    cuts = {name for name, types in data.items()
            if name != origin and dns.rdatatype.NS in types}

    def below_cut(name):
        parent = name.parent()
        while parent != origin and parent.is_subdomain(origin):
            if parent in cuts:
                return True
            parent = parent.parent()
        return False

    names = {}
    for name, types in data.items():
        if below_cut(name):
            continue
        if name in cuts:
            bitmap = types & {dns.rdatatype.NS, dns.rdatatype.DS}
            if dns.rdatatype.DS in types:
                bitmap.add(dns.rdatatype.RRSIG)
        else:
            bitmap = types | {dns.rdatatype.RRSIG}
        names[name] = bitmap
        parent = name.parent()
        while parent != origin and parent.is_subdomain(origin):
            names.setdefault(parent, set())
            parent = parent.parent()
    hashed = sorted((dns.dnssec.nsec3_hash(name, param.salt, param.iterations,
                                           param.algorithm), sorted(types))
                    for name, types in names.items())
    expected = {owner: (hashed[(at + 1) % len(hashed)][0], types)
                for at, (owner, types) in enumerate(hashed)}
    return expected, held


def _types(window) -> list[int]:
    number, bitmap = window
    return [number * 256 + at * 8 + bit for at, octet in enumerate(bitmap)
            for bit in range(8) if octet & (0x80 >> bit)]


def nsec3_window(zone: str) -> re.Pattern:
    """tern's debug line for an update to `zone` signed as a window of its NSEC3 chain
    (the served version patched, as every such window is)."""
    return re.compile(rf"zone {re.escape(zone)}\.: an update signed as a window of "
                      r"\d+ owners and \d+ NSEC3 links \([^)]*\), the served version patched")


def update_as_window(tern, zone: str, what: str, commands: str, window: re.Pattern,
                     how: str) -> None:
    """Sends `commands` to `zone` and fails unless the serial moved and tern's log
    gained one line `window` (the update signed as a window `how`, not the whole
    zone)."""
    before = serial(tern.addr, zone)
    windows = len(window.findall(tern.log_tail(100000)))
    nsupdate(tern, zone, commands)
    if serial(tern.addr, zone) == before:
        fail(f"{zone}: {what}: the update left serial {before}")
    if len(window.findall(tern.log_tail(100000))) != windows + 1:
        fail(f"{zone}: {what}: not signed as a window {how} (tern's log)")


def nsec3_sequence(tern, zone: str, tmp: pathlib.Path) -> None:
    """Issue 25 with NSEC3 signed as a window: a name added, a name below new empty
    non-terminals, a name deleted, an RRset deleted, the apex changed, the empty
    non-terminals gone; each signed as a window (tern's debug log says so), and after
    each the AXFR verifies and its NSEC3 chain is the one its records make (what signing
    the whole zone makes)."""
    steps = [
        ("a name added", f'update add both.{zone}. 60 TXT "t"\n'
                         f"update add both.{zone}. 60 A 192.0.2.33"),
        ("a name below new empty non-terminals",
         f"update add leaf.ent.n3.{zone}. 60 A 192.0.2.7"),
        ("a name deleted", f"update delete www.{zone}."),
        ("an RRset deleted", f"update delete both.{zone}. TXT"),
        ("the apex changed", f'update add {zone}. 300 TXT "apex"'),
        ("the empty non-terminals gone", f"update delete leaf.ent.n3.{zone}."),
    ]
    window = nsec3_window(zone)
    for at, (what, commands) in enumerate(steps):
        # The cost: the update was signed as a window, not the whole zone.
        update_as_window(tern, zone, what, commands, window, "of the NSEC3 chain")
        text = axfr_verified(tern, zone, tmp / f"{zone}.sequence{at}.axfr")
        expected, held = expected_nsec3_chain(text, zone)
        if expected != held:
            fail(f"{zone}: {what}: the NSEC3 chain served differs from the one its records "
                 f"make:\nserved {held}\nexpected {expected}")
        print(f"{NAME}: {zone} (nsec3): {what}; the AXFR verifies; its NSEC3 chain is the "
              f"whole zone's ({len(held)} links)")


def cut_and_dname_sequence(tern, zone: str, denial: str, tmp: pathlib.Path) -> None:
    """Issue 24: DNAMEs edited by UPDATE, and delegations made or removed above names
    the update does not touch: names added below `up`, `up` made a delegation (they
    become glue or occluded), `up` removed (they come back; none is its NS target), the
    delegation `sub` made with its glue, then removed with the glue kept, a DNAME made,
    changed and removed. The window finds the names below a cut made or removed in the
    served version's list of them (`Zone::names_below`), NSEC or NSEC3: every step is
    signed as a window (before branch `kids`, `up` made in an NSEC3 zone and `up`
    removed were signed whole). After each the AXFR verifies (dnssec-verify,
    ldns-verify-zone; with NSEC3 its chain is the whole zone's) and tern's debug log says
    it was signed as a window (NSEC: with the served version patched, not rebuilt)."""
    nsec = denial == "nsec"
    steps = [
        ("names added below up", f"update add a.up.{zone}. 60 A 192.0.2.61\n"
                                 f"update add b.up.{zone}. 60 A 192.0.2.62\n"
                                 f"update add c.d.up.{zone}. 60 A 192.0.2.63"),
        ("a delegation made above them", f"update add up.{zone}. 60 NS ns.example.org."),
        ("the delegation removed", f"update delete up.{zone}. NS"),
        ("a delegation made with its glue", f"update add sub.{zone}. 60 NS ns.sub.{zone}.\n"
                                            f"update add ns.sub.{zone}. 60 A 192.0.2.64"),
        ("the delegation removed, its glue kept", f"update delete sub.{zone}. NS"),
        ("a DNAME made", f"update add dn.{zone}. 60 DNAME example.org."),
        ("the DNAME changed", f"update add dn.{zone}. 60 DNAME example.net."),
        ("the DNAME removed", f"update delete dn.{zone}. DNAME"),
    ]
    # NSEC: the served version patched, not rebuilt (tern's debug log says which);
    # NSEC3: signed as a window of the chain.
    if nsec:
        window = re.compile(rf"zone {re.escape(zone)}\.: an update signed as a window of "
                            r"\d+ owners \([^)]*\), the served version patched")
    else:
        window = nsec3_window(zone)
    how = "with the served version patched" if nsec else "of the NSEC3 chain"
    for at, (what, commands) in enumerate(steps):
        update_as_window(tern, zone, what, commands, window, how)
        text = axfr_verified(tern, zone, tmp / f"{zone}.cuts{at}.axfr")
        if not nsec:
            expected, held = expected_nsec3_chain(text, zone)
            if expected != held:
                fail(f"{zone}: {what}: the NSEC3 chain served differs from the one its "
                     f"records make:\nserved {held}\nexpected {expected}")
        print(f"{NAME}: {zone} ({denial}): {what}, signed as a window; the AXFR verifies")


def resolve(unbound, qname: str, rtype: str) -> dns.message.Message:
    return ask(unbound.addr, qname, rtype, rd=True)


def expect_secure(unbound, qname: str, rtype: str, rcode: int, context: str) -> None:
    reply = resolve(unbound, qname, rtype)
    if reply.rcode() != rcode or not reply.flags & dns.flags.AD:
        fail(f"{context}: unbound answered {qname} {rtype} "
             f"{dns.rcode.to_text(reply.rcode())} AD={bool(reply.flags & dns.flags.AD)}, "
             f"expected {dns.rcode.to_text(rcode)} with AD\n{reply}")


def wait_for(what: str, condition) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            fail(f"{what} within {WAIT:.0f}s")
        time.sleep(0.1)


def names_txt(server, qname: str) -> set[str]:
    reply = ask(("127.0.0.1", server.port), qname, "TXT")
    return {rdata.to_text().strip('"') for rrset in reply.answer for rdata in rrset
            if rdata.rdtype == dns.rdatatype.TXT}


def main() -> None:
    for tool in ("nsupdate", "named", "unbound", "dnssec-verify", "ldns-verify-zone", "dig"):
        if run(["sh", "-c", f"command -v {tool}"]).returncode != 0:
            fail(f"{tool} is not installed (make deps)")
    with tempfile.TemporaryDirectory(prefix="tern-update-signed-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        for zone in ZONES:
            (zone_dir / f"{zone}.zone").write_text(zone_text(zone))
        state = tmp / "state"
        tern_port = smod.free_port()
        bind = BindSecondary(tmp / "named", tern_port)
        config = tern_config(zone_dir, state, bind.port)

        def start_tern(name: str) -> Tern:
            server = Tern(harness.tern_binary(), tmp / name, zone_dir, list(ZONES),
                          config_text=config)
            server.name = name
            server.port = tern_port
            server.workdir.mkdir(parents=True, exist_ok=True)
            SERVERS.append(server)
            server.start()
            try:
                server.wait_ready(WAIT)
            except smod.ServerError as err:
                fail(str(err))
            for zone in ZONES:
                wait_for(f"{name} serving {zone} signed",
                         lambda zone=zone: serial(server.addr, zone) is not None)
            return server

        tern = start_tern("tern")
        started = [tern]
        try:
            anchors = []
            for zone in ZONES:
                reply = ask(tern.addr, f"{zone}.", "DNSKEY")
                anchors += [f"{rrset.name} {dns.rdatatype.to_text(rrset.rdtype)} {rdata}"
                            for rrset in reply.answer if rrset.rdtype == dns.rdatatype.DNSKEY
                            for rdata in rrset]
            unbound = Unbound(tmp / "unbound", tern_port, anchors)
            unbound.workdir.mkdir(parents=True, exist_ok=True)
            SERVERS.append(unbound)
            started.append(unbound)
            unbound.start()
            unbound.wait_ready(WAIT)
            bind.workdir.mkdir(parents=True, exist_ok=True)
            SERVERS.append(bind)
            started.append(bind)
            bind.start()
            try:
                bind.wait_ready(WAIT)
            except smod.ServerError as err:
                fail(str(err))
            for zone in ZONES:
                first = serial(tern.addr, zone)
                wait_for(f"named at {zone}'s serial {first}",
                         lambda zone=zone, first=first: serial(bind.addr, zone) == first)

            for zone, denial in ZONES.items():
                name = f"added.{zone}."
                expect_secure(unbound, f"www.{zone}.", "A", dns.rcode.NOERROR,
                              f"{zone} before any update")
                before = serial(tern.addr, zone)
                nsupdate(tern, zone, f'update add {name} 60 TXT "hello"')
                if serial(tern.addr, zone) == before:
                    fail(f"{zone}: the update left serial {before}")
                axfr_verified(tern, zone, tmp / f"{zone}.added.axfr")
                expect_secure(unbound, name, "TXT", dns.rcode.NOERROR, f"{zone} after the add")
                reply = resolve(unbound, name, "TXT")
                if {r.to_text() for rrset in reply.answer for r in rrset
                        if rrset.rdtype == dns.rdatatype.TXT} != {'"hello"'}:
                    fail(f"{zone}: unbound does not answer the added TXT: {reply}")
                print(f"{NAME}: {zone} ({denial}): added {name} TXT; the AXFR verifies; "
                      "Unbound answers it secure")

                nsupdate(tern, zone, f"update delete {name}")
                axfr_verified(tern, zone, tmp / f"{zone}.deleted.axfr")
                expect_secure(unbound, name, "A", dns.rcode.NXDOMAIN, f"{zone} after the delete")
                print(f"{NAME}: {zone} ({denial}): deleted {name}; the AXFR verifies; Unbound "
                      "answers NXDOMAIN secure")

                at = serial(tern.addr, zone)
                refused = {
                    "DNSKEY at the apex": lambda u, z=zone: u.add(
                        f"{z}.", 300, "DNSKEY", "257 3 13 " + base64.b64encode(bytes(64)).decode()),
                    "NSEC delete": lambda u, z=zone: u.delete(f"www.{z}.", "NSEC"),
                    "RRSIG delete": lambda u, z=zone: u.delete(f"www.{z}.", "RRSIG"),
                    "CDS add": lambda u, z=zone: u.add(f"{z}.", 300, "CDS", "0 0 0 00"),
                    "NSEC3PARAM at the apex": lambda u, z=zone: u.delete(f"{z}.", "NSEC3PARAM"),
                }
                for what, build in refused.items():
                    rcode = update_rcode(tern, zone, build)
                    if rcode != dns.rcode.REFUSED:
                        fail(f"{zone}: {what}: {dns.rcode.to_text(rcode)}, expected REFUSED")
                if serial(tern.addr, zone) != at:
                    fail(f"{zone}: a refused update changed the serial")
                print(f"{NAME}: {zone}: updates of the signer's records are REFUSED")

                # Prerequisites on the apex DNSKEY RRset see the signer's keys
                # (RFC 2136 2.4.1 and 2.4.3, as Knot): exists holds, absent fails.
                rcode = update_rcode(tern, zone, lambda u, z=zone: (
                    u.present(f"{z}.", "DNSKEY"), u.add(f"pre.{z}.", 60, "TXT", '"p"')))
                if rcode != dns.rcode.NOERROR:
                    fail(f"{zone}: prerequisite DNSKEY exists: {dns.rcode.to_text(rcode)}, "
                         "expected NOERROR")
                rcode = update_rcode(tern, zone, lambda u, z=zone: (
                    u.absent(f"{z}.", "DNSKEY"), u.add(f"pre2.{z}.", 60, "TXT", '"p"')))
                if rcode != dns.rcode.YXRRSET:
                    fail(f"{zone}: prerequisite DNSKEY does not exist: "
                         f"{dns.rcode.to_text(rcode)}, expected YXRRSET")
                print(f"{NAME}: {zone}: prerequisites see the served DNSKEY RRset")

            for zone, denial in ZONES.items():
                if denial == "nsec3":
                    nsec3_sequence(tern, zone, tmp)
                cut_and_dname_sequence(tern, zone, denial, tmp)

            for zone in ZONES:
                now = serial(tern.addr, zone)
                wait_for(f"named at {zone}'s serial {now}",
                         lambda zone=zone, now=now: serial(bind.addr, zone) == now)
                axfr_verified(bind, zone, tmp / f"{zone}.bind.axfr")
            log = tern.log_tail(100000)
            for zone in ZONES:
                if not re.search(rf"{re.escape(zone)}\. IXFR, outgoing, to 127\.0\.0\.1", log):
                    fail(f"tern logged no IXFR of {zone} to named")
            print(f"{NAME}: named followed both zones by IXFR; its copies verify")

            # A signing that fails: a key file damaged.
            zone = "example.com"
            keys = sorted((state / "keys").rglob("*.pem"))
            if not keys:
                fail(f"no key files under {state / 'keys'}")
            mine = [key for key in keys if "example.com" in str(key)]
            saved = {key: key.read_bytes() for key in mine}
            journal = zone_dir / f"{zone}.zone.tern-journal"
            size = journal.stat().st_size if journal.exists() else 0
            at = serial(tern.addr, zone)
            for key in mine:
                key.write_bytes(b"-----BEGIN PRIVATE KEY-----\nnot a key\n"
                                b"-----END PRIVATE KEY-----\n")
            rcode = update_rcode(tern, zone, lambda u: u.add(f"broken.{zone}.", 60, "TXT",
                                                             '"no"'))
            for key, data in saved.items():
                key.write_bytes(data)
            if rcode != dns.rcode.SERVFAIL:
                fail(f"an update whose signing fails: {dns.rcode.to_text(rcode)}, "
                     "expected SERVFAIL")
            if serial(tern.addr, zone) != at or names_txt(tern, f"broken.{zone}.") or (
                    journal.exists() and journal.stat().st_size != size):
                fail("an update whose signing failed changed the zone or its journal")
            rcode = update_rcode(tern, zone, lambda u: u.add(f"kept.{zone}.", 60, "TXT",
                                                             '"kept"'))
            if rcode != dns.rcode.NOERROR:
                fail(f"with the key back, an update: {dns.rcode.to_text(rcode)}")
            print(f"{NAME}: a signing that fails answers SERVFAIL and changes nothing")

            # kill -9 after NOERROR: the journal's unsigned changes signed again at start.
            answered = serial(tern.addr, zone)
            os.killpg(tern.proc.pid, signal.SIGKILL)
            tern.proc.wait(5)
            started.remove(tern)
            tern = start_tern("tern-restarted")
            started.append(tern)
            if names_txt(tern, f"kept.{zone}.") != {"kept"}:
                fail("after kill -9 the update answered NOERROR is not served")
            restarted = serial(tern.addr, zone)
            if restarted is None or not 0 < (restarted - answered) % 2**32 < 2**31:
                fail(f"after kill -9 serial {restarted}, not above {answered}")
            axfr_verified(tern, zone, tmp / f"{zone}.restarted.axfr")
            print(f"{NAME}: kill -9 after NOERROR: the restart serves the update signed at "
                  f"serial {restarted}; the AXFR verifies")
        finally:
            for server in reversed(started):
                server.stop()
    print(f"{NAME}: PASS")


if __name__ == "__main__":
    main()
