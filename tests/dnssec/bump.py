#!/usr/bin/env python3
"""tern as a "bump in the wire" signer (issue 24): secondary zones received unsigned from a
hidden primary, served signed.

    knotd (hidden primary, unsigned zones; NOTIFY to tern)
      └──► tern (zones.secondary with dnssec-policy; NOTIFY to BIND)
             └──► named (secondary of tern, transfers from 127.0.0.13)

Two zones (signing.py's: a delegation with glue, a signed delegation, a wildcard, an empty
non-terminal): csk.test. signed with a P-256 CSK and NSEC, kz.test. with a P-256 KSK and
ZSK and NSEC3. Knot serves them with serials 100, then 200 (an edit), then 300; tern's
serial is its own (one above the higher of the serial received and its own before), so no
serial Knot serves is ever one BIND serves.

Checked, in order (each step fails the script with the servers' logs):

1. BIND's first copy of each zone, read back by AXFR, passes dnssec-verify (and
   ldns-verify-zone and kzonecheck -d on); its serial is tern's, above Knot's.
2. An edit on Knot (the zone file, then `knotc zone-reload`): Knot NOTIFYs tern, tern
   receives it by IXFR (its log), signs it and NOTIFYs BIND, which gets it from tern by
   IXFR (tern's log of the transfer out to 127.0.0.13); BIND answers the new name with its
   RRSIG, and its copy verifies.
3. tern restarts: its first answer for each zone, before any transfer from Knot, is the
   signed version (its RRSIG with DO) at a serial not lower than before (tern's log: the
   saved signed version served); tern then signs again and BIND follows, still verifying.
4. A key file of csk.test. is moved away and Knot serves a new version: tern receives it,
   logs that it is not signed, and keeps serving the previous signed version (same serial,
   still verifying); the key put back, tern signs it on its retry and BIND gets it.

Every SOA BIND answers during the test (polled with DO) carries an RRSIG, and none has a
serial Knot served. Waits are for events (serials polled with a bound), never for time.

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/release/tern python3 tests/dnssec/bump.py
"""

from __future__ import annotations

import pathlib
import re
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.exception  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rdatatype  # noqa: E402

import signing  # noqa: E402  (tests/dnssec/signing.py)
from signing import CSK, KZ, SigningTern, harness, smod, zone_text  # noqa: E402

NAME = "dnssec/bump"
ZONES = [CSK, KZ]
# How long a server may take to serve a new version (a transfer, a signing).
WAIT = 60.0
# How long tern may take to try a failed signing again (resign::RETRY_FIRST is 30 s,
# doubled after each further failure).
RETRY_WAIT = 150.0
BIND_SOURCE = "127.0.0.13"


class Failed(Exception):
    pass


def fail(message: str) -> None:
    raise Failed(message)


class KnotPrimary(smod.Knot):
    """Knot serving the unsigned zones from `zone_dir`, with a journal of changes (so that
    tern's IXFR is answered with increments), NOTIFYing tern."""

    def __init__(self, workdir: pathlib.Path, zone_dir: pathlib.Path, tern_port: int):
        self.tern_port = tern_port
        super().__init__(workdir, zone_dir, ZONES)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        zones = "".join(f"  - domain: {zone}\n    file: {zone}.zone\n    notify: tern\n"
                        f"    acl: [local]\n" for zone in ZONES)
        conf.write_text(self.base_config() + f"""remote:
  - id: tern
    address: 127.0.0.1@{self.tern_port}
acl:
  - id: local
    address: 127.0.0.0/8
    action: transfer
{self.template(self.zone_dir, "changes", "difference")}zone:
{zones}""")
        return ["knotd", "-c", str(conf)]

    def reload(self, zone: str) -> None:
        done = signing.run(["knotc", "-s", str(self.workdir / "knot.sock"), "zone-reload",
                            f"{zone}."])
        if done.returncode != 0:
            fail(f"knotc zone-reload {zone}.: {done.stdout} {done.stderr}")


class BindSecondary(harness.Bind):
    """named as tern's secondary, transferring from BIND_SOURCE."""

    def __init__(self, workdir: pathlib.Path, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, workdir, ZONES)

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        options = (f"    notify no;\n    allow-notify {{ 127.0.0.0/8; }};\n"
                   f"    allow-transfer {{ 127.0.0.0/8; }};\n"
                   f"    transfer-source {BIND_SOURCE};\n"
                   f"    query-source address {BIND_SOURCE};")
        zones = "".join(f"""zone "{zone}" {{
    type secondary;
    primaries {{ 127.0.0.1 port {self.primary_port}; }};
    file "{self.workdir}/{zone}.db";
}};
""" for zone in ZONES)
        conf.write_text(self.options_section(options) + zones)
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


