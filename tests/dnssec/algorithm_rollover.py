#!/usr/bin/env python3
"""An algorithm rollover under a validating resolver (issue 24): ECDSA P-256 to Ed25519,
not one answer bogus at any step, every version verifying.

Three servers, all on loopback, as tests/dnssec/rollover.py:

    parent   a tern serving p.test., signed with a CSK of its own; it holds the DS of
             a.p.test. (its zone file, rewritten by this test, then `tern reload`)
    child    the tern under test, serving a.p.test. with a KSK and a ZSK of
             ecdsap256sha256, no lifetimes, the parent check on (every 1s), a DNSKEY TTL
             of 4 s, records of 6 s and `propagation-delay: 2s`
    unbound  validating, with the parent's DNSKEY as its only trust anchor, stub zones
             for p.test. (the parent) and a.p.test. (the child)

From the first secure answer to the end, a thread queries Unbound (its cache kept) for
the zone's SOA, DNSKEY, a name (A) and a name that does not exist: every answer must be
NOERROR or NXDOMAIN as expected, with AD set; one bogus answer fails the test. Each
version of the zone the child serves (a new SOA serial, seen by polling between steps) is
read by AXFR and must pass BIND's `dnssec-verify` and `ldns-verify-zone`.

Steps, each printed with its time since the child started, each waited for as an event
(the child's DNSKEY RRset, its SOA RRSIGs' algorithms or its CDS changing; polled with a
bound, never a fixed sleep):

1. Setup: the child generates its ECDSA keys; the parent is written with their DS; the
   child's parent check sees it (its CDS goes); Unbound answers securely.
2. The policy's algorithm becomes ed25519 (configuration rewritten, `tern reload`, then
   `tern reload a.p.test`): the SOA is signed by both algorithms while the DNSKEY RRset
   holds the ECDSA keys alone (the new signatures first, RFC 6781 section 4.1.4). The
   child is restarted (Unbound's questions paused meanwhile): the same DNSKEYs, SOA
   signature algorithms and key files.
3. The Ed25519 DNSKEYs are published beside the ECDSA ones.
4. The CDS names the new KSK alone; the test puts that DS set at the parent; the child's
   parent check sees it (its CDS goes).
5. The ECDSA DNSKEYs are withdrawn, the SOA still signed by both algorithms; a restart
   there too changes nothing.
6. The ECDSA signatures are removed: the SOA is signed by Ed25519 alone.
7. `tern keys list` shows two Ed25519 keys and `tern zone-status` no rollover; the
   answers and the versions verified are counted.

Without the algorithm rollover, step 2 never comes (the keys keep their algorithm).

Usage (from the repository root; loopback only; starts and stops its servers):

    TERN_BIN=target/debug/tern python3 tests/dnssec/algorithm_rollover.py
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.dnssec  # noqa: E402
import dns.flags  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402

from rollover import (  # noqa: E402  (the ZSK/KSK/CSK rollover test's resolver and helpers)
    Failed, Querier, Unbound, ask, elapsed, fail, tern_command)
from signing import SigningTern, harness, query, run, smod  # noqa: E402

PARENT = "p.test"
ZONE = "a.p.test"
DNSKEY_TTL = 4
RECORD_TTL = 6
DELAY = 2
DS_TTL = 4
ECDSA = 13
ED25519 = 15
# The longest wait for one step, with room for a loaded machine.
STEP_WAIT = 120.0
POLL = 0.1



def step(text: str) -> None:
    print(f"dnssec/algorithm_rollover: [{elapsed()}] {text}", flush=True)


def child_zone() -> str:
    return "\n".join([
        f"$ORIGIN {ZONE}.",
        f"$TTL {RECORD_TTL}",
        "@ SOA ns hostmaster 1 60 30 600 5",
        "  NS ns",
        "ns A 192.0.2.10",
        "www A 192.0.2.80",
        "  TXT \"algorithm rollover\"",
        "*.wild A 192.0.2.81",
    ]) + "\n"


def parent_zone(serial: int, ds: list[str]) -> str:
    lines = [
        f"$ORIGIN {PARENT}.",
        f"$TTL {DS_TTL}",
        f"@ SOA ns hostmaster {serial} 60 30 600 {DS_TTL}",
        "  NS ns",
        "ns A 192.0.2.1",
        "a NS ns.a",
        "ns.a A 192.0.2.10",
    ]
    lines += [f"a {DS_TTL} DS {rdata}" for rdata in ds]
    return "\n".join(lines) + "\n"


def child_config(child, tmp: pathlib.Path, zones: pathlib.Path, parent, algorithm: str) -> str:
    return f"""control-socket: {child.socket}
state-directory: {tmp}/child-state
transfer:
  allow: [127.0.0.1]
