#!/usr/bin/env python3
"""Zones tern signs validate in Unbound, from a private root down (issue 24).

A private DNS tree on loopback, every server on port 53 of its own 127.X.Y.n address
(X and Y drawn at random and checked free), so that Unbound resolves it as it would the
real one, following referrals and their glue:

    .            Knot (signing on), 127.X.Y.1: delegates each zone below to tern, with
                 its DS; its KSK is Unbound's one trust anchor; root hints name it alone
    ZONE.        tern, 127.X.Y.2: twelve zones, one per combination of
                 NSEC, NSEC3, NSEC3 with opt-out  x  CSK, KSK+ZSK  x  ECDSA P-256, Ed25519
    sub.ZONE.    Knot, 127.X.Y.3, unsigned: an insecure delegation of each zone, with glue
    secure.ZONE. the same Knot, signing on: a secure delegation, its DS in tern's zone

Unbound validates (`val-log-level: 2`, extended errors on) with `do-not-query-localhost:
no` and `outgoing-interface: 127.0.0.1`, so it cannot send a query off loopback, and no
name in the tree points outside it.

For every zone Unbound is asked, with DO, for each kind of name (`QUESTIONS`): the apex's
SOA and DNSKEY, an existing name and type, NODATA, NXDOMAIN (one and two labels below
the apex), empty non-terminals, a wildcard expansion (one and two labels), wildcard
NODATA, the DS of the insecure delegation (a secure denial) and a name and the glue below
it (insecure), the DS of the secure delegation and a name and the glue below it (secure),
CNAMEs (to a name, to nothing, into the wildcard), and a name written in capitals. Each
answer must have the expected rcode and security: AD set where the chain of trust
reaches the answer, clear below the insecure delegation and, in the opt-out zones, for
the denials that rest on an opt-out NSEC3 (`OPT_OUT_INSECURE`). A SERVFAIL (bogus) fails the
test with the query, the extended error and Unbound's log lines for it; so does an
answer without AD where one is expected, or the reverse.

Usage (from the repository root; loopback only; starts and stops every server; needs
root or CAP_NET_BIND_SERVICE for port 53 on the 127.X.Y.n addresses):

    TERN_BIN=target/release/tern python3 tests/dnssec/validate.py
"""

from __future__ import annotations

import pathlib
import random
import re
import socket
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.dnssec  # noqa: E402
import dns.edns  # noqa: E402
import dns.exception  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402

import signing  # noqa: E402  (tests/dnssec/signing.py)
from signing import SigningTern, harness, smod  # noqa: E402

NAME = "dnssec/validate"
# The twelve policies: (denial, keys, algorithm); a zone is named after its policy.
DENIALS = {
    "nsec": "",
    "nsec3": "      nsec3: {iterations: 0, salt-length: 0, opt-out: false}\n",
    "optout": "      nsec3: {iterations: 0, salt-length: 4, opt-out: true}\n",
}
KEYS = {"csk": "csk", "kz": "ksk-zsk"}
ALGORITHMS = {"p256": "ecdsap256sha256", "ed": "ed25519"}
ZONES = [f"{d}-{k}-{a}" for d in DENIALS for k in KEYS for a in ALGORITHMS]
# How long a server may take to start and serve its zones, and one resolution.
WAIT = 60.0
QUERY_TIMEOUT = 10.0

SECURE, INSECURE = "secure", "insecure"
# Secure, but insecure in an opt-out zone: an NXDOMAIN, a wildcard expansion, a wildcard
# NODATA and the DS denial of an opted-out delegation each prove that a name (the next
# closer name) does not exist with the NSEC3 that covers it, and when that NSEC3 has the
# opt-out flag (every NSEC3 of an opt-out chain has it, as BIND and Knot sign) the name
# might be an unsigned delegation left out of the chain, so validators give no AD (RFC
# 5155 sections 6 and 9.2; Unbound: "nsec3 nameerror proof: nc has optout",
# "proveWildcard: NSEC3 optout"). Not bogus: a SERVFAIL still fails.
OPT_OUT_INSECURE = "secure unless opt-out"
NOERROR, NXDOMAIN = dns.rcode.NOERROR, dns.rcode.NXDOMAIN

