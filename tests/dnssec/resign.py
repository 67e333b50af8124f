#!/usr/bin/env python3
"""A signed zone is signed again before its signatures expire, its file untouched (issue 24).

One zone, rs.test., with a CSK policy whose signatures live 40 seconds and are made
anew 30 seconds before they expire (`rrsig-lifetime: 40s`, `rrsig-refresh: 30s`): tern
must sign it again about 10 seconds after each signing, without its file changing.

Checked (each step fails the script with tern's log):

1. tern serves the zone signed, at the file's serial (1).
2. Without touching the file, the served SOA and its RRSIG are polled over DNS (with DO)
   until a new version is served: a higher serial (the file's is not higher, so each
   version is the one before plus one; two refresh batches can fall due within one poll,
   so the first version seen may be the second made) and a later SOA RRSIG expiration,
   within a bound. At every
   poll the served SOA RRSIG must not have expired: a server that does not re-sign
   fails here about 40 seconds in.
3. That version, read back by AXFR, passes `dnssec-verify` and `ldns-verify-zone`, the
   zone file is unchanged (bytes and modification time), and tern's log says why it
   signed the zone again.

Usage (from the repository root; loopback only; starts and stops its tern):

    TERN_BIN=target/release/tern python3 tests/dnssec/resign.py
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.rdatatype  # noqa: E402

import signing  # noqa: E402  (tests/dnssec/signing.py: the zone, tern, the verifiers)
from signing import SigningTern, fail, harness, query, verify, zone_text  # noqa: E402

ZONE = "rs.test"
# The most new versions one poll may find: the refresh batches due at once.
MAX_VERSIONS_PER_POLL = 3
LIFETIME = 40
REFRESH = 30
# The longest wait for the new version: a re-signing is due LIFETIME - REFRESH seconds
# after the first signing; this leaves room on a loaded machine, and a server that does
# not re-sign fails earlier, when the served RRSIG expires.
WAIT_RESIGNED = 3 * LIFETIME
POLL = 0.2


def soa_and_expiration(tern, origin: str) -> tuple[int, int]:
    """The served SOA serial and its RRSIG's expiration (Unix time)."""
    reply = query(tern, f"{origin}.", "SOA")
    serials = [rdata.serial for rrset in reply.message.answer
               if rrset.rdtype == dns.rdatatype.SOA for rdata in rrset]
    expirations = [rdata.expiration for rrset in reply.message.answer
                   if rrset.rdtype == dns.rdatatype.RRSIG for rdata in rrset
                   if rdata.type_covered == dns.rdatatype.SOA]
    if len(serials) != 1 or not expirations:
        fail(f"{origin} SOA with DO: serials {serials}, SOA RRSIG expirations {expirations}",
             tern)
    return serials[0], min(expirations)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-resign-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        zone_file = zone_dir / f"{ZONE}.zone"
        zone_file.write_text(zone_text(ZONE, 1))
        before = (zone_file.read_bytes(), zone_file.stat().st_mtime_ns)
        config = f"""control-socket: {tmp}/tern.sock
state-directory: {tmp}/state
transfer:
  allow: ["127.0.0.1"]
dnssec:
  policies:
    - name: short
      rrsig-lifetime: {LIFETIME}s
      rrsig-refresh: {REFRESH}s
zones:
  list:
    - {{origin: {ZONE}, file: {zone_file}, dnssec-policy: short}}
"""
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir, [ZONE],
                           config_text=config)
        try:
            # 1. Served signed, at the file's serial.
            tern.start()
            tern.wait_ready(signing.WAIT)
            first_serial, first_expiration = soa_and_expiration(tern, ZONE)
            if first_serial != 1:
                fail(f"{ZONE}: serial {first_serial} served at start, not the file's 1", tern)
            verify(tern, ZONE, tmp / f"{ZONE}.1.axfr", csk_only=True)

            # 2. Polled until a new version is served; never an expired SOA RRSIG.
            started = time.time()
            polls = 0
            while True:
                serial, expiration = soa_and_expiration(tern, ZONE)
                now = time.time()
                polls += 1
                if expiration < now:  # RFC 4035 5.3.1: valid through its expiration
                    fail(f"{ZONE}: the served SOA RRSIG expired at {expiration}, "
                         f"{now - expiration:.1f}s ago (serial {serial}; {now - started:.1f}s "
                         f"after the first poll): the zone was not signed again", tern)
                if serial != first_serial or expiration != first_expiration:
                    break
                if now - started > WAIT_RESIGNED:
                    fail(f"{ZONE}: no new version {WAIT_RESIGNED}s after the first poll", tern)
                time.sleep(POLL)
            # Refresh batches (jitter / RESIGN_BATCHES wide) can fall due one right after
            # the other (two versions 7 ms apart were seen): a poll may see the second.
            if not first_serial < serial <= first_serial + MAX_VERSIONS_PER_POLL \
                    or expiration <= first_expiration:
                fail(f"{ZONE}: the new version has serial {serial} (wanted above {first_serial}, "
                     f"at most {first_serial + MAX_VERSIONS_PER_POLL}) and SOA RRSIG expiration "
                     f"{expiration} (wanted after {first_expiration})", tern)
            print(f"dnssec/signing: {ZONE}: signed again {now - started:.1f}s after the first "
                  f"poll ({polls} polls, none with an expired SOA RRSIG): serial "
                  f"{first_serial} -> {serial}, SOA RRSIG expiration {first_expiration} -> "
                  f"{expiration}")

            # 3. The new version verifies; the file is untouched; the log says why.
            verify(tern, ZONE, tmp / f"{ZONE}.2.axfr", csk_only=True)
            if (zone_file.read_bytes(), zone_file.stat().st_mtime_ns) != before:
                fail(f"{zone_file} changed", tern)
            log = tern.log_tail(100000)
            line = next((line for line in log.splitlines()
                         if f"zone {ZONE}.: its signatures near expiry" in line), None)
            if line is None:
                fail("tern's log does not say why the zone was signed again", tern)
            print(f"dnssec/signing: {ZONE}: file unchanged; tern's log: {line.strip()[-90:]}")
        finally:
            tern.stop()
    print("dnssec/resign: ok")


if __name__ == "__main__":
    main()
