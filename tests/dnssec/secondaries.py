#!/usr/bin/env python3
"""Knot, NSD and BIND as secondaries of zones tern signs (issue 24).

    tern (primary; two signed zones; transfer.allow 127.0.0.0/8; NOTIFY to the three)
      ├──► knotd  (secondary, transfers from 127.0.0.11: Knot's `via`)
      ├──► nsd    (secondary, from 127.0.0.12: `outgoing-interface`; rrl-ratelimit 0)
      └──► named  (secondary, from 127.0.0.13: `transfer-source`)

The zones are signing.py's (a delegation with glue, a signed delegation, a wildcard, an
empty non-terminal): csk.test. with a P-256 CSK and NSEC, kz.test. with an Ed25519 KSK
and ZSK and NSEC3. The policy's signatures live 60 s and are made anew 40 s before they
expire (`rrsig-lifetime: 60s`, `rrsig-refresh: 40s`), so tern signs each zone again about
20 s after each signing, without its file changing.

Each secondary transfers from its own loopback address, so tern's log line for each
transfer out (`ZONE KIND, outgoing, to ADDRESS, serial N`) says which secondary got which
version and how: `AXFR`, `IXFR` (an increment from the history), `IXFR (in full)` (the
whole zone: no history back to the secondary's serial).

Checked, for each zone, three times:

1. AXFR: the secondaries start with no copy; each serves the serial tern serves, and
   tern's log shows an AXFR out to it.
2. An edit: the zone file changes (a new serial, a new name) and `tern reload ZONE`; each
   secondary, NOTIFYed, serves tern's new serial, and the transfer that brought it was
   an increment (`IXFR`).
3. A signature refresh: without a change of the file, tern serves a new version (a
   higher serial, its log saying the signatures neared expiry); each secondary serves it,
   brought by an `IXFR` again.

Each time, each secondary's copy, read back by AXFR, equals tern's at the same serial,
record for record, and that copy passes `dnssec-verify` (and ldns-verify-zone and
kzonecheck -d on, as in signing.py). A secondary that gets the version in full instead of
an increment fails the check, with the kinds of transfer seen.

tern re-signs in batches spread over `rrsig-jitter` (here 10 s, half the 20 s between a
signing and its refresh; each signature is its own batch at this scale), so its serial
moves every second or so once the first signatures near expiry, and the three secondaries
are seldom all at tern's serial at once. So each secondary is settled on its own: tern's
version is read by AXFR (serial and records at once), the check waits until the secondary
serves that serial or a newer one, and compares its copy, read by AXFR, with tern's. A copy
newer than tern's (tern signed again meanwhile and the secondary followed) settles again on
tern's newer version, at most SETTLE_TRIES times; a copy at tern's serial with other
records fails. The copy compared is the copy verified. The transfers checked are those to
the secondary since the step began, up to the one that brought the serial compared: the
first of the kind the step wants, every later one an increment (`IXFR`).

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/release/tern python3 tests/dnssec/secondaries.py
"""

from __future__ import annotations

import pathlib
import re
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "transfer"))

import dns.exception  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.zone  # noqa: E402

import common  # noqa: E402  (tests/transfer/common.py)
import signing  # noqa: E402  (tests/dnssec/signing.py)
from signing import CSK, KZ, SigningTern, harness, smod, zone_text  # noqa: E402

NAME = "dnssec/secondaries"
ZONES = [CSK, KZ]
LIFETIME = 60
REFRESH = 40
# How long a secondary may take to serve what tern serves; how long tern may take to
# sign a zone again (due LIFETIME - REFRESH seconds after each signing).
TRANSFER_WAIT = 60.0
RESIGN_WAIT = 3 * LIFETIME
# How many times a secondary's copy may be newer than tern's version read just before it.
SETTLE_TRIES = 20
# Each secondary's source address for its queries and transfers.
SOURCES = {"knot": "127.0.0.11", "nsd": "127.0.0.12", "bind": "127.0.0.13"}