# (name relative to the zone, type, rcode, security, what the answer section must hold:
# a type, or None for an empty answer). "@" is the apex.
QUESTIONS = [
    ("@", "SOA", NOERROR, SECURE, "SOA"),
    ("@", "DNSKEY", NOERROR, SECURE, "DNSKEY"),
    ("www", "A", NOERROR, SECURE, "A"),                 # existing name and type
    ("www", "MX", NOERROR, SECURE, None),               # NODATA
    ("nothere", "A", NXDOMAIN, OPT_OUT_INSECURE, None),           # NXDOMAIN
    ("deep.nothere", "AAAA", NXDOMAIN, OPT_OUT_INSECURE, None),   # NXDOMAIN, two labels down
    ("c", "A", NOERROR, SECURE, None),                  # empty non-terminal
    ("b.c", "TXT", NOERROR, SECURE, None),              # empty non-terminal below one
    ("x.wild", "TXT", NOERROR, OPT_OUT_INSECURE, "TXT"),          # wildcard expansion
    ("y.x.wild", "TXT", NOERROR, OPT_OUT_INSECURE, "TXT"),        # expansion two labels down
    ("x.wild", "A", NOERROR, OPT_OUT_INSECURE, None),   # wildcard NODATA
    ("wild", "TXT", NOERROR, SECURE, None),             # the wildcard's parent (empty)
    ("sub", "DS", NOERROR, OPT_OUT_INSECURE, None),     # insecure delegation: no DS
    ("host.sub", "A", NOERROR, INSECURE, "A"),          # below it
    ("ns.sub", "A", NOERROR, INSECURE, "A"),            # its glue
    ("secure", "DS", NOERROR, SECURE, "DS"),            # secure delegation
    ("host.secure", "A", NOERROR, SECURE, "A"),         # below it
    ("ns.secure", "A", NOERROR, SECURE, "A"),           # its glue
    ("cname", "A", NOERROR, SECURE, "A"),               # CNAME to www
    ("dangling", "A", NXDOMAIN, OPT_OUT_INSECURE, "CNAME"),       # CNAME to a name that is not
    ("cwild", "TXT", NOERROR, OPT_OUT_INSECURE, "TXT"),           # CNAME into the wildcard
    ("upper", "A", NOERROR, SECURE, "A"),               # written UPPER in the file
    ("ns1", "A", NOERROR, SECURE, "A"),
]


def fail(message: str, *servers: smod.Server) -> None:
    print(f"{NAME}: FAIL: {message}")
    for server in servers:
        print(f"--- {server.name} log:\n{server.log_tail(60)}")
    sys.exit(1)


def port_53_free(address: str) -> bool:
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind((address, 53))
            except PermissionError:
                fail("binding port 53 needs root or CAP_NET_BIND_SERVICE (the servers of the "
                     "private tree listen there, so that Unbound follows their glue)")
            except OSError:
                return False
    return True


def pick_addresses() -> tuple[str, str, str]:
    """Three addresses 127.X.Y.1-3 whose port 53 is free (a few random tries)."""
    rng = random.SystemRandom()
    for _ in range(20):
        prefix = f"127.{rng.randrange(100, 250)}.{rng.randrange(1, 250)}"
        addresses = tuple(f"{prefix}.{n}" for n in (1, 2, 3))
        if all(port_53_free(address) for address in addresses):
            return addresses
    fail("no free port 53 on 127.X.Y.1-3 after 20 tries")
    raise AssertionError


#--- the servers


class At53:
    """A server on port 53 of its own loopback address."""

    address = "127.0.0.1"

    @property
    def addr(self) -> tuple[str, int]:
        return (self.address, 53)