dnssec:
  policies:
    - name: alg
      keys: ksk-zsk
      algorithm: {algorithm}
      zsk-lifetime: 0
      ksk-lifetime: 0
      dnskey-ttl: {DNSKEY_TTL}s
      propagation-delay: {DELAY}s
      rrsig-lifetime: 1h
      rrsig-refresh: 30m
      parent: {{servers: ["127.0.0.1:{parent.port}"], check-interval: 1s}}
zones:
  list:
    - {{origin: {ZONE}, file: {zones}/{ZONE}.zone, dnssec-policy: alg}}
"""


#----------- the servers ----------------------------------------------------

# Asked of Unbound round after round while the rollover runs (rollover.Querier).
QUESTIONS = [
    (f"{ZONE}.", "SOA", dns.rcode.NOERROR),
    (f"{ZONE}.", "DNSKEY", dns.rcode.NOERROR),
    (f"www.{ZONE}.", "A", dns.rcode.NOERROR),
    (f"www.{ZONE}.", "TXT", dns.rcode.NOERROR),
    (f"x.wild.{ZONE}.", "A", dns.rcode.NOERROR),
    (f"nx.{ZONE}.", "A", dns.rcode.NXDOMAIN),
]


#----------- what the child serves -------------------------------------------

def dnskeys(tern) -> dict[int, tuple[int, int]]:
    """The DNSKEY RRset the child serves: key tag -> (algorithm, flags)."""
    reply = query(tern, f"{ZONE}.", "DNSKEY")
    return {dns.dnssec.key_id(rdata): (int(rdata.algorithm), rdata.flags)
            for rrset in reply.message.answer
            if rrset.rdtype == dns.rdatatype.DNSKEY for rdata in rrset}


def dnskey_algorithms(tern) -> set[int]:
    return {algorithm for algorithm, _ in dnskeys(tern).values()}


def soa_algorithms(tern) -> set[int]:
    reply = query(tern, f"{ZONE}.", "SOA")
    return {int(rdata.algorithm) for rrset in reply.message.answer
            if rrset.rdtype == dns.rdatatype.RRSIG for rdata in rrset
            if rdata.type_covered == dns.rdatatype.SOA}


def cds_of(tern) -> list:
    reply = query(tern, f"{ZONE}.", "CDS")
    return [rdata for rrset in reply.message.answer
            if rrset.rdtype == dns.rdatatype.CDS for rdata in rrset]


def serial_of(tern) -> int | None:
    reply = query(tern, f"{ZONE}.", "SOA", dnssec=False)
    return next((rdata.serial for rrset in reply.message.answer for rdata in rrset
                 if rrset.rdtype == dns.rdatatype.SOA), None)


class Versions:
    """Every version of the zone seen (by its serial), read by AXFR and verified."""

    def __init__(self, tern, workdir: pathlib.Path):
        self.tern = tern
        self.workdir = workdir
        self.verified: list[int] = []

    def check(self) -> None:
        serial = serial_of(self.tern)
        if serial is None or serial in self.verified:
            return
        done = run(["dig", f"@{self.tern.addr[0]}", "-p", str(self.tern.addr[1]),
                    f"{ZONE}.", "AXFR", "+onesoa", "+nocmd", "+nostats"])
        if done.returncode != 0 or "Transfer failed" in done.stdout:
            fail(f"AXFR of {ZONE} failed: {done.stdout[-400:]} {done.stderr[-400:]}")
        path = self.workdir / f"{ZONE}.{len(self.verified)}.axfr"
        path.write_text(done.stdout)
        # The version transferred (a newer one may have come since the SOA query).
        axfr_serial = next(int(line.split()[6]) for line in done.stdout.splitlines()
                           if len(line.split()) > 6 and line.split()[3] == "SOA")
        if axfr_serial in self.verified:
            return
        for command in (["dnssec-verify", "-o", f"{ZONE}.", str(path)],
                        ["ldns-verify-zone", str(path)]):
            checked = run(command)
            if checked.returncode != 0:
                fail(f"{command[0]} rejects serial {axfr_serial} ({path}): "
                     f"{checked.stdout[-800:]} {checked.stderr[-800:]}")
        self.verified.append(axfr_serial)
        algorithms = sorted({int(line.split()[5]) for line in done.stdout.splitlines()
                             if len(line.split()) > 5 and line.split()[3] == "RRSIG"})
        step(f"  serial {axfr_serial}: dnssec-verify and ldns-verify-zone accept it "
             f"(RRSIG algorithms {algorithms}, DNSKEYs {sorted(dnskeys(self.tern).values())})")


def key_files(tmp: pathlib.Path) -> list[str]:
    return sorted(path.name for path in (tmp / "child-state" / "keys" / f"{ZONE}.").iterdir())


def restart(child, querier: Querier, tmp: pathlib.Path, why: str) -> None:
    """Restarts the child (Unbound's questions paused meanwhile): it must serve the same
    DNSKEY RRset, SOA signature algorithms and key files as before."""
    before = (dnskeys(child), soa_algorithms(child), key_files(tmp))
    querier.paused.set()
    child.stop()
    child.start()
    child.wait_ready(60.0)
    querier.paused.clear()
    after = (dnskeys(child), soa_algorithms(child), key_files(tmp))
    if after != before:
        fail(f"a restart {why} changed what the child serves or its keys: {before} -> {after}")
    step(f"restart {why}: the same DNSKEYs, SOA RRSIG algorithms and key files")


def wait_for(what: str, check, servers: list, versions: Versions | None) -> object:
    """Polls `check` until it returns something true, within STEP_WAIT; verifies each
    new version meanwhile."""
    deadline = time.monotonic() + STEP_WAIT
    while True:
        if versions is not None:
            versions.check()
        value = check()
        if value:
            return value
        for server in servers:
            if not server.alive():
                fail(f"{server.name} exited while waiting for {what}")
        if time.monotonic() > deadline:
            fail(f"not seen within {STEP_WAIT:.0f}s: {what}")
        time.sleep(POLL)


#----------- the test ---------------------------------------------------------

def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-algroll-") as tmp:
        tmp = pathlib.Path(tmp)
        zones = tmp / "zones"
        zones.mkdir()
        (zones / f"{ZONE}.zone").write_text(child_zone())
        parent = SigningTern(harness.tern_binary(), tmp / "parent", zones, [PARENT])
        child = SigningTern(harness.tern_binary(), tmp / "child", zones, [ZONE])
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
        child.config_text = child_config(child, tmp, zones, parent, "ecdsap256sha256")
        unbound = None
        querier = None
        servers = [child, parent]
        versions = Versions(child, tmp)
        try:
            # 1. Setup.
            global STARTED
            STARTED = time.monotonic()
            child.start()
            child.wait_ready(60.0)
            step(f"child serving {ZONE} signed: DNSKEY {sorted(dnskeys(child).values())}")
            if dnskey_algorithms(child) != {ECDSA}:
                fail(f"the first keys are not ECDSA P-256: {dnskeys(child)}")
            versions.check()
            ds = [line.split(" DS ", 1)[1].strip()
                  for line in tern_command(child, "keys", "ds", ZONE).stdout.splitlines()
                  if " DS " in line]
            if len(ds) != 1:
                fail(f"tern keys ds: {ds}")
            serial = 1
            (zones / f"{PARENT}.zone").write_text(parent_zone(serial, ds))
            parent.start()
            parent.wait_ready(60.0)
            step(f"parent serving {PARENT} with the DS of {ZONE} ({ds[0].split()[0]})")
            wait_for(f"{ZONE}'s CDS withdrawn (the parent check saw its DS)",
                     lambda: not cds_of(child), servers, versions)
            step("first DS confirmed by the parent check; no CDS left")
            anchor = next(f"{PARENT}. DNSKEY {rdata.to_text()}"
                          for rrset in query(parent, f"{PARENT}.", "DNSKEY").message.answer
                          if rrset.rdtype == dns.rdatatype.DNSKEY for rdata in rrset
                          if rdata.flags == 257)
            unbound = Unbound(tmp / "unbound", anchor, parent, child, zones=(ZONE,))
            unbound.start()
            servers.append(unbound)

            def secure() -> bool:
                reply = ask(unbound, f"{ZONE}.", "SOA", timeout=0.5)
                return (reply is not None and reply.rcode() == dns.rcode.NOERROR
                        and bool(reply.flags & dns.flags.AD))
            wait_for("Unbound's first secure answer", secure, servers, versions)
            querier = Querier(unbound, QUESTIONS)
            querier.start()
            step("Unbound answers securely; querying it from now on")

            # 2. The policy's algorithm changes.
            old_keys = dnskeys(child)
            child.config_text = child_config(child, tmp, zones, parent, "ed25519")
            (child.workdir / "tern.yaml").write_text(child.config_text)
            tern_command(child, "reload")
            tern_command(child, "reload", ZONE)
            step("policy: algorithm ed25519; tern reload, tern reload " + ZONE)
            wait_for(f"{ZONE}: the SOA signed by both algorithms",
                     lambda: soa_algorithms(child) == {ECDSA, ED25519}, servers, versions)
            if dnskey_algorithms(child) != {ECDSA}:
                fail(f"Ed25519 DNSKEYs published with the first new signatures: "
                     f"{dnskeys(child)}")
            step(f"signatures first: SOA RRSIGs {sorted(soa_algorithms(child))}, DNSKEY "
                 f"{sorted(dnskeys(child).values())}")
            restart(child, querier, tmp, "while the new keys sign unpublished")
            status = tern_command(child, "zone-status", ZONE).stdout
            listing = tern_command(child, "keys", "list", ZONE).stdout
            if "rollover algorithm:" not in status or "signing-unpublished" not in listing:
                fail(f"zone-status and keys list do not show the rollover: {status!r} "
                     f"{listing!r}")
            step("zone-status: " + next(word for word in status.split()
                                        if word.startswith("algorithm:")))

            # 3. The new DNSKEYs.
            wait_for(f"{ZONE}: the Ed25519 DNSKEYs published",
                     lambda: dnskey_algorithms(child) == {ECDSA, ED25519}, servers, versions)
            new_keys = {tag: key for tag, key in dnskeys(child).items() if tag not in old_keys}
            step(f"DNSKEYs published: {sorted(dnskeys(child).values())}; SOA RRSIGs "
                 f"{sorted(soa_algorithms(child))}")
            if sorted(flags for _, flags in new_keys.values()) != [256, 257]:
                fail(f"the new keys are not a KSK and a ZSK: {new_keys}")
            new_ksk = next(tag for tag, (_, flags) in new_keys.items() if flags == 257)

            # 4. The DS at the parent.
            cds = wait_for(f"{ZONE}: CDS of the new KSK {new_ksk}",
                           lambda: cds_of(child), servers, versions)
            if [r.key_tag for r in cds] != [new_ksk] or cds[0].algorithm != ED25519:
                fail(f"CDS {[(r.key_tag, r.algorithm) for r in cds]}, not the new KSK's alone")
            ds = [rdata.to_text() for rdata in cds]
            serial += 1
            (zones / f"{PARENT}.zone").write_text(parent_zone(serial, ds))
            tern_command(parent, "reload", PARENT)
            step(f"CDS {[r.key_tag for r in cds]} appeared; the parent's DS set is now that "
                 f"(serial {serial})")
            wait_for(f"{ZONE}: CDS withdrawn (the parent check saw DS {new_ksk})",
                     lambda: not cds_of(child), servers, versions)
            step("the child's parent check saw the new DS; its CDS is withdrawn")

            # 5. The old DNSKEYs withdrawn, their signatures kept.
            wait_for(f"{ZONE}: the ECDSA DNSKEYs withdrawn",
                     lambda: dnskey_algorithms(child) == {ED25519}, servers, versions)
            if soa_algorithms(child) != {ECDSA, ED25519}:
                fail(f"the ECDSA signatures went with their DNSKEYs: {soa_algorithms(child)}")
            step(f"ECDSA DNSKEYs withdrawn: DNSKEY {sorted(dnskeys(child).values())}; SOA "
                 f"RRSIGs {sorted(soa_algorithms(child))}")
            restart(child, querier, tmp, "while the withdrawn keys still sign")

            # 6. The old signatures removed.
            wait_for(f"{ZONE}: the SOA signed by Ed25519 alone",
                     lambda: soa_algorithms(child) == {ED25519}, servers, versions)
            versions.check()
            step(f"ECDSA signatures removed: SOA RRSIGs {sorted(soa_algorithms(child))}")

            # 7. What the control socket says; the answers.
            listing = tern_command(child, "keys", "list").stdout
            print(listing, end="")
            for tag in new_keys:
                if f" {tag} active" not in listing:
                    fail(f"tern keys list shows no active key {tag}")
            for tag in old_keys:
                if f" {tag} " in listing:
                    fail(f"tern keys list still shows the old key {tag}")
            status = tern_command(child, "zone-status", ZONE).stdout
            if "rollover none" not in status:
                fail(f"tern zone-status {ZONE}: {status!r}")
            step(f"zone-status: {status.strip()}")
            querier.stop.set()
            querier.join(10)
            if querier.bad:
                fail(f"{len(querier.bad)} of {querier.answers} answers from Unbound were not "
                     "secure:\n  " + "\n  ".join(querier.bad[:30]))
            step(f"{querier.answers} answers from Unbound, all secure (AD), none bogus; "
                 f"{len(versions.verified)} versions verified ({versions.verified})")
        except (Failed, smod.ServerError) as err:
            if querier is not None:
                querier.stop.set()
                if querier.bad:
                    print("answers not secure:\n  " + "\n  ".join(querier.bad[:30]))
            print(f"dnssec/algorithm_rollover: FAIL [{elapsed()}]: {err}")
            for server in servers:
                print(f"--- {server.name} log ({server.workdir}):\n{server.log_tail(40)}")
            sys.exit(1)
        finally:
            for server in servers:
                server.stop()
    print("dnssec/algorithm_rollover: ok")


if __name__ == "__main__":
    main()
