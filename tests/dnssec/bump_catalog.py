#!/usr/bin/env python3
"""tern signing the members of a consumed catalog zone (issue 24): `zones.catalog` with
`dnssec-policy`, every member received unsigned and served signed ("bump in the wire").

    knotd (catalog.knot. generated from its members, unsigned; NOTIFY to tern)
      └──► tern (zones.catalog with dnssec-policy: each member signed with its own keys)

Knot generates `catalog.knot.` (RFC 9432 version 2, `catalog-role: generate`) from two
member zones, a.test. and b.test. (signing.py's zone: a delegation with glue, a signed
delegation, a wildcard, empty non-terminals). tern consumes it with a policy (one P-256
CSK, NSEC).

Checked, in order (each step fails the script with the servers' logs):

1. Each member is served signed: its SOA comes with an RRSIG, its AXFR from tern passes
   dnssec-verify (and ldns-verify-zone, kzonecheck -d on), tern's serial is above Knot's,
   and its keys are in `STATE/keys/MEMBER./`. The signing metrics have each member
   (`tern_zone_signatures_made_total`, `tern_zone_rrsig_expiry_timestamp_seconds`).
2. A member added on Knot (c.test., `knotc reload`): Knot NOTIFYs the catalog, tern takes
   the member, transfers it and serves it signed, verifying; its keys made at first sight.
3. A member removed on Knot (b.test.): tern stops serving it; its keys stay in the state
   directory (as Knot keeps a removed member's keys).
4. tern restarts: each member's first answer is signed (its saved signed version), at a
   serial not lower than before.

Waits are for events (answers polled with a bound), never for time.

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/debug/tern python3 tests/dnssec/bump_catalog.py
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.exception  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402

import signing  # noqa: E402  (tests/dnssec/signing.py)
from signing import SigningTern, harness, smod, zone_text  # noqa: E402

NAME = "dnssec/bump_catalog"
CATALOG = "catalog.knot"
FIRST = ("a.test", "b.test")
ADDED = "c.test"
REMOVED = "b.test"
# How long a server may take to serve a new version (a transfer, a signing).
WAIT = 60.0


class Failed(Exception):
    pass


def fail(message: str) -> None:
    raise Failed(message)


class KnotCatalog(smod.Knot):
    """Knot serving the unsigned members and generating `catalog.knot.` from them (Knot
    3.2: `catalog-role: generate`; `catalog-role: member` and `catalog-zone` on each),
    NOTIFYing tern."""

    def __init__(self, workdir: pathlib.Path, zone_dir: pathlib.Path, tern_port: int):
        self.tern_port = tern_port
        self.members = FIRST
        super().__init__(workdir, zone_dir, list(FIRST))

    def write_config(self) -> pathlib.Path:
        conf = self.workdir / "knot.conf"
        members = "".join(f"""  - domain: {member}
    file: {member}.zone
    catalog-role: member
    catalog-zone: {CATALOG}.
    notify: tern
    acl: local
""" for member in self.members)
        conf.write_text(self.base_config() + f"""remote:
  - id: tern
    address: 127.0.0.1@{self.tern_port}
