#!/usr/bin/env python3
"""Key rollovers under a validating resolver (issue 24): not one answer bogus at any step.

Three servers, all on loopback:

    parent   a tern serving p.test., signed with a CSK of its own; it holds the DS of the
             two child zones (its zone file, rewritten by this test, then `tern reload`)
    child    the tern under test, serving
               k.p.test.  KSK + ZSK, `zsk-lifetime: 25s`, the parent check on (every 1s)
               s.p.test.  one CSK, `ksk-lifetime: 60s`, no parent check (`tern keys ds-seen`)
             with a DNSKEY TTL of 4 s, records of 6 s and `propagation-delay: 2s`
    unbound  validating, with the parent's DNSKEY as its only trust anchor, stub zones
             for p.test. (the parent) and the two children (the child): it never follows
             the glue (192.0.2.0/24), and sends from 127.0.0.1 only

From the first secure answer to the end, a thread queries Unbound (its cache kept) for
each zone's SOA, DNSKEY, a name (A) and a name that does not exist: every answer must be
NOERROR or NXDOMAIN as expected, with AD set; one bogus answer fails the test.

Steps, each printed with its time since the child started, each waited for as an event
(the child's DNSKEY RRset, its SOA RRSIG's signer or its CDS changing; polled with a
bound, never a fixed sleep):

1. Setup: the child generates its keys; the parent is written with their DS (`tern keys
   ds`); the CSK's DS is confirmed by hand, the KSK's by the child's parent check (its
   CDS goes); Unbound answers securely.
2. ZSK rollover of k.p.test., started by the lifetime: the new ZSK is published, then
   signs (the SOA RRSIG's key changes), then the old one is removed.
3. KSK rollover of k.p.test., started by `tern keys rollover k.p.test ksk`: the new KSK is
   published; its CDS appears and the test puts that DS set at the parent; the child's
   parent check sees it (its CDS goes); the old KSK is removed.
4. CSK rollover of s.p.test., started by the lifetime: the new CSK is published, then
   signs the zone and its CDS appears; the test puts that DS at the parent and, once the
   parent serves it, runs `tern keys ds-seen`; the old CSK is removed.
5. `tern keys list` and `tern zone-status` show each zone's keys and no rollover left in
   progress for s.p.test.; the answers are counted.

Usage (from the repository root; loopback only; starts and stops its servers):

    TERN_BIN=target/release/tern python3 tests/dnssec/rollover.py
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.dnssec  # noqa: E402
import dns.exception  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402

from signing import SigningTern, harness, query, run, smod  # noqa: E402

PARENT = "p.test"
KZ = "k.p.test"
CSK = "s.p.test"
DNSKEY_TTL = 4
RECORD_TTL = 6
DELAY = 2
DS_TTL = 4
ZSK_LIFETIME = 25
CSK_LIFETIME = 60
# The longest wait for one step: the longest interval between two (a lifetime, then
# Ipub and Iret) with room for a loaded machine.
STEP_WAIT = 120.0
POLL = 0.1

STARTED = time.monotonic()


def elapsed() -> str:
    return f"{time.monotonic() - STARTED:6.1f}s"


def step(text: str) -> None:
    print(f"dnssec/rollover: [{elapsed()}] {text}", flush=True)


class Failed(Exception):
    pass


def fail(message: str) -> None:
    raise Failed(message)


def child_zone(origin: str) -> str:
    return "\n".join([
        f"$ORIGIN {origin}.",
        f"$TTL {RECORD_TTL}",
        "@ SOA ns hostmaster 1 60 30 600 5",
        "  NS ns",
        "ns A 192.0.2.10",
        "www A 192.0.2.80",
        "  TXT \"rollover\"",
    ]) + "\n"


def parent_zone(serial: int, ds: dict[str, list[str]]) -> str:
    lines = [
        f"$ORIGIN {PARENT}.",
        f"$TTL {DS_TTL}",
        f"@ SOA ns hostmaster {serial} 60 30 600 {DS_TTL}",
        "  NS ns",
        "ns A 192.0.2.1",
    ]
    for label, zone in (("k", KZ), ("s", CSK)):
        lines += [f"{label} NS ns.{label}", f"ns.{label} A 192.0.2.1{'0' if label == 'k' else '1'}"]
        lines += [f"{label} {DS_TTL} DS {rdata}" for rdata in ds[zone]]
    return "\n".join(lines) + "\n"


#----------- the servers ----------------------------------------------------

class Unbound(smod.Server):
    name = "unbound"

    def __init__(self, workdir, anchor: str, parent, child, zones=(KZ, CSK)):
        super().__init__(workdir, workdir, [])
        self.zones = zones
        self.anchor = anchor
        self.parent = parent
        self.child = child
        self.dead_port = smod.free_port()

    def command(self) -> list[str]:
        conf = self.workdir / "unbound.conf"
        children = "".join(f'stub-zone:\n    name: "{zone}."\n    stub-addr: 127.0.0.1@{self.child.port}\n'
                           for zone in self.zones)
        conf.write_text(f"""server:
    interface: 127.0.0.1@{self.port}
    outgoing-interface: 127.0.0.1
    do-ip6: no
    do-not-query-localhost: no
    access-control: 127.0.0.0/8 allow
    username: ""
    chroot: ""
    directory: "{self.workdir}"
    pidfile: "{self.workdir}/unbound.pid"
    use-syslog: no
    verbosity: 1
    val-log-level: 2
    num-threads: 1
    so-reuseport: no
    module-config: "validator iterator"
    qname-minimisation: no
    prefetch: no
    local-zone: "test." nodefault
    trust-anchor: "{self.anchor}"