def fail(message: str, *servers: smod.Server) -> None:
    print(f"{NAME}: FAIL: {message}")
    for server in servers:
        print(f"--- {server.name} log:\n{server.log_tail(40)}")
    sys.exit(1)


class KnotSecondary(smod.Knot):
    def __init__(self, workdir, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, workdir, ZONES)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        zones = "".join(f"  - domain: {zone}\n    master: tern\n    acl: [local]\n"
                        for zone in ZONES)
        conf.write_text(self.base_config() + f"""remote:
  - id: tern
    address: 127.0.0.1@{self.primary_port}
    via: {SOURCES['knot']}
acl:
  - id: local
    address: 127.0.0.0/8
    action: [transfer, notify]
{self.template(self.workdir, "changes")}zone:
{zones}""")
        return ["knotd", "-c", str(conf)]


class NsdSecondary(smod.Nsd):
    def __init__(self, workdir, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, workdir, ZONES)

    def command(self) -> list[str]:
        conf = self.workdir / "nsd.conf"
        zones = "".join(f"""zone:
    name: {zone}
    zonefile: {zone}.zone
    request-xfr: 127.0.0.1@{self.primary_port} NOKEY
    outgoing-interface: {SOURCES['nsd']}
    allow-notify: 127.0.0.0/8 NOKEY
    provide-xfr: 127.0.0.0/8 NOKEY
""" for zone in ZONES)
        conf.write_text(self.server_section(self.workdir) + zones)
        return ["nsd", "-d", "-c", str(conf)]


class BindSecondary(harness.Bind):
    def __init__(self, workdir, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, workdir, ZONES)

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        options = (f"    notify no;\n    allow-notify {{ 127.0.0.0/8; }};\n"
                   f"    allow-transfer {{ 127.0.0.0/8; }};\n"
                   f"    transfer-source {SOURCES['bind']};\n"
                   f"    query-source address {SOURCES['bind']};")
        zones = "".join(f"""zone "{zone}" {{
    type secondary;
    primaries {{ 127.0.0.1 port {self.primary_port}; }};
    file "{self.workdir}/{zone}.db";
}};
""" for zone in ZONES)
        conf.write_text(self.options_section(options) + zones)
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


def serial(server: smod.Server, zone: str) -> int | None:
    """The zone's serial as `server` answers it over UDP; None if it does not."""
    query = dns.message.make_query(f"{zone}.", "SOA")
    try:
        answer = dns.query.udp(query, server.addr[0], port=server.addr[1], timeout=1.0)
    except (dns.exception.Timeout, OSError):
        return None
    return next((rdata.serial for rrset in answer.answer for rdata in rrset
                 if rdata.rdtype == dns.rdatatype.SOA), None)


def newer(a: int, b: int) -> bool:
    """Whether serial `a` is higher than `b` (RFC 1982)."""
    return a != b and (a - b) % 2**32 < 2**31


def records(server: smod.Server, zone: str) -> tuple[int, set]:
    """The zone by AXFR from `server`: its serial and its records (lowercased)."""
    messages = dns.query.xfr(server.addr[0], f"{zone}.", port=server.addr[1],
                             relativize=False, timeout=10, lifetime=60)
    copy = dns.zone.from_xfr(messages, relativize=False)
    return copy.get_soa().serial, common.zone_records(copy)


