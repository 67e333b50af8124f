#!/usr/bin/env python3
"""A served signed zone changes its denial of existence (issue 24): NSEC to NSEC3 and
back when its policy changes, and a new NSEC3 salt after `salt-lifetime`.

One zone (the records of tests/dnssec/signing.py: a delegation with glue, a wildcard, an
empty non-terminal), one ECDSA P-256 CSK, signed by tern. Each step fails the script with
tern's log:

1. Policy `nsec`: served with an NSEC chain; the AXFR verifies.
2. The configuration's policy gains `nsec3: {salt-length: 4, salt-lifetime: 15s}` and
   `tern reload ZONE` is run: the next serial is served with the NSEC3 chain and
   NSEC3PARAM and no NSEC, in that one version (its AXFR and IXFR from the serial before
   both say so: every NSEC deleted, the whole NSEC3 chain added); it verifies with
   `dnssec-verify` and `ldns-verify-zone`.
3. Without a reload, the salt's lifetime passes: tern signs again by itself, and a
   version with a new 4-octet salt is served (seen by polling the NSEC3PARAM), every
   NSEC3 owner new, verified.
4. The policy loses `nsec3` and the zone is reloaded: NSEC again, no NSEC3 or
   NSEC3PARAM, verified.

Usage (from the repository root; loopback only; starts and stops its tern):

    TERN_BIN=target/release/tern python3 tests/dnssec/denial.py
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import signing  # noqa: E402  (tests/dnssec/signing.py: the zone, tern, the verifiers)
from incremental import ixfr, records, reload_and_wait, verify  # noqa: E402
from signing import SigningTern, fail, harness, query, serial, zone_text  # noqa: E402

ORIGIN = "denial.test"
POLL = 0.1

NSEC3 = """      nsec3: {salt-length: 4, salt-lifetime: 15s}
"""


def config(tmp: pathlib.Path, zone_dir: pathlib.Path, socket: pathlib.Path,
           nsec3: bool) -> str:
    return f"""control-socket: {socket}
state-directory: {tmp}/state
transfer:
  allow: ["127.0.0.1"]
dnssec:
  policies:
    - name: p
""" + (NSEC3 if nsec3 else "") + f"""zones:
  list:
    - {{origin: {ORIGIN}, file: {zone_dir}/{ORIGIN}.zone, dnssec-policy: p}}
"""


def types_of(zone: set) -> set[str]:
    return {record[2] for record in zone}


def salt(tern) -> str | None:
    """The salt of the served NSEC3PARAM, as hex ('-' for none), or None."""
    reply = query(tern, f"{ORIGIN}.", "NSEC3PARAM", dnssec=False)
    return next((rdata.to_text().split()[3] for rrset in reply.message.answer
                 for rdata in rrset), None)


def version(tern, tmp: pathlib.Path, name: str) -> set:
    path = tmp / f"{ORIGIN}.{name}.axfr"
    verify(tern, ORIGIN, path)
    return set(records(path.read_text()))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-denial-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        (zone_dir / f"{ORIGIN}.zone").write_text(zone_text(ORIGIN, 1))
        socket = tmp / "tern.sock"
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir, [ORIGIN],
                           config_text=config(tmp, zone_dir, socket, nsec3=False))
        conf = tmp / "tern" / "tern.yaml"
        try:
            tern.start()
            tern.wait_ready(signing.WAIT)
            # 1. NSEC.
            first = version(tern, tmp, "nsec")
            if "NSEC" not in types_of(first) or types_of(first) & {"NSEC3", "NSEC3PARAM"}:
                fail(f"{ORIGIN} is not served with NSEC only: {sorted(types_of(first))}", tern)
            at = serial(tern, ORIGIN)
            print(f"dnssec/denial: serial {at}: NSEC, verifies")

            # 2. NSEC to NSEC3 in one version.
            conf.write_text(config(tmp, zone_dir, socket, nsec3=True))
            reload_and_wait(tern, socket, ORIGIN, at + 1)
            second = version(tern, tmp, "nsec3")
            if "NSEC" in types_of(second) or not {"NSEC3", "NSEC3PARAM"} <= types_of(second):
                fail(f"{ORIGIN} after the switch: {sorted(types_of(second))}", tern)
            deleted, added = ixfr(tern, ORIGIN, at)
            if {r for r in first if r[2] == "NSEC"} - deleted:
                fail("the IXFR to NSEC3 does not delete every NSEC", tern)
            if {r for r in second if r[2] in ("NSEC3", "NSEC3PARAM")} - added:
                fail("the IXFR to NSEC3 does not add the whole NSEC3 chain", tern)
            first_salt = salt(tern)
            print(f"dnssec/denial: serial {at + 1}: NSEC3 (salt {first_salt}) and no NSEC in "
                  "one version, its IXFR the whole change; verifies")

            # 3. The salt's lifetime passes: a new chain with a new salt.
            started = time.monotonic()
            while (now := salt(tern)) == first_salt:
                if time.monotonic() - started > signing.WAIT:
                    fail(f"the salt {first_salt} was not replaced {signing.WAIT}s after its "
                         "15 s lifetime", tern)
                time.sleep(POLL)
            if now is None or len(now) != 8:
                fail(f"the new salt is {now}, not 4 octets", tern)
            third = version(tern, tmp, "resalted")
            old_owners = {r[0] for r in second if r[2] == "NSEC3"}
            new_owners = {r[0] for r in third if r[2] == "NSEC3"}
            if old_owners & new_owners or len(old_owners) != len(new_owners):
                fail(f"the NSEC3 chain was not made again whole: {len(old_owners & new_owners)} "
                     "owners kept", tern)
            print(f"dnssec/denial: salt {first_salt} replaced by {now} after its lifetime, "
                  f"{len(new_owners)} NSEC3 all new; verifies")

            # 4. Back to NSEC.
            at = serial(tern, ORIGIN)
            conf.write_text(config(tmp, zone_dir, socket, nsec3=False))
            reload_and_wait(tern, socket, ORIGIN, at + 1)
            fourth = version(tern, tmp, "nsec-again")
            if "NSEC" not in types_of(fourth) or types_of(fourth) & {"NSEC3", "NSEC3PARAM"}:
                fail(f"{ORIGIN} back to NSEC: {sorted(types_of(fourth))}", tern)
            print(f"dnssec/denial: serial {at + 1}: NSEC again, no NSEC3; verifies")
        finally:
            tern.stop()
    print("dnssec/denial: ok")


if __name__ == "__main__":
    main()