remote-control:
    control-enable: no
stub-zone:
    name: "{PARENT}."
    stub-addr: 127.0.0.1@{self.parent.port}
{children}stub-zone:
    name: "."
    stub-addr: 127.0.0.1@{self.dead_port}
""")
        return ["unbound", "-d", "-c", str(conf)]


def ask(server, qname: str, rtype: str, timeout: float = 2.0) -> dns.message.Message | None:
    """A recursive query with DO to `server` over UDP; None on a timeout."""
    message = dns.message.make_query(qname, rtype, want_dnssec=True)
    try:
        return dns.query.udp(message, server.addr[0], port=server.addr[1], timeout=timeout)
    except (dns.exception.Timeout, OSError):
        return None


class Querier(threading.Thread):
    """Queries Unbound round after round until stopped; keeps every bad answer."""

    QUESTIONS = [
        (name, rtype, rcode)
        for zone in (KZ, CSK)
        for name, rtype, rcode in (
            (f"{zone}.", "SOA", dns.rcode.NOERROR),
            (f"{zone}.", "DNSKEY", dns.rcode.NOERROR),
            (f"www.{zone}.", "A", dns.rcode.NOERROR),
            (f"nx.{zone}.", "A", dns.rcode.NXDOMAIN),
        )
    ]

    def __init__(self, unbound, questions=None):
        super().__init__(daemon=True)
        self.unbound = unbound
        self.questions = questions or self.QUESTIONS
        self.stop = threading.Event()
        # Set while a server restarts: an answer then would test the outage, not
        # the signatures.
        self.paused = threading.Event()
        self.answers = 0
        self.bad: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            for qname, rtype, wanted in self.questions:
                if self.paused.is_set():
                    break
                reply = ask(self.unbound, qname, rtype)
                self.answers += 1
                if reply is None:
                    self.bad.append(f"[{elapsed()}] {qname} {rtype}: no answer")
                elif reply.rcode() != wanted or not reply.flags & dns.flags.AD:
                    self.bad.append(
                        f"[{elapsed()}] {qname} {rtype}: {dns.rcode.to_text(reply.rcode())}"
                        f"{' AD' if reply.flags & dns.flags.AD else ' without AD'}")
            # Pacing the rounds (the resolver's cache is what is tested), not a wait
            # for an event.
            self.stop.wait(0.05)


#----------- what the child serves -------------------------------------------

def keys_of(tern, zone: str) -> dict[int, int]:
    """The DNSKEY RRset the child serves: key tag -> flags."""
    reply = query(tern, f"{zone}.", "DNSKEY")
    return {dns.dnssec.key_id(rdata): rdata.flags for rrset in reply.message.answer
            if rrset.rdtype == dns.rdatatype.DNSKEY for rdata in rrset}


def soa_signers(tern, zone: str) -> set[int]:
    reply = query(tern, f"{zone}.", "SOA")
    return {rdata.key_tag for rrset in reply.message.answer
            if rrset.rdtype == dns.rdatatype.RRSIG for rdata in rrset
            if rdata.type_covered == dns.rdatatype.SOA}


def cds_of(tern, zone: str) -> list:
    reply = query(tern, f"{zone}.", "CDS")
    return [rdata for rrset in reply.message.answer
            if rrset.rdtype == dns.rdatatype.CDS for rdata in rrset]


def wait_for(what: str, check, servers: list) -> object:
    """Polls `check` until it returns something true, within STEP_WAIT."""
    deadline = time.monotonic() + STEP_WAIT
    while True:
        value = check()
        if value:
            return value
        for server in servers:
            if not server.alive():
                fail(f"{server.name} exited while waiting for {what}")
        if time.monotonic() > deadline:
            fail(f"not seen within {STEP_WAIT:.0f}s: {what}")
        time.sleep(POLL)


def tern_command(tern, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    # `tern keys --socket PATH ds ZONE`: the server's flags go before a subcommand's.
    done = run([str(harness.tern_binary()), args[0], "--socket", str(tern.socket), *args[1:]])
    if check and done.returncode != 0:
        fail(f"tern {' '.join(args)}: {done.stdout} {done.stderr}")
    return done


#----------- the test ---------------------------------------------------------

def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-rollover-") as tmp:
        tmp = pathlib.Path(tmp)
        zones = tmp / "zones"
        zones.mkdir()
        for zone in (KZ, CSK):
            (zones / f"{zone}.zone").write_text(child_zone(zone))
        parent = SigningTern(harness.tern_binary(), tmp / "parent", zones, [PARENT])
        child = SigningTern(harness.tern_binary(), tmp / "child", zones, [KZ, CSK])
        parent.socket = tmp / "parent.sock"
        child.socket = tmp / "child.sock"
        parent.config_text = f"""control-socket: {parent.socket}