acl:
  - id: local
    address: 127.0.0.0/8
    action: transfer
{self.template(self.zone_dir, "changes")}zone:
  - domain: {CATALOG}.
    catalog-role: generate
    notify: tern
    acl: local
{members}""")
        return conf

    def command(self) -> list[str]:
        return ["knotd", "-c", str(self.write_config())]

    def reload(self, members) -> None:
        self.members = members
        self.write_config()
        done = subprocess.run(["knotc", "-s", str(self.workdir / "knot.sock"), "reload"],
                              capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            fail(f"knotc reload: {done.stdout}{done.stderr}")


def soa(server: smod.Server, zone: str) -> tuple[int | None, bool, int | None]:
    """The zone's serial as `server` answers it over UDP with DO, whether an RRSIG came
    with it, and the rcode; (None, False, None) without an answer."""
    query = dns.message.make_query(f"{zone}.", "SOA", want_dnssec=True)
    query.flags &= ~dns.flags.RD
    try:
        answer = dns.query.udp(query, server.addr[0], port=server.addr[1], timeout=1.0)
    except (dns.exception.Timeout, OSError):
        return None, False, None
    serial = next((rdata.serial for rrset in answer.answer for rdata in rrset
                   if rdata.rdtype == dns.rdatatype.SOA), None)
    signed = any(rrset.rdtype == dns.rdatatype.RRSIG for rrset in answer.answer)
    return serial, signed, answer.rcode()


def newer(a: int, b: int) -> bool:
    """Whether serial `a` is higher than `b` (RFC 1982)."""
    return a != b and (a - b) % 2**32 < 2**31


def wait_for(what: str, condition, wait: float = WAIT):
    """Polls `condition()` until it answers something true, which is returned."""
    deadline = time.monotonic() + wait
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > deadline:
            fail(f"{what}: not within {wait:.0f}s")
        time.sleep(0.1)


def answering(tern: smod.Server) -> None:
    """Waits until tern answers a query (REFUSED for a name of no zone: it serves no zone
    before its catalog's members come); tern exiting fails."""
    def answers() -> bool:
        if not tern.alive():
            fail(f"tern exited (code {tern.proc.returncode}) while starting")
        return soa(tern, "no-zone.invalid")[2] is not None
    wait_for("tern answering", answers)


def served_signed(tern: smod.Server, zone: str) -> int | None:
    """tern's serial of `zone` when it answers it signed; an unsigned answer fails."""
    serial, signed, _ = soa(tern, zone)
    if serial is not None and not signed:
        fail(f"tern serves {zone}. serial {serial} without an RRSIG")
    return serial


def verified(tern: smod.Server, zone: str, tmp: pathlib.Path, knot: smod.Server) -> int:
    """tern's copy of `zone`, read back by AXFR, verifies; its serial is above Knot's."""
    path = tmp / f"{zone}.{time.monotonic_ns()}.axfr"
    text = signing.axfr(tern, zone, path)
    found = re.search(rf"^{re.escape(zone)}\.\s+\d+\s+IN\s+SOA\s+\S+\s+\S+\s+(\d+)", text,
                      re.MULTILINE)
    if not found:
        fail(f"tern's AXFR of {zone}. has no SOA")
    serial = int(found.group(1))
    knot_serial = soa(knot, zone)[0]
    if knot_serial is None or not newer(serial, knot_serial):
        fail(f"{zone}.: tern serves serial {serial}, not above Knot's {knot_serial}")
    signing.verify_text(tern, zone, path, text, csk_only=True)
    return serial


def metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return reply.read().decode()


def signing_metrics(port: int, zone: str) -> None:
    """The signing series have the member: signatures made, earliest RRSIG expiry."""
    text = metrics(port)
    for series in ("tern_zone_signatures_made_total", "tern_zone_rrsig_expiry_timestamp_seconds",
                   "tern_zone_signing_timestamp_seconds"):
        found = re.search(rf'^{series}{{zone="{re.escape(zone)}\."}} (\S+)$', text,
                          re.MULTILINE)
        if not found or float(found.group(1)) <= 0:
            fail(f"metrics: no {series} for {zone}. above 0: "
                 f"{found.group(0) if found else 'absent'}")


def key_files(state: pathlib.Path, zone: str) -> list[str]:
    keys = state / "keys" / f"{zone}."
    return sorted(path.name for path in keys.glob("*.pem")) if keys.is_dir() else []


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-bump-catalog-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        for zone in FIRST + (ADDED,):
            (zone_dir / f"{zone}.zone").write_text(zone_text(zone, 100))
        tern_port = smod.free_port()
        metrics_port = smod.free_port()
        knot = KnotCatalog(tmp / "knot", zone_dir, tern_port)
        state = tmp / "state"
        config = f"""control-socket: {tmp}/tern.sock
state-directory: {state}
metrics: {{listen: "127.0.0.1:{metrics_port}"}}
transfer:
  allow: ["127.0.0.0/8"]
dnssec:
  policies:
    - name: csk
zones:
  catalog:
    - {{origin: {CATALOG}., primaries: ["127.0.0.1:{knot.port}"], dnssec-policy: csk}}
"""
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir, [],
                           config_text=config)
        tern.port = tern_port
        started = []
        try:
            started.append(knot)
            knot.start()
            knot.wait_ready(WAIT)
            started.append(tern)
            tern.start()
            answering(tern)

            # 1. Every member served signed, verifying, with its own keys.
            served = {}
            for zone in FIRST:
                wait_for(f"tern serving {zone}. signed", lambda: served_signed(tern, zone))
                served[zone] = verified(tern, zone, tmp, knot)
                if not key_files(state, zone):
                    fail(f"no key of {zone}. in {state}/keys")
                signing_metrics(metrics_port, zone)
                print(f"{NAME}: {zone}. (member of {CATALOG}.) served signed at serial "
                      f"{served[zone]}, verifying; in the signing metrics")

            # 2. A member added on Knot appears signed.
            knot.reload(FIRST + (ADDED,))
            wait_for(f"tern serving {ADDED}. signed", lambda: served_signed(tern, ADDED))
            served[ADDED] = verified(tern, ADDED, tmp, knot)
            if not key_files(state, ADDED):
                fail(f"no key of {ADDED}. in {state}/keys")
            signing_metrics(metrics_port, ADDED)
            print(f"{NAME}: {ADDED}. added on Knot: served signed at serial "
                  f"{served[ADDED]}, verifying, its keys made")

            # 3. A member removed on Knot stops being served; its keys stay.
            keys_before = key_files(state, REMOVED)
            kept = tuple(zone for zone in FIRST + (ADDED,) if zone != REMOVED)
            knot.reload(kept)
            wait_for(f"tern no longer serving {REMOVED}.",
                     lambda: soa(tern, REMOVED)[2] == dns.rcode.REFUSED)
            if key_files(state, REMOVED) != keys_before:
                fail(f"{REMOVED}.'s keys changed after its removal: {keys_before} then "
                     f"{key_files(state, REMOVED)}")
            if f'zone="{REMOVED}."' in metrics(metrics_port):
                fail(f"metrics still have the removed {REMOVED}.")
            for zone in kept:
                if served_signed(tern, zone) is None:
                    fail(f"tern stopped serving {zone}.")
            print(f"{NAME}: {REMOVED}. removed on Knot: tern answers REFUSED for it, its "
                  f"keys kept ({len(keys_before)} files)")

            # 4. A restart serves each member signed at once.
            tern.stop()
            tern.start()
            answering(tern)
            for zone in kept:
                # The first answer tern gives, whatever it is.
                serial, signed, _ = wait_for(f"tern answering for {zone}. after the restart",
                                             lambda: (lambda got: got[2] is not None and got)(
                                                 soa(tern, zone)))
                if serial is None or not signed or newer(served[zone], serial):
                    fail(f"{zone}.: after the restart tern first serves serial {serial} "
                         f"(signed: {signed}), before it served {served[zone]}")
                after = verified(tern, zone, tmp, knot)
                print(f"{NAME}: {zone}. after the restart: served signed at once, serial "
                      f"{serial}, then {after}, verifying")
        except (Failed, smod.ServerError) as err:
            print(f"{NAME}: FAIL: {err}")
            for server in started:
                print(f"--- {server.name} log:\n{server.log_tail(40)}")
            sys.exit(1)
        finally:
            for server in reversed(started):
                server.stop()
    print(f"{NAME}: ok")


if __name__ == "__main__":
    main()
