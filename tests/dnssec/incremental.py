#!/usr/bin/env python3
"""A signed zone reloaded after an edit is signed again incrementally (issue 24).

Two zones with the records of tests/dnssec/signing.py (a delegation with glue, a secure
delegation, a wildcard, an empty non-terminal), each with one ECDSA P-256 CSK:

    inc.test.   NSEC
    inc3.test.  NSEC3, 4 octets of salt
    incopt.test.  NSEC3 with opt-out, 4 octets of salt (the insecure delegation left out
                of the chain; its edits signed as a window since branch n3, before whole)

Checked for each zone (each step fails the script with tern's log):

1. tern serves the zone signed at the file's serial (1); its AXFR verifies.
2. One record changes in the file (www's A) and `tern reload ZONE` is run: the next
   serial (2) is served, and the new version read back by AXFR differs from the first
   in exactly: the SOA, www's A, and the two RRSIGs over them. Every other record and
   every other RRSIG (the NSEC or NSEC3 chain's too: the salt is kept) is the first
   version's, octet for octet. It passes `dnssec-verify` and `ldns-verify-zone`, and
   an IXFR from serial 1 is that same difference (not the whole zone).
3. A name is added (`added A`) and the zone reloaded: serial 3, and the difference is
   the SOA, the new name's A and NSEC (or NSEC3), the NSEC (NSEC3) whose next name
   changed, and their RRSIGs; the IXFR from 2 says the same, and the zone verifies.
   tern's log says how many signatures each signing made and kept.
3b. A DNAME is made at a new name (`dn DNAME example.org.`, serial 4), its target
   changed (`example.net.`, serial 5), then removed (serial 6): each difference is the
   SOA, the DNAME, with their RRSIGs, and when the DNAME is made or removed dn's NSEC
   (NSEC3) and its predecessor's; the IXFR says the same, and the zone verifies (the
   DNAME's RRSIG over its new target, not the old one's kept).
4. After a restart the zone is served with a serial above the last (7), not the
   file's (the serial is kept in the state directory), and verifies.

Without incremental signing step 2 fails: every RRSIG differs between the versions.

A third zone, unix.test (NSEC, `serial-policy: unixtime`, its file at serial 1), checks
the serial policy: its first version is served at the Unix time of its signing (between
the time before tern started and the time it is read), an edit and `tern reload` serve
a higher serial that is the reload's Unix time (or one more than the last when in the
same second), and a restart one higher still. Without the policy the first check fails
(serial 1 is served).

Usage (from the repository root; loopback only; starts and stops its tern):

    TERN_BIN=target/release/tern python3 tests/dnssec/incremental.py
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import signing  # noqa: E402  (tests/dnssec/signing.py: the zone, tern, the verifiers)
from signing import SigningTern, axfr, fail, harness, run, serial, zone_text  # noqa: E402

ZONES = {"inc.test": "nsec", "inc3.test": "nsec3", "incopt.test": "optout"}
UNIX = "unix.test"
POLL = 0.05

Record = tuple[str, str, str, str]  # owner (lowercased), TTL, type, RDATA as dig prints it


def records(text: str) -> list[Record]:
    """The records of dig's output, in order."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(";"):
            continue
        fields = line.split()
        out.append((fields[0].lower(), fields[1], fields[3], " ".join(fields[4:])))
    return out


def covered(record: Record) -> str:
    """The type an RRSIG covers ('' for other records)."""
    return record[3].split()[0] if record[2] == "RRSIG" else ""


def verify(tern, origin: str, path: pathlib.Path) -> None:
    """The AXFR of `origin` (to `path`) passes dnssec-verify and ldns-verify-zone."""
    axfr(tern, origin, path)
    for command in (["dnssec-verify", "-z", "-o", f"{origin}.", str(path)],
                    ["ldns-verify-zone", str(path)]):
        done = run(command)
        if done.returncode != 0:
            fail(f"{command[0]} rejects {origin}: {done.stdout[-600:]} {done.stderr[-600:]}",
                 tern)


def expected_change(old: set[Record], new: set[Record], changed: set[tuple[str, str]]) -> None:
    """Between the two versions only the RRsets `changed` ((owner, type)) and the RRSIGs
    over them differ, and each of those does."""
    differ = old ^ new
    found = {(record[0], covered(record) or record[2]) for record in differ}
    if found != changed:
        fail(f"the versions differ in {sorted(found)}, wanted {sorted(changed)}: "
             f"{sorted(differ)[:12]}")
    for owner, rtype in changed:
        sigs = {record for record in differ if record[0] == owner and covered(record) == rtype}
        if not sigs:
            fail(f"the RRSIG over {owner} {rtype} was not made again")


