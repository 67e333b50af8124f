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

Each time, each secondary's copy, read back by AXFR, equals tern's, record for record, and
passes `dnssec-verify` (and ldns-verify-zone and kzonecheck -d on, as in signing.py). A
secondary that gets the version in full instead of an increment fails the check, with the
kinds of transfer seen.

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
# How many times tern's version may move on while the secondaries catch up.
SETTLE_TRIES = 10
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


def records(server: smod.Server, zone: str) -> tuple[int, set]:
    """The zone by AXFR from `server`: its serial and its records (lowercased)."""
    messages = dns.query.xfr(server.addr[0], f"{zone}.", port=server.addr[1],
                             relativize=False, timeout=10, lifetime=60)
    copy = dns.zone.from_xfr(messages, relativize=False)
    return copy.get_soa().serial, common.zone_records(copy)


def settle(tern: smod.Server, secondaries: list[smod.Server], zone: str) -> tuple[int, set]:
    """Waits until every secondary serves the version tern serves (which may move on
    while they catch up: tern signs again on its own) and returns its serial and
    records, read from tern by AXFR."""
    for _ in range(SETTLE_TRIES):
        target = serial(tern, zone)
        for secondary in secondaries:
            deadline = time.monotonic() + TRANSFER_WAIT
            while serial(secondary, zone) != target:
                if time.monotonic() > deadline:
                    fail(f"{secondary.name} did not serve {zone}. serial {target} within "
                         f"{TRANSFER_WAIT:.0f}s (has {serial(secondary, zone)})", secondary,
                         tern)
                time.sleep(0.1)
        got_serial, tern_records = records(tern, zone)
        if got_serial == target:
            return target, tern_records
    fail(f"{zone}.: tern's serial moved {SETTLE_TRIES} times while the secondaries caught up",
         tern)
    raise AssertionError


def transfers(tern: smod.Server, zone: str, source: str) -> list[tuple[str, int, int]]:
    """(kind, serial, records) of each transfer of `zone` out to `source`, from tern's
    log."""
    pattern = re.compile(rf"{re.escape(zone)}\. (AXFR|IXFR(?: \([a-z ]+\))?), outgoing, to "
                         rf"{re.escape(source)}, serial (\d+): \d+ messages, (\d+) records")
    return [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in pattern.finditer(tern.log_path.read_text(errors="replace"))]


def check(step: str, wanted_kind: str, tern: smod.Server, secondaries: list[smod.Server],
          zone: str, tmp: pathlib.Path) -> int:
    """Every secondary serves tern's version of `zone`, brought by a transfer of
    `wanted_kind`, equal to tern's and verifying; returns the serial."""
    target, tern_records = settle(tern, secondaries, zone)
    for secondary in secondaries:
        source = SOURCES[secondary.name]
        seen = transfers(tern, zone, source)
        # The transfer that brought the version ("IXFR (current)" answers a check only).
        kind, size = next(((kind, size) for kind, number, size in reversed(seen)
                           if number == target and kind != "IXFR (current)"), (None, 0))
        if kind != wanted_kind:
            fail(f"{step}: {secondary.name} got {zone}. serial {target} by {kind}, not "
                 f"{wanted_kind} (transfers out to {source}: {seen})", tern, secondary)
        copy_serial, copy = records(secondary, zone)
        if copy_serial != target or copy != tern_records:
            fail(f"{step}: {secondary.name}'s copy of {zone}. (serial {copy_serial}) differs "
                 f"from tern's (serial {target}): {sorted(copy ^ tern_records)[:4]}",
                 secondary)
        signing.verify(secondary, zone, tmp / f"{zone}.{secondary.name}.{target}.axfr",
                       csk_only=zone == CSK)
        print(f"{NAME}: {step}: {secondary.name} serves {zone}. serial {target}, brought by "
              f"{kind} of {size} records (transfers out to it: {[k for k, _, _ in seen]}); "
              f"its copy equals tern's ({len(copy)} records) and verifies")
    return target


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
            edited = {}
            for zone in ZONES:
                first = check("AXFR", "AXFR", tern, secondaries, zone, tmp)
                # 2. An edit and `tern reload ZONE`: an increment.
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
                edited[zone] = check("edit", "IXFR", tern, secondaries, zone, tmp)

            # 3. A signature refresh, the file untouched: an increment again.
            for zone in ZONES:
                deadline = time.monotonic() + RESIGN_WAIT
                while (serial(tern, zone) or 0) <= edited[zone]:
                    if time.monotonic() > deadline:
                        fail(f"{zone}.: not signed again {RESIGN_WAIT}s after the edit", tern)
                    time.sleep(0.2)
                check("refresh", "IXFR", tern, secondaries, zone, tmp)
                log = tern.log_tail(100000)
                if f"zone {zone}.: its signatures near expiry" not in log:
                    fail(f"{zone}.: tern's log does not say it signed the zone again", tern)
        finally:
            for server in reversed(started):
                server.stop()
    print(f"{NAME}: ok")


if __name__ == "__main__":
    main()