def soa(server: smod.Server, zone: str) -> tuple[int | None, bool]:
    """The zone's serial as `server` answers it over UDP with DO, and whether an RRSIG
    came with it; (None, False) without an answer."""
    query = dns.message.make_query(f"{zone}.", "SOA", want_dnssec=True)
    query.flags &= ~dns.flags.RD
    try:
        answer = dns.query.udp(query, server.addr[0], port=server.addr[1], timeout=1.0)
    except (dns.exception.Timeout, OSError):
        return None, False
    serial = next((rdata.serial for rrset in answer.answer for rdata in rrset
                   if rdata.rdtype == dns.rdatatype.SOA), None)
    signed = any(rrset.rdtype == dns.rdatatype.RRSIG for rrset in answer.answer)
    return serial, signed


def newer(a: int, b: int) -> bool:
    """Whether serial `a` is higher than `b` (RFC 1982)."""
    return a != b and (a - b) % 2**32 < 2**31


class Watch:
    """Every SOA BIND answers: each must be signed, and none at a serial Knot served."""

    def __init__(self, bind: smod.Server):
        self.bind = bind
        self.knot_serials: set[int] = set()
        self.seen: set[int] = set()

    def bind_soa(self, zone: str) -> int | None:
        serial, signed = soa(self.bind, zone)
        if serial is not None:
            if not signed:
                fail(f"BIND serves {zone}. serial {serial} without an RRSIG")
            if serial in self.knot_serials:
                fail(f"BIND serves {zone}. at serial {serial}, a serial Knot served "
                     f"(unsigned): {sorted(self.knot_serials)}")
            self.seen.add(serial)
        return serial


def wait_serial(what: str, poll, above: int | None, wait: float = WAIT) -> int:
    """Polls `poll()` until it answers a serial above `above` (any serial when None)."""
    deadline = time.monotonic() + wait
    while True:
        got = poll()
        if got is not None and (above is None or newer(got, above)):
            return got
        if time.monotonic() > deadline:
            fail(f"{what}: no serial above {above} within {wait:.0f}s (has {got})")
        time.sleep(0.1)


def wait_log(server: smod.Server, pattern: str, after: int, wait: float = WAIT) -> re.Match:
    """The first match of `pattern` in `server`'s log past offset `after`."""
    deadline = time.monotonic() + wait
    while True:
        text = server.log_path.read_text(errors="replace")[after:]
        found = re.search(pattern, text)
        if found:
            return found
        if time.monotonic() > deadline:
            fail(f"{server.name}'s log shows no {pattern!r} within {wait:.0f}s")
        time.sleep(0.1)


def log_size(server: smod.Server) -> int:
    return len(server.log_path.read_text(errors="replace"))


def verified(bind: smod.Server, zone: str, tmp: pathlib.Path, serial: int) -> None:
    """BIND's copy of `zone`, read back by AXFR, is at `serial` and verifies."""
    path = tmp / f"{zone}.bind.{serial}.axfr"
    text = signing.axfr(bind, zone, path)
    found = re.search(rf"^{re.escape(zone)}\.\s+\d+\s+IN\s+SOA\s+\S+\s+\S+\s+(\d+)", text,
                      re.MULTILINE)
    if not found or int(found.group(1)) != serial:
        fail(f"BIND's AXFR of {zone}. is not at serial {serial}: "
             f"{found.group(1) if found else 'no SOA'}")
    signing.verify_text(bind, zone, path, text, csk_only=zone == CSK)
    print(f"{NAME}: BIND's copy of {zone}. at serial {serial} verifies")