def ixfr(tern, origin: str, since: int) -> tuple[set[Record], set[Record]]:
    """The records an IXFR from `since` deletes and adds (one difference: SOA new,
    SOA old, deleted, SOA new, added, SOA new; condensed when more)."""
    done = run(["dig", f"@{tern.addr[0]}", "-p", str(tern.addr[1]), f"{origin}.",
                f"IXFR={since}", "+nocmd", "+nostats"])
    listed = records(done.stdout)
    soas = [i for i, record in enumerate(listed) if record[2] == "SOA"]
    if len(soas) != 4 or soas[0] != 0 or soas[3] != len(listed) - 1:
        fail(f"IXFR of {origin} from {since} is not one difference: "
             f"{len(listed)} records, SOAs at {soas}: {done.stdout[-600:]}", tern)
    deleted = set(listed[soas[1]:soas[2]])
    added = set(listed[soas[2]:soas[3]])
    return deleted, added


def reload_and_wait(tern, socket: pathlib.Path, origin: str, wanted: int) -> float:
    """`tern reload ORIGIN`, then the seconds until serial `wanted` is served."""
    started = time.monotonic()
    done = run([str(tern.binary), "reload", "--socket", str(socket), f"{origin}."])
    if done.returncode != 0:
        fail(f"tern reload {origin}.: {done.stdout} {done.stderr}", tern)
    while serial(tern, origin) != wanted:
        if time.monotonic() - started > signing.WAIT:
            fail(f"{origin}: serial {wanted} not served {signing.WAIT}s after the reload", tern)
        time.sleep(POLL)
    return time.monotonic() - started


def check_edit(tern, tmp: pathlib.Path, origin: str, version: int, before: set[Record],
               changed: set[tuple[str, str]]) -> set[Record]:
    """The served version `version` (by AXFR) differs from `before` in `changed` only,
    verifies, and IXFR from the version before gives the same difference."""
    path = tmp / f"{origin}.{version}.axfr"
    verify(tern, origin, path)
    after = set(records(path.read_text()))
    expected_change(before, after, changed)
    deleted, added = ixfr(tern, origin, version - 1)
    soa_old = {r for r in before if r[2] == "SOA"}
    soa_new = {r for r in after if r[2] == "SOA"}
    if deleted != (before - after) | soa_old or added != (after - before) | soa_new:
        fail(f"{origin}: IXFR from {version - 1} deletes {sorted(deleted)[:6]} and adds "
             f"{sorted(added)[:6]}, not the difference of the AXFRs", tern)
    print(f"dnssec/incremental: {origin} serial {version}: {len(before - after)} records "
          f"deleted, {len(after - before)} added (RRsets {sorted(changed)}); IXFR from "
          f"{version - 1} the same; dnssec-verify and ldns-verify-zone accept it")
    return after


def wait_serial_change(tern, origin: str, old: int) -> int:
    """The serial `origin` serves once it is no longer `old`."""
    started = time.monotonic()
    while (now := serial(tern, origin)) == old:
        if time.monotonic() - started > signing.WAIT:
            fail(f"{origin}: serial still {old} {signing.WAIT}s after the reload", tern)
        time.sleep(POLL)
    return now


def check_unix_serial(tern, origin: str, since: int, before: int | None) -> int:
    """`origin`'s serial is the Unix time of a signing at or after `since` (and not
    after now), or one more than `before` when that is not lower; higher than
    `before`. Returns it."""
    got = serial(tern, origin)
    now = int(time.time())
    low = since if before is None else max(since, before + 1)
    high = now if before is None else max(now, before + 1)
    if got is None or not low <= got <= high:
        fail(f"{origin} (serial-policy: unixtime): serial {got} served, wanted the Unix "
             f"time of its signing, between {low} and {high} (served before: {before})", tern)
    return got