def settled_copy(tern: smod.Server, secondary: smod.Server, zone: str,
                 tmp: pathlib.Path) -> tuple[int, pathlib.Path, str, int]:
    """tern's version of `zone` and `secondary`'s copy at one serial, compared: tern's read
    by AXFR (its serial and records at once), then the secondary's once it serves that
    serial or a newer one (tern signs again on its own and the secondary follows). A copy
    newer than tern's settles again on tern's newer version, at most SETTLE_TRIES times; a
    copy at that serial must equal tern's, record for record. Returns the serial, the
    copy's file and text, and its number of records."""
    for _ in range(SETTLE_TRIES):
        target, tern_records = records(tern, zone)
        deadline = time.monotonic() + TRANSFER_WAIT
        while True:
            got = serial(secondary, zone)
            if got is not None and (got == target or newer(got, target)):
                break
            if time.monotonic() > deadline:
                fail(f"{secondary.name} did not serve {zone}. serial {target} within "
                     f"{TRANSFER_WAIT:.0f}s (has {got})", secondary, tern)
            time.sleep(0.1)
        path = tmp / f"{zone}.{secondary.name}.{target}.axfr"
        text = signing.axfr(secondary, zone, path)
        copy_zone = dns.zone.from_text(text, origin=f"{zone}.", relativize=False)
        copy_serial, copy = copy_zone.get_soa().serial, common.zone_records(copy_zone)
        if newer(copy_serial, target):
            print(f"{NAME}: {secondary.name} serves {zone}. serial {copy_serial}, newer than "
                  f"tern's {target} read just before: settling again")
            continue
        if copy_serial != target or copy != tern_records:
            fail(f"{secondary.name}'s copy of {zone}. (serial {copy_serial}) differs from "
                 f"tern's (serial {target}): {sorted(copy ^ tern_records)[:4]}", secondary)
        return target, path, text, len(copy)
    fail(f"{zone}.: {secondary.name}'s copy was newer than tern's version read just before "
         f"it {SETTLE_TRIES} times", tern, secondary)
    raise AssertionError


def transfers(tern: smod.Server, zone: str, source: str) -> list[tuple[str, int, int]]:
    """(kind, serial, records) of each transfer of `zone` out to `source`, from tern's
    log."""
    pattern = re.compile(rf"{re.escape(zone)}\. (AXFR|IXFR(?: \([a-z ]+\))?), outgoing, to "
                         rf"{re.escape(source)}, serial (\d+): \d+ messages, (\d+) records")
    return [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in pattern.finditer(tern.log_path.read_text(errors="replace"))]


def mark(tern: smod.Server, zone: str) -> dict[str, int]:
    """How many transfers of `zone` out to each secondary tern's log holds now: where a
    step's transfers start."""
    return {source: len(transfers(tern, zone, source)) for source in SOURCES.values()}


def check(step: str, wanted_kind: str, tern: smod.Server, secondaries: list[smod.Server],
          zone: str, tmp: pathlib.Path, since: dict[str, int]) -> int:
    """Every secondary serves tern's version of `zone`: its copy equal to tern's at the
    same serial (`settled_copy`) and verifying; the transfers to it since the step began
    (`since`, from `mark`) one of `wanted_kind`, then increments only, the last bringing
    that serial. Returns the highest serial compared."""
    serials = []
    for secondary in secondaries:
        target, path, text, count = settled_copy(tern, secondary, zone, tmp)
        check_transfers(step, wanted_kind, tern, secondary, zone, target, since)
        signing.verify_text(secondary, zone, path, text, csk_only=zone == CSK)
        print(f"{NAME}: {step}: {secondary.name}'s copy of {zone}. at serial {target} equals "
              f"tern's ({count} records) and verifies")
        serials.append(target)
    return max(serials, key=lambda number: (number - serials[0]) % 2**32)