class KnotAt53(At53, smod.Knot):
    """Knot on ADDRESS@53 serving `zones` from `zone_dir`; those in `signed` signed by
    Knot (its default policy: ECDSA P-256, KSK and ZSK, NSEC)."""

    def __init__(self, name: str, address: str, workdir, zone_dir, zones, signed):
        self.name = name
        self.address = address
        self.signed = set(signed)
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        entries = []
        for zone in self.zones:
            file = "root.zone" if zone == "." else f"{zone}.zone"
            entry = f"  - domain: {zone}\n    file: {file}\n"
            if zone in self.signed:
                entry += "    dnssec-signing: on\n"
            entries.append(entry)
        text = self.base_config().replace(f"listen: 127.0.0.1@{self.port}",
                                          f"listen: {self.address}@53")
        conf.write_text(text + self.template(self.zone_dir, "changes") + "zone:\n"
                        + "".join(entries))
        return ["knotd", "-c", str(conf)]

    def wait_ready(self, timeout: float, check_stop=lambda: None) -> None:
        """Until every zone's SOA is served with its RRSIG where Knot signs it."""
        deadline = time.monotonic() + timeout
        for zone in self.zones:
            origin = "." if zone == "." else f"{zone}."
            while True:
                if not self.alive():
                    raise smod.ServerError(f"{self.name} exited:\n{self.log_tail()}")
                try:
                    reply = ask(self, origin, "SOA")
                    types = {r.rdtype for r in reply.answer}
                    if dns.rdatatype.SOA in types and (
                            zone not in self.signed or dns.rdatatype.RRSIG in types):
                        break
                except (dns.exception.DNSException, OSError):
                    pass
                if time.monotonic() > deadline:
                    raise smod.ServerError(f"{self.name} did not serve {origin} signed "
                                           f"within {timeout:.0f}s:\n{self.log_tail()}")
                time.sleep(0.1)


class TernAt53(At53, SigningTern):
    def command(self) -> list[str]:
        cmd = super().command()
        at = cmd.index("--listen")
        cmd[at + 1] = f"{self.address}:53"
        return cmd


class Unbound(smod.Server):
    name = "unbound"

    def __init__(self, workdir, root: str, anchor: str):
        self.root = root
        self.anchor = anchor
        super().__init__(workdir, workdir, [])

    def command(self) -> list[str]:
        hints = self.workdir / "root.hints"
        hints.write_text(f".  3600000 IN NS a.root-servers.\n"
                         f"a.root-servers. 3600000 IN A {self.root}\n")
        conf = self.workdir / "unbound.conf"
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
    log-time-ascii: yes
    verbosity: 1
    val-log-level: 2
    log-servfail: yes
    ede: yes
    module-config: "validator iterator"
    root-hints: "{hints}"
    trust-anchor: "{self.anchor}"
    do-not-query-localhost: no
    outgoing-interface: 127.0.0.1
    access-control: 127.0.0.0/8 allow
    harden-dnssec-stripped: yes
remote-control:
    control-enable: no
