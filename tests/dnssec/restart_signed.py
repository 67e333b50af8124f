#!/usr/bin/env python3
"""A restart of tern does not sign its zones whole (issue 24): it signs each one from the
signed records its last signing saved (`STATE/signed/ORIGIN.kept`), keeping the signatures
still valid.

Two signed primary zones (signing.py's zones: a delegation with glue, a signed delegation, a
wildcard, empty non-terminals): csk.test. with a P-256 CSK and NSEC, kz.test. with Ed25519
KSK and ZSK and NSEC3 with a salt.

Checked, in order:

1. The first start signs each zone whole: `tern_zone_signatures_made_total` is the whole
   zone's count (above 10), and the zone verifies (dnssec-verify, ldns-verify-zone,
   kzonecheck -d on).
2. A restart with nothing changed (same files, same keys, signatures far from expiry)
   makes at most one signature per zone (the SOA's, for the serial above the one served),
   the log says how many were kept, the zone verifies, its serial did not go back, and the
   NSEC3 salt is the one served before (a zone signed whole would draw a new one).
3. A restart after an edit signs only what changed (above 0, below half the whole count).

Waits are for events (answers polled with a bound), never for time.

Usage (from the repository root; loopback only):

    TERN_BIN=target/debug/tern python3 tests/dnssec/restart_signed.py
"""

from __future__ import annotations

import pathlib
import re
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import signing  # noqa: E402  (tests/dnssec/signing.py)
from signing import CSK, KZ, SigningTern, harness, smod, zone_text  # noqa: E402

NAME = "dnssec/restart_signed"
ZONES = (CSK, KZ)
WAIT = 60.0


def fail(message: str, tern: smod.Server) -> None:
    print(f"{NAME}: FAIL: {message}")
    print(f"--- tern log:\n{tern.log_tail(40)}")
    sys.exit(1)


def made(tern: smod.Server, port: int, zone: str) -> int:
    """`tern_zone_signatures_made_total` of `zone`, once the metrics have it."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
                text = reply.read().decode()
            found = re.search(rf'^tern_zone_signatures_made_total{{zone="{re.escape(zone)}\."}}'
                              rf' (\S+)$', text, re.MULTILINE)
            if found:
                return int(float(found.group(1)))
        except OSError:
            pass
        if time.monotonic() > deadline:
            fail(f"no tern_zone_signatures_made_total for {zone}. within {WAIT:.0f}s", tern)
        time.sleep(0.1)


def nsec3_salt(text: str) -> str | None:
    found = re.search(r"\sIN\s+NSEC3PARAM\s+\d+\s+\d+\s+\d+\s+(\S+)", text)
    return found.group(1) if found else None


def served(tern: smod.Server, zone: str, tmp: pathlib.Path, label: str) -> tuple[int, str]:
    """The zone by AXFR, verified: its serial and text."""
    path = tmp / f"{zone}.{label}.axfr"
    text = signing.axfr(tern, zone, path)
    signing.verify_text(tern, zone, path, text, csk_only=zone == CSK)
    found = re.search(rf"^{re.escape(zone)}\.\s+\d+\s+IN\s+SOA\s+\S+\s+\S+\s+(\d+)", text,
                      re.MULTILINE)
    if not found:
        fail(f"{zone}.: no SOA in its AXFR", tern)
    return int(found.group(1)), text


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-restart-signed-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        for zone in ZONES:
            (zone_dir / f"{zone}.zone").write_text(zone_text(zone, 1))
        metrics_port = smod.free_port()
        config = f"""control-socket: {tmp}/tern.sock
state-directory: {tmp}/state
metrics: {{listen: "127.0.0.1:{metrics_port}"}}
transfer:
  allow: ["127.0.0.1"]
dnssec:
  policies:
    - name: csk
    - name: kz
      algorithm: ed25519
      keys: ksk-zsk
      nsec3: {{iterations: 0, salt-length: 4, opt-out: false}}
zones:
  list:
    - {{origin: {CSK}, file: {zone_dir}/{CSK}.zone, dnssec-policy: csk}}
    - {{origin: {KZ}, file: {zone_dir}/{KZ}.zone, dnssec-policy: kz}}
"""
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir, list(ZONES),
                           config_text=config)
        try:
            # 1. Signed whole at the first start.
            tern.start()
            tern.wait_ready(WAIT)
            whole, before = {}, {}
            for zone in ZONES:
                whole[zone] = made(tern, metrics_port, zone)
                if whole[zone] <= 10:
                    fail(f"{zone}.: the first start made {whole[zone]} signatures", tern)
                before[zone] = served(tern, zone, tmp, "first")
                print(f"{NAME}: {zone}. signed whole at the first start: {whole[zone]} "
                      f"signatures, serial {before[zone][0]}")

            # 2. A restart with nothing changed signs at most the SOA.
            tern.stop()
            tern.start()
            tern.wait_ready(WAIT)
            for zone in ZONES:
                count = made(tern, metrics_port, zone)
                if count > 1:
                    fail(f"{zone}.: a restart with nothing changed made {count} signatures "
                         f"(the whole zone is {whole[zone]})", tern)
                serial, text = served(tern, zone, tmp, "restart")
                if serial < before[zone][0]:
                    fail(f"{zone}.: serial {serial} after the restart, {before[zone][0]} "
                         f"before", tern)
                if zone == KZ and nsec3_salt(text) != nsec3_salt(before[zone][1]):
                    fail(f"{zone}.: the NSEC3 salt changed at the restart: "
                         f"{nsec3_salt(before[zone][1])} then {nsec3_salt(text)}", tern)
                print(f"{NAME}: {zone}. after a restart with nothing changed: {count} "
                      f"signature(s) made, serial {serial}, verifying")

            # 3. A restart after an edit signs what changed only.
            tern.stop()
            for zone in ZONES:
                (zone_dir / f"{zone}.zone").write_text(zone_text(zone, 2, extra=True))
            tern.start()
            tern.wait_ready(WAIT)
            for zone in ZONES:
                count = made(tern, metrics_port, zone)
                if not 0 < count < whole[zone] // 2:
                    fail(f"{zone}.: a restart after an edit made {count} signatures (the "
                         f"whole zone is {whole[zone]})", tern)
                signing.signed_answer(tern, f"added.{zone}.", "A")
                serial, _ = served(tern, zone, tmp, "edited")
                print(f"{NAME}: {zone}. after a restart with an edit: {count} signatures "
                      f"made, serial {serial}, verifying")
        except smod.ServerError as err:
            fail(str(err), tern)
        finally:
            tern.stop()
    print(f"{NAME}: ok")


if __name__ == "__main__":
    main()