def check_transfers(step: str, wanted_kind: str, tern: smod.Server, secondary: smod.Server,
                    zone: str, target: int, since: dict[str, int]) -> None:
    """The transfers of `zone` out to `secondary` since the step began, up to the one that
    brought `target` ("IXFR (current)" answers a check only, and is left out; those after
    it bring later versions): the first of `wanted_kind`, every later one an `IXFR`."""
    source = SOURCES[secondary.name]
    seen = transfers(tern, zone, source)
    step_seen = [(kind, number, size) for kind, number, size in seen[since[source]:]
                 if kind != "IXFR (current)"]
    brought = max((index for index, (_, number, _) in enumerate(step_seen)
                   if number == target), default=None)
    kinds = [kind for kind, _, _ in step_seen[:brought + 1]] if brought is not None else []
    if not kinds or kinds[0] != wanted_kind or any(kind != "IXFR" for kind in kinds[1:]):
        fail(f"{step}: {secondary.name} got {zone}. serial {target} by {kinds}, not "
             f"{wanted_kind} then increments only (transfers out to {source}: {seen})",
             tern, secondary)
    sizes = ", ".join(f"{kind} of serial {number}, {size} records"
                      for kind, number, size in step_seen[:brought + 1])
    print(f"{NAME}: {step}: {secondary.name} serves {zone}. serial {target}, brought by "
          f"{sizes}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-secondaries-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        for zone in ZONES:
            (zone_dir / f"{zone}.zone").write_text(zone_text(zone, 1))
        tern_port = smod.free_port()
        secondaries = [KnotSecondary(tmp / "knot", tern_port),
                       NsdSecondary(tmp / "nsd", tern_port),
                       BindSecondary(tmp / "bind", tern_port)]
        targets = ", ".join(f'"127.0.0.1:{s.port}"' for s in secondaries)
        config = f"""control-socket: {tmp}/tern.sock
state-directory: {tmp}/state
transfer:
  allow: ["127.0.0.0/8"]
notify:
  targets: [{targets}]
dnssec:
  policies:
    - name: csk
      rrsig-lifetime: {LIFETIME}s
      rrsig-refresh: {REFRESH}s
    - name: kz
      algorithm: ed25519
      keys: ksk-zsk
      rrsig-lifetime: {LIFETIME}s
      rrsig-refresh: {REFRESH}s
      nsec3: {{iterations: 0, salt-length: 4, opt-out: false}}
zones:
  list:
    - {{origin: {CSK}, file: {zone_dir}/{CSK}.zone, dnssec-policy: csk}}
    - {{origin: {KZ}, file: {zone_dir}/{KZ}.zone, dnssec-policy: kz}}
"""
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir, ZONES,
                           config_text=config)
        tern.port = tern_port
        started = []
        try:
            started.append(tern)
            tern.start()
            tern.wait_ready(signing.WAIT)
            for secondary in secondaries:
                started.append(secondary)
                secondary.start()
            for secondary in secondaries:
                try:
                    secondary.wait_ready(TRANSFER_WAIT)
                except smod.ServerError as e:
                    fail(f"{secondary.name} did not serve the zones: {e}", secondary, tern)

            # 1. The first copies: AXFR.
            edited, refreshed_since = {}, {}
            start = {zone: {source: 0 for source in SOURCES.values()} for zone in ZONES}
            for zone in ZONES:
                first = check("AXFR", "AXFR", tern, secondaries, zone, tmp, start[zone])
                # 2. An edit and `tern reload ZONE`: an increment.
                since = mark(tern, zone)
                (zone_dir / f"{zone}.zone").write_text(zone_text(zone, first + 1, extra=True))
                done = signing.run([str(tern.binary), "reload", "--socket",
                                    f"{tmp}/tern.sock", f"{zone}."])
                if done.returncode != 0:
                    fail(f"tern reload {zone}.: {done.stdout} {done.stderr}", tern)
                deadline = time.monotonic() + signing.WAIT
                while (serial(tern, zone) or 0) <= first:
                    if time.monotonic() > deadline:
                        fail(f"{zone}.: no new serial {signing.WAIT:.0f}s after the edit", tern)
                    time.sleep(0.1)
                edited[zone] = check("edit", "IXFR", tern, secondaries, zone, tmp, since)
                # The refresh's transfers start here (tern may sign again at once).
                refreshed_since[zone] = mark(tern, zone)

            # 3. A signature refresh, the file untouched: an increment again.
            for zone in ZONES:
                deadline = time.monotonic() + RESIGN_WAIT
                while (serial(tern, zone) or 0) <= edited[zone]:
                    if time.monotonic() > deadline:
                        fail(f"{zone}.: not signed again {RESIGN_WAIT}s after the edit", tern)
                    time.sleep(0.2)
                check("refresh", "IXFR", tern, secondaries, zone, tmp, refreshed_since[zone])
                log = tern.log_tail(100000)
                if f"zone {zone}.: its signatures near expiry" not in log:
                    fail(f"{zone}.: tern's log does not say it signed the zone again", tern)
        finally:
            for server in reversed(started):
                server.stop()
    print(f"{NAME}: ok")


if __name__ == "__main__":
    main()