""")
        done = signing.run(["unbound-checkconf", str(conf)])
        if done.returncode != 0:
            fail(f"unbound-checkconf: {done.stdout} {done.stderr}")
        return ["unbound", "-d", "-c", str(conf)]

    def wait_ready(self, timeout: float, check_stop=lambda: None) -> None:
        """Until Unbound answers `version.server CH TXT` (from itself, no resolution)."""
        deadline = time.monotonic() + timeout
        query = dns.message.make_query("version.server.", "TXT", "CH")
        while True:
            if not self.alive():
                fail("unbound exited while starting", self)
            try:
                dns.query.udp(query, self.addr[0], port=self.addr[1], timeout=0.5)
                return
            except (dns.exception.Timeout, OSError):
                pass
            if time.monotonic() > deadline:
                fail(f"unbound did not answer within {timeout:.0f}s", self)


def start(server: smod.Server, *logs: smod.Server) -> None:
    server.start()
    try:
        server.wait_ready(WAIT)
    except smod.ServerError as e:
        fail(f"{server.name} did not start: {e}", server, *logs)


def ask(server, qname: str, rtype: str) -> dns.message.Message:
    query = dns.message.make_query(qname, rtype, want_dnssec=True)
    query.flags &= ~dns.flags.RD
    return dns.query.tcp(query, server.addr[0], port=server.addr[1], timeout=QUERY_TIMEOUT)


def key_rrset(server, origin: str) -> dns.rrset.RRset:
    reply = ask(server, origin, "DNSKEY")
    rrset = next((r for r in reply.answer if r.rdtype == dns.rdatatype.DNSKEY), None)
    if rrset is None:
        fail(f"{server.name} serves no DNSKEY at {origin}", server)
    return rrset


def ds_lines(server, origin: str) -> list[str]:
    """The DS records (SHA-256) of the keys with the SEP flag at `origin`, as zone-file
    lines."""
    lines = []
    for key in key_rrset(server, origin):
        if key.flags & 1:
            ds = dns.dnssec.make_ds(origin, key, "SHA256")
            lines.append(f"{origin} 3600 IN DS {ds.to_text()}")
    if not lines:
        fail(f"{server.name}: no key with the SEP flag at {origin}", server)
    return lines


#--- the zones


def tern_zone(zone: str, tern_address: str, child_address: str, secure_ds: list[str]) -> str:
    lines = [
        f"$ORIGIN {zone}.",
        "$TTL 3600",
        "@ SOA ns1 hostmaster 1 7200 3600 1209600 300",
        "  NS ns1",
        "  MX 10 mail",
        f"ns1 A {tern_address}",
        "mail A 192.0.2.25",
        "www A 192.0.2.80",
        "  AAAA 2001:db8::80",
        "*.wild TXT \"wildcard\"",
        "a.b.c A 192.0.2.3",          # b.c and c: empty non-terminals
        "sub NS ns.sub",              # an insecure delegation with glue
        f"ns.sub A {child_address}",
        "secure NS ns.secure",        # a secure one, with glue
        f"ns.secure A {child_address}",
        "cname CNAME www",
        "dangling CNAME nothere",
        "cwild CNAME z.wild",
        "UPPER A 192.0.2.9",
    ] + secure_ds
    return "\n".join(lines) + "\n"


def child_zone(origin: str, address: str) -> str:
    return (f"$ORIGIN {origin}.\n$TTL 3600\n@ SOA ns hostmaster 1 7200 3600 1209600 300\n"
            f"  NS ns\nns A {address}\nhost A 192.0.2.100\n")


def root_zone(root_address: str, tern_address: str, ds: dict[str, list[str]]) -> str:
    lines = [
        "$ORIGIN .",
        "$TTL 3600",
        ". SOA a.root-servers. hostmaster. 1 7200 3600 1209600 300",
        ". NS a.root-servers.",
        f"a.root-servers. A {root_address}",
    ]
    for zone in ZONES:
        lines += [f"{zone}. NS ns1.{zone}.", f"ns1.{zone}. A {tern_address}"] + ds[zone]
    return "\n".join(lines) + "\n"


def tern_config(tmp: pathlib.Path, zone_dir: pathlib.Path) -> str:
    policies = "".join(
        f"    - name: {d}-{k}-{a}\n      algorithm: {ALGORITHMS[a]}\n      keys: {KEYS[k]}\n"
        + DENIALS[d]
        for d in DENIALS for k in KEYS for a in ALGORITHMS)
    zones = "".join(f"    - {{origin: {z}., file: {zone_dir}/{z}.zone, dnssec-policy: {z}}}\n"
                    for z in ZONES)
    return f"""control-socket: {tmp}/tern.sock
state-directory: {tmp}/state
dnssec:
  policies:
{policies}zones:
  list:
{zones}"""


#--- the checks


def security(reply: dns.message.Message) -> str:
    return SECURE if reply.flags & dns.flags.AD else INSECURE


def extended_errors(reply: dns.message.Message) -> str:
    texts = [f"EDE {o.code}: {o.text}" for o in reply.options
             if isinstance(o, dns.edns.EDEOption)]
    return "; ".join(texts) or "no extended error"


def unbound_lines(unbound: Unbound, qname: str) -> str:
    """Unbound's log lines that name `qname` (validation failures, SERVFAILs)."""
    log = unbound.log_path.read_text(errors="replace")
    pattern = re.compile(re.escape(qname.rstrip(".")), re.IGNORECASE)
    lines = [line for line in log.splitlines() if pattern.search(line)]
    return "\n".join(lines[-10:]) or "(no line names it)"