state-directory: {tmp}/parent-state
dnssec:
  policies:
    - name: parent
      cds-cdnskey: none
      rrsig-lifetime: 1h
      rrsig-refresh: 30m
zones:
  list:
    - {{origin: {PARENT}, file: {zones}/{PARENT}.zone, dnssec-policy: parent}}
"""
        timers = f"""dnskey-ttl: {DNSKEY_TTL}s
      propagation-delay: {DELAY}s
      rrsig-lifetime: 1h
      rrsig-refresh: 30m"""
        child.config_text = f"""control-socket: {child.socket}
state-directory: {tmp}/child-state
dnssec:
  policies:
    - name: kz
      keys: ksk-zsk
      zsk-lifetime: {ZSK_LIFETIME}s
      {timers}
      parent: {{servers: ["127.0.0.1:{parent.port}"], check-interval: 1s}}
    - name: csk
      keys: csk
      ksk-lifetime: {CSK_LIFETIME}s
      parent-ds-ttl: {DS_TTL}s
      {timers}
zones:
  list:
    - {{origin: {KZ}, file: {zones}/{KZ}.zone, dnssec-policy: kz}}
    - {{origin: {CSK}, file: {zones}/{CSK}.zone, dnssec-policy: csk}}
"""
        unbound = None
        querier = None
        servers = [child, parent]
        try:
            # 1. Setup.
            global STARTED
            STARTED = time.monotonic()
            child.start()
            child.wait_ready(60.0)
            step(f"child serving {KZ} and {CSK} signed")
            ds = {zone: [line.split(" DS ", 1)[1].strip()
                         for line in tern_command(child, "keys", "ds", zone).stdout.splitlines()
                         if " DS " in line] for zone in (KZ, CSK)}
            if any(len(records) != 1 for records in ds.values()):
                fail(f"tern keys ds: {ds}")
            serial = 1
            (zones / f"{PARENT}.zone").write_text(parent_zone(serial, ds))
            parent.start()
            parent.wait_ready(60.0)
            step(f"parent serving {PARENT} with the DS of {KZ} ({ds[KZ][0].split()[0]}) and "
                 f"{CSK} ({ds[CSK][0].split()[0]})")
            csk0 = int(ds[CSK][0].split()[0])
            ksk0 = int(ds[KZ][0].split()[0])
            out = tern_command(child, "keys", "ds-seen", CSK, str(csk0)).stdout.strip()
            step(f"tern keys ds-seen {CSK} {csk0}: {out}")
            wait_for(f"{CSK}'s CDS withdrawn", lambda: not cds_of(child, CSK), servers)
            wait_for(f"{KZ}'s CDS withdrawn (the parent check saw DS {ksk0})",
                     lambda: not cds_of(child, KZ), servers)
            step(f"first DS confirmed: {CSK} by hand, {KZ} by the parent check; no CDS left")
            anchor = next(f"{PARENT}. DNSKEY {rdata.to_text()}"
                          for rrset in query(parent, f"{PARENT}.", "DNSKEY").message.answer
                          if rrset.rdtype == dns.rdatatype.DNSKEY for rdata in rrset
                          if rdata.flags == 257)
            unbound = Unbound(tmp / "unbound", anchor, parent, child)
            unbound.start()
            servers.append(unbound)

            def secure() -> bool:
                replies = [ask(unbound, f"{zone}.", "SOA", timeout=0.5) for zone in (KZ, CSK)]
                return all(r is not None and r.rcode() == dns.rcode.NOERROR
                           and r.flags & dns.flags.AD for r in replies)
            wait_for("Unbound's first secure answers", secure, servers)
            querier = Querier(unbound)
            querier.start()
            step("Unbound answers securely; querying it from now on")

            # 2. ZSK rollover of k.p.test, by its lifetime.
            zsks = lambda: sorted(tag for tag, flags in keys_of(child, KZ).items()  # noqa: E731
                                  if flags == 256)
            zsk0 = zsks()[0]
            both = wait_for(f"{KZ}: a second ZSK published", lambda: len(zsks()) == 2 and zsks(),
                            servers)
            zsk1 = next(tag for tag in both if tag != zsk0)
            step(f"ZSK: {KZ}'s lifetime over: ZSK {zsk1} published beside {zsk0}")
            wait_for(f"{KZ}: the SOA signed by ZSK {zsk1}",
                     lambda: soa_signers(child, KZ) == {zsk1}, servers)
            step(f"ZSK: {zsk1} signs, {zsk0} still published: {sorted(keys_of(child, KZ))}")
            wait_for(f"{KZ}: ZSK {zsk0} removed", lambda: zsks() == [zsk1], servers)
            step(f"ZSK: {zsk0} removed; DNSKEY {sorted(keys_of(child, KZ))}")

            # 3. KSK rollover of k.p.test, by hand.
            def start_ksk():
                done = tern_command(child, "keys", "rollover", KZ, "ksk", check=False)
                return done.returncode == 0 and done.stdout.strip()
            out = wait_for(f"{KZ}: tern keys rollover ksk accepted", start_ksk, servers)
            step(f"KSK: tern keys rollover {KZ} ksk: {out}")
            ksks = lambda: sorted(tag for tag, flags in keys_of(child, KZ).items()  # noqa: E731
                                  if flags == 257)
            both = wait_for(f"{KZ}: a second KSK published", lambda: len(ksks()) == 2 and ksks(),
                            servers)
            ksk1 = next(tag for tag in both if tag != ksk0)
            step(f"KSK: {ksk1} published beside {ksk0}; DNSKEY {sorted(keys_of(child, KZ))}")
            cds = wait_for(f"{KZ}: CDS of KSK {ksk1}",
                           lambda: [r for r in cds_of(child, KZ) if r.key_tag == ksk1]
                           and cds_of(child, KZ), servers)
            ds[KZ] = [rdata.to_text() for rdata in cds]
            serial += 1
            (zones / f"{PARENT}.zone").write_text(parent_zone(serial, ds))
            tern_command(parent, "reload", PARENT)
            step(f"KSK: CDS {[r.key_tag for r in cds]} appeared; the parent's DS set is now "
                 f"that (serial {serial})")
            wait_for(f"{KZ}: CDS withdrawn (the parent check saw DS {ksk1})",
                     lambda: not cds_of(child, KZ), servers)
            step("KSK: the child's parent check saw the new DS; its CDS is withdrawn")
            wait_for(f"{KZ}: KSK {ksk0} removed", lambda: ksks() == [ksk1], servers)
            step(f"KSK: {ksk0} removed; DNSKEY {sorted(keys_of(child, KZ))}")

            # 4. CSK rollover of s.p.test, by its lifetime.
            csks = lambda: sorted(keys_of(child, CSK))  # noqa: E731
            both = wait_for(f"{CSK}: a second CSK published", lambda: len(csks()) == 2 and csks(),
                            servers)
            csk1 = next(tag for tag in both if tag != csk0)
            step(f"CSK: {CSK}'s lifetime over: CSK {csk1} published beside {csk0}")
            wait_for(f"{CSK}: the SOA signed by CSK {csk1}",
                     lambda: soa_signers(child, CSK) == {csk1}, servers)
            cds = wait_for(f"{CSK}: CDS of CSK {csk1}",
                           lambda: [r for r in cds_of(child, CSK) if r.key_tag == csk1]
                           and cds_of(child, CSK), servers)
            step(f"CSK: {csk1} signs the zone; CDS {[r.key_tag for r in cds]}")
            ds[CSK] = [rdata.to_text() for rdata in cds]
            serial += 1
            (zones / f"{PARENT}.zone").write_text(parent_zone(serial, ds))
            tern_command(parent, "reload", PARENT)

            def parent_has_ds() -> bool:
                reply = query(parent, f"{CSK}.", "DS")
                return any(rdata.key_tag == csk1 for rrset in reply.message.answer
                           if rrset.rdtype == dns.rdatatype.DS for rdata in rrset)
            wait_for(f"the parent serving DS {csk1}", parent_has_ds, servers)
            out = tern_command(child, "keys", "ds-seen", CSK, str(csk1)).stdout.strip()
            step(f"CSK: the parent serves DS {csk1}; tern keys ds-seen: {out}")
            wait_for(f"{CSK}: CSK {csk0} removed", lambda: csks() == [csk1], servers)
            step(f"CSK: {csk0} removed; DNSKEY {csks()}")

            # 5. What the control socket says; the answers.
            listing = tern_command(child, "keys", "list").stdout
            print(listing, end="")
            for zone, tags in ((KZ, [ksk1]), (CSK, [csk1])):
                for tag in tags:
                    if f" {tag} active" not in listing:
                        fail(f"tern keys list shows no active key {tag} of {zone}")
            status = tern_command(child, "zone-status", CSK).stdout
            if "rollover none" not in status or "next-key-event" not in status:
                fail(f"tern zone-status {CSK}: {status!r}")
            step(f"zone-status: {status.strip()}")
            querier.stop.set()
            querier.join(10)
            if querier.bad:
                fail(f"{len(querier.bad)} of {querier.answers} answers from Unbound were not "
                     "secure:\n  " + "\n  ".join(querier.bad[:30]))
            step(f"{querier.answers} answers from Unbound, all secure (AD), none bogus")
        except (Failed, smod.ServerError) as err:
            if querier is not None:
                querier.stop.set()
                if querier.bad:
                    print("answers not secure:\n  " + "\n  ".join(querier.bad[:30]))
            print(f"dnssec/rollover: FAIL [{elapsed()}]: {err}")
            for server in servers:
                print(f"--- {server.name} log ({server.workdir}):\n{server.log_tail(40)}")
            sys.exit(1)
        finally:
            for server in servers:
                server.stop()
    print("dnssec/rollover: ok")


if __name__ == "__main__":
    main()