def check_unixtime(tern, tmp: pathlib.Path, zone_dir: pathlib.Path, socket: pathlib.Path,
                   started: int) -> int:
    """unix.test's serials follow `serial-policy: unixtime` at start and after an edit;
    returns the serial served last."""
    first = check_unix_serial(tern, UNIX, started, None)
    verify(tern, UNIX, tmp / f"{UNIX}.1.axfr")
    edited_at = int(time.time())
    (zone_dir / f"{UNIX}.zone").write_text(zone_text(UNIX, 1).replace(
        "www A 192.0.2.80", "www A 192.0.2.81"))
    done = run([str(tern.binary), "reload", "--socket", str(socket), f"{UNIX}."])
    if done.returncode != 0:
        fail(f"tern reload {UNIX}.: {done.stdout} {done.stderr}", tern)
    wait_serial_change(tern, UNIX, first)
    second = check_unix_serial(tern, UNIX, edited_at, first)
    verify(tern, UNIX, tmp / f"{UNIX}.2.axfr")
    print(f"dnssec/incremental: {UNIX} (unixtime, file serial 1): serial {first} at start "
          f"(tern started at {started}), {second} after an edit at {edited_at}; verifies")
    return second


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-incremental-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        listed = []
        for origin, policy in ZONES.items():
            (zone_dir / f"{origin}.zone").write_text(zone_text(origin, 1))
            listed.append(f"    - {{origin: {origin}, file: {zone_dir}/{origin}.zone, "
                          f"dnssec-policy: {policy}}}")
        (zone_dir / f"{UNIX}.zone").write_text(zone_text(UNIX, 1))
        listed.append(f"    - {{origin: {UNIX}, file: {zone_dir}/{UNIX}.zone, "
                      "dnssec-policy: unix}")
        socket = tmp / "tern.sock"
        config = f"""control-socket: {socket}
state-directory: {tmp}/state
transfer:
  allow: ["127.0.0.1"]
dnssec:
  policies:
    - name: nsec
    - name: nsec3
      nsec3: {{iterations: 0, salt-length: 4}}
    - name: optout
      nsec3: {{iterations: 0, salt-length: 4, opt-out: true}}
    - name: unix
      serial-policy: unixtime
zones:
  list:
""" + "\n".join(listed) + "\n"
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir,
                           list(ZONES) + [UNIX], config_text=config)
        try:
            started = int(time.time())
            tern.start()
            tern.wait_ready(signing.WAIT)
            unix_last = check_unixtime(tern, tmp, zone_dir, socket, started)
            for origin, policy in ZONES.items():
                denial = "NSEC" if policy == "nsec" else "NSEC3"
                zone_file = zone_dir / f"{origin}.zone"
                # 1. Signed whole at start.
                if serial(tern, origin) != 1:
                    fail(f"{origin}: serial {serial(tern, origin)} at start, not 1", tern)
                first_path = tmp / f"{origin}.1.axfr"
                verify(tern, origin, first_path)
                first = set(records(first_path.read_text()))

                # 2. One record changed: that RRset and the SOA signed again.
                zone_file.write_text(zone_text(origin, 1).replace(
                    "www A 192.0.2.80", "www A 192.0.2.81"))
                took = reload_and_wait(tern, socket, origin, 2)
                www = f"www.{origin}."
                second = check_edit(tern, tmp, origin, 2, first,
                                    {(f"{origin}.", "SOA"), (www, "A")})
                print(f"dnssec/incremental: {origin}: serial 2 served {took * 1000:.0f} ms "
                      f"after tern reload")

                # 3. A name added: its A, its denial record, its predecessor's.
                zone_file.write_text(zone_text(origin, 1, extra=True).replace(
                    "www A 192.0.2.80", "www A 192.0.2.81"))
                reload_and_wait(tern, socket, origin, 3)
                path = tmp / f"{origin}.3.axfr"
                third = set(records(axfr(tern, origin, path)))
                new_denial = {(r[0], r[2]) for r in third - second if r[2] == denial}
                if len(new_denial) != 2:
                    fail(f"{origin}: {denial} records changed: {sorted(new_denial)}, wanted "
                         "the new name's and its predecessor's", tern)
                third = check_edit(tern, tmp, origin, 3, second,
                                   {(f"{origin}.", "SOA"), (f"added.{origin}.", "A")}
                                   | new_denial)

                # 3b. A DNAME made at a new name (signed as a window since branch sign5,
                # before whole), its target changed, then removed: the DNAME, the SOA,
                # and when it comes or goes its owner's denial record, its predecessor's.
                text = zone_text(origin, 1, extra=True).replace(
                    "www A 192.0.2.80", "www A 192.0.2.81")
                dn = f"dn.{origin}."
                previous = third
                for version, target in ((4, "example.org."), (5, "example.net."), (6, None)):
                    zone_file.write_text(text + (f"dn DNAME {target}\n" if target else ""))
                    reload_and_wait(tern, socket, origin, version)
                    path = tmp / f"{origin}.{version}.axfr"
                    now = set(records(axfr(tern, origin, path)))
                    denials = {(r[0], r[2]) for r in now ^ previous if r[2] == denial}
                    if len(denials) != (0 if version == 5 else 2):
                        fail(f"{origin}: {denial} records changed with the DNAME: "
                             f"{sorted(denials)}, wanted dn's and its predecessor's (none "
                             "when its target changed)", tern)
                    previous = check_edit(tern, tmp, origin, version, previous,
                                          {(f"{origin}.", "SOA"), (dn, "DNAME")} | denials)

            log = tern.log_tail(100000)
            lines = [line for line in log.splitlines() if ": signed, " in line]
            made = [line for line in lines if "signatures made, 0 kept" not in line]
            if len(made) < 2 * len(ZONES):
                fail(f"tern's log does not say what each signing kept: {lines}", tern)
            print(f"dnssec/incremental: tern's log: {made[-1].strip()[-80:]}")

            # 4. A restart keeps the serial rising.
            tern.stop()
            restarted = int(time.time())
            tern.start()
            tern.wait_ready(signing.WAIT)
            after = check_unix_serial(tern, UNIX, restarted, unix_last)
            verify(tern, UNIX, tmp / f"{UNIX}.3.axfr")
            print(f"dnssec/incremental: {UNIX} after a restart at {restarted}: serial {after}")
            for origin in ZONES:
                if serial(tern, origin) != 7:
                    fail(f"{origin}: serial {serial(tern, origin)} after a restart, "
                         "not 7 (one above the last served)", tern)
                verify(tern, origin, tmp / f"{origin}.7.axfr")
            print("dnssec/incremental: after a restart: serial 7 served, verifies")
        finally:
            tern.stop()
    print("dnssec/incremental: ok")


if __name__ == "__main__":
    main()