def check_zone(unbound: Unbound, zone: str, servers) -> int:
    for relative, rtype, rcode, secure, holds in QUESTIONS:
        qname = f"{zone}." if relative == "@" else f"{relative}.{zone}."
        query = dns.message.make_query(qname, rtype, want_dnssec=True)
        query.flags |= dns.flags.AD
        try:
            reply = dns.query.udp(query, unbound.addr[0], port=unbound.addr[1],
                                  timeout=QUERY_TIMEOUT)
        except dns.exception.Timeout:
            fail(f"{qname} {rtype}: Unbound did not answer within {QUERY_TIMEOUT:.0f}s", unbound)
        if reply.flags & dns.flags.TC:
            reply = dns.query.tcp(query, unbound.addr[0], port=unbound.addr[1],
                                  timeout=QUERY_TIMEOUT)
        if secure == OPT_OUT_INSECURE:
            secure = INSECURE if zone.startswith("optout-") else SECURE
        got = (dns.rcode.to_text(reply.rcode()), security(reply))
        wanted = (dns.rcode.to_text(rcode), secure)
        if reply.rcode() == dns.rcode.SERVFAIL:
            fail(f"{qname} {rtype}: SERVFAIL (bogus?), wanted {wanted}: "
                 f"{extended_errors(reply)}\nUnbound's log for it:\n"
                 f"{unbound_lines(unbound, qname)}", unbound, *servers)
        if got != wanted:
            fail(f"{qname} {rtype}: {got}, wanted {wanted} ({extended_errors(reply)}); "
                 f"answer {[str(r) for r in reply.answer]}\nUnbound's log for it:\n"
                 f"{unbound_lines(unbound, qname)}", unbound, *servers)
        types = {r.rdtype for r in reply.answer}
        if holds is None and reply.answer:
            fail(f"{qname} {rtype}: wanted an empty answer, got "
                 f"{[str(r) for r in reply.answer]}", unbound)
        if holds is not None and dns.rdatatype.from_text(holds) not in types:
            fail(f"{qname} {rtype}: no {holds} in the answer {[str(r) for r in reply.answer]}",
                 unbound)
    return len(QUESTIONS)


def main() -> None:
    for tool in ("unbound", "unbound-checkconf", "knotd"):
        if signing.run(["sh", "-c", f"command -v {tool}"]).returncode != 0:
            fail(f"{tool} is not installed (make deps)")
    root_address, tern_address, child_address = pick_addresses()
    with tempfile.TemporaryDirectory(prefix="tern-validate-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        children, signed_children = [], []
        for zone in ZONES:
            for child in ("sub", "secure"):
                origin = f"{child}.{zone}"
                (zone_dir / f"{origin}.zone").write_text(child_zone(origin, child_address))
                children.append(origin)
            signed_children.append(f"secure.{zone}")
        child = KnotAt53("knot-children", child_address, tmp / "knot-children", zone_dir,
                         children, signed_children)
        tern = TernAt53(harness.tern_binary(), tmp / "tern", zone_dir, ZONES,
                        config_text=tern_config(tmp, zone_dir))
        tern.address = tern_address
        root = KnotAt53("knot-root", root_address, tmp / "knot-root", zone_dir, ["."], ["."])
        unbound = None
        started = []
        try:
            # The children first (their DS goes in tern's zones), then tern (its DS
            # goes in the root), then the root (its KSK is the trust anchor).
            started.append(child)
            start(child)
            for zone in ZONES:
                ds = ds_lines(child, f"secure.{zone}.")
                (zone_dir / f"{zone}.zone").write_text(
                    tern_zone(zone, tern_address, child_address, ds))
            started.append(tern)
            start(tern)
            ds = {zone: ds_lines(tern, f"{zone}.") for zone in ZONES}
            (zone_dir / "root.zone").write_text(root_zone(root_address, tern_address, ds))
            started.append(root)
            start(root)
            keys = [k for k in key_rrset(root, ".") if k.flags & 1]
            anchor = f". DNSKEY {keys[0].to_text()}"
            print(f"{NAME}: root at {root_address}, tern at {tern_address}, children at "
                  f"{child_address}; trust anchor the root's KSK (tag "
                  f"{dns.dnssec.key_id(keys[0])})")
            unbound = Unbound(tmp / "unbound", root_address, anchor)
            started.append(unbound)
            start(unbound)
            servers = (tern, root, child)
            for zone in ZONES:
                asked = check_zone(unbound, zone, servers)
                print(f"{NAME}: {zone}.: {asked} questions, each with the expected rcode and "
                      f"security, none bogus")
        finally:
            for server in reversed(started):
                server.stop()
    print(f"{NAME}: ok ({len(ZONES)} zones, {len(ZONES) * len(QUESTIONS)} questions)")


if __name__ == "__main__":
    main()