def edit(knot: KnotPrimary, zone_dir: pathlib.Path, watch: Watch, zone: str, serial: int,
         extra: bool) -> None:
    """Knot serves `zone` at `serial` (the file changed, then reloaded)."""
    (zone_dir / f"{zone}.zone").write_text(zone_text(zone, serial, extra=extra))
    watch.knot_serials.add(serial)
    knot.reload(zone)
    wait_serial(f"Knot's {zone}.", lambda: soa(knot, zone)[0], serial - 1)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-bump-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        for zone in ZONES:
            (zone_dir / f"{zone}.zone").write_text(zone_text(zone, 100))
        tern_port = smod.free_port()
        knot = KnotPrimary(tmp / "knot", zone_dir, tern_port)
        bind = BindSecondary(tmp / "bind", tern_port)
        state = tmp / "state"
        config = f"""control-socket: {tmp}/tern.sock
state-directory: {state}
transfer:
  allow: ["127.0.0.0/8"]
notify:
  targets: ["127.0.0.1:{bind.port}"]
dnssec:
  policies:
    - name: csk
    - name: kz
      keys: ksk-zsk
      nsec3: {{iterations: 0, salt-length: 0, opt-out: false}}
zones:
  secondary:
    - {{origin: {CSK}, primaries: ["127.0.0.1:{knot.port}"], dnssec-policy: csk}}
    - {{origin: {KZ}, primaries: ["127.0.0.1:{knot.port}"], dnssec-policy: kz}}
"""
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir, ZONES,
                           config_text=config)
        tern.port = tern_port
        watch = Watch(bind)
        watch.knot_serials.add(100)
        started = []
        try:
            for server in (knot, tern, bind):
                started.append(server)
                server.start()
                server.wait_ready(WAIT)

            # 1. The first signed copies.
            served = {}
            for zone in ZONES:
                served[zone] = wait_serial(f"BIND's {zone}.", lambda: watch.bind_soa(zone),
                                           None)
                tern_serial, signed = soa(tern, zone)
                if served[zone] != tern_serial or not signed:
                    fail(f"{zone}.: BIND serves serial {served[zone]}, tern {tern_serial} "
                         f"(signed: {signed})")
                verified(bind, zone, tmp, served[zone])
                print(f"{NAME}: {zone}. received at serial 100, served signed at "
                      f"{served[zone]}")

            # 2. An edit on Knot reaches BIND signed, by IXFR from tern.
            for zone in ZONES:
                mark = log_size(tern)
                edit(knot, zone_dir, watch, zone, 200, extra=True)
                wait_log(tern, rf"{re.escape(zone)}\.: serial 200 received from \S+ by IXFR",
                         mark)
                serial = wait_serial(f"BIND's {zone}.", lambda: watch.bind_soa(zone),
                                     served[zone])
                wait_log(tern, rf"{re.escape(zone)}\. IXFR, outgoing, to {BIND_SOURCE}, "
                               rf"serial {serial}:", mark)
                signing.signed_answer(bind, f"added.{zone}.", "A")
                verified(bind, zone, tmp, serial)
                print(f"{NAME}: {zone}. edited on Knot (serial 200): BIND got serial "
                      f"{serial} by IXFR from tern, the new name signed")
                served[zone] = serial

            # 3. A restart serves the signed version at once, then signs again.
            tern.stop()
            mark = 0
            tern.start()
            tern.wait_ready(WAIT)
            for zone in ZONES:
                serial, signed = soa(tern, zone)
                if serial is None or newer(served[zone], serial) or not signed:
                    fail(f"{zone}.: after the restart tern first serves serial {serial} "
                         f"(signed: {signed}), before it served {served[zone]}")
                wait_log(tern, rf"zone {re.escape(zone)}\.: serving its saved signed version",
                         mark)
                print(f"{NAME}: {zone}. after the restart: served signed at once, serial "
                      f"{serial}")
                after = wait_serial(f"BIND's {zone}.", lambda: watch.bind_soa(zone),
                                    served[zone])
                verified(bind, zone, tmp, after)
                served[zone] = after

            # 4. A key missing: the version received is not served; once the key is
            # back, it is signed on the retry.
            keys = state / "keys" / f"{CSK}."
            pems = sorted(keys.glob("*.pem"))
            if not pems:
                fail(f"no key file in {keys}: {sorted(p.name for p in keys.iterdir())}")
            hidden = tmp / pems[0].name
            pems[0].rename(hidden)
            mark = log_size(tern)
            edit(knot, zone_dir, watch, CSK, 300, extra=True)
            wait_log(tern, rf"{re.escape(CSK)}\.: serial 300 received from", mark)
            wait_log(tern, rf"zone {re.escape(CSK)}\.: the version received is not signed",
                     mark)
            serial, signed = soa(tern, CSK)
            if serial != served[CSK] or not signed:
                fail(f"{CSK}.: with a key missing tern serves serial {serial} (signed: "
                     f"{signed}), not the previous signed {served[CSK]}")
            verified(bind, CSK, tmp, watch.bind_soa(CSK) or 0)
            print(f"{NAME}: {CSK}. received at serial 300 with a key missing: not signed, "
                  f"serial {serial} serves on")
            hidden.rename(pems[0])
            after = wait_serial(f"BIND's {CSK}.", lambda: watch.bind_soa(CSK), served[CSK],
                                RETRY_WAIT)
            verified(bind, CSK, tmp, after)
            print(f"{NAME}: {CSK}. signed on the retry once its key is back: BIND serves "
                  f"serial {after}")
            if watch.seen & watch.knot_serials:
                fail(f"BIND served serials Knot served: {sorted(watch.seen)}")
            print(f"{NAME}: serials BIND served {sorted(watch.seen)}, Knot's "
                  f"{sorted(watch.knot_serials)}")
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
