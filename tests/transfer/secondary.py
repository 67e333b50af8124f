#!/usr/bin/env python3
"""tern as a secondary of Knot, BIND 9 and NSD, with TSIG (issue 10).

For each primary in turn, on loopback:

    primary (Knot / BIND / NSD, the key, NOTIFY to tern)  ──►  tern (zones.secondary, the key)

1. tern starts with no copy and must serve the zone, equal record for record to the
   primary's own AXFR of it (dnspython, every message's TSIG checked), and answer a
   list of questions (names that exist and do not, several types) as the primary does:
   rcode, AA, the answer section and the authority section's SOA;
2. the zone changes on the primary (serial + 1, one address changed, one name added, one
   removed) and the primary reloads it: Knot and BIND keep the difference (Knot's journal,
   BIND's `ixfr-from-differences`) and send NOTIFY; tern must then serve the new serial,
   although the SOA's REFRESH is an hour, and again equal the primary and answer as it
   does. Knot and BIND must log an outgoing IXFR (tern asked for the difference and got
   it); NSD 4.6 keeps no differences and answers tern's IXFR with the whole zone;
3. `tern zone-status` names the zone, its serial and how it came.

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/release/tern python3 tests/transfer/secondary.py [knot bind nsd]

Exits 1 on any failure, with the reason and the logs.
"""

from __future__ import annotations

import base64
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402  (tests/transfer/common.py)
from common import KEY_NAME, ZONE, axfr_records  # noqa: E402
import harness  # noqa: E402
import servers as smod  # noqa: E402

SECRET = base64.b64encode(bytes(range(40, 72))).decode()
# How long tern may take to transfer a zone once it is due (a NOTIFY, or start).
WAIT = 30.0
COMMAND_TIMEOUT = 30


def zone_text(serial: int, www: int, extra: str, hosts: int = 400) -> str:
    lines = [
        f"$ORIGIN {ZONE}.",
        "$TTL 300",
        f"@ SOA ns1 hostmaster {serial} 3600 3600 1209600 300",
        "  NS ns1",
        "ns1 A 192.0.2.1",
        f"www A 192.0.2.{www}",
        "mail MX 10 mx.example.net.",
        f"{extra} TXT \"{extra}\"",
    ]
    for i in range(hosts):
        lines.append(f"host{i} A 192.0.2.{i % 250 + 1}")
        lines.append(f'host{i} TXT "record {i}"')
    return "\n".join(lines) + "\n"


def fail(message: str, *servers: smod.Server) -> None:
    common.fail("secondary", message, *servers)


def records(addr) -> set:
    return axfr_records(addr, SECRET)


def wait_serial(tern, expected: int, *logs) -> None:
    common.wait_serial("secondary", tern, expected, WAIT, *logs)


class TernSecondary(harness.ConfiguredTern):
    def command(self) -> list[str]:
        return [str(self.binary), "serve", "--config", str(self.write_config())]

    def write_config(self) -> pathlib.Path:
        conf = self.workdir / "tern.yaml"
        conf.write_text(self.config_text)
        return conf


class KnotPrimary(smod.Knot):
    name = "knot"

    def __init__(self, workdir, zone_dir, zones, tern_port: int):
        self.tern_port = tern_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        conf.write_text(self.base_config() + f"""key:
  - id: {KEY_NAME}
    algorithm: hmac-sha256
    secret: {SECRET}
remote:
  - id: tern
    address: 127.0.0.1@{self.tern_port}
    key: {KEY_NAME}
acl:
  - id: tern
    address: 127.0.0.0/8
    key: {KEY_NAME}
    action: transfer
{self.template(self.zone_dir, "changes", "difference")}zone:
  - domain: {ZONE}
    file: {ZONE}.zone
    notify: tern
    acl: tern
""")
        return ["knotd", "-c", str(conf)]

    def reload(self) -> None:
        done = subprocess.run(["knotc", "-s", str(self.workdir / "knot.sock"), "zone-reload", ZONE],
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        if done.returncode != 0:
            fail(f"knotc zone-reload: {done.stdout}{done.stderr}", self)

    ixfr_log = r"IXFR, outgoing, remote 127\.0\.0\.1@\d+.*finished"


class BindPrimary(harness.Bind):
    def __init__(self, workdir, zone_dir, zones, tern_port: int):
        self.tern_port = tern_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        conf.write_text(self.options_section("") + f"""key "{KEY_NAME}" {{ algorithm hmac-sha256; secret "{SECRET}"; }};
zone "{ZONE}" {{
    type primary;
    file "{self.zone_dir}/{ZONE}.zone";
    ixfr-from-differences yes;
    notify explicit;
    also-notify {{ 127.0.0.1 port {self.tern_port} key "{KEY_NAME}"; }};
    allow-transfer {{ key "{KEY_NAME}"; }};
}};
""")
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]

    def reload(self) -> None:
        os.killpg(self.proc.pid, signal.SIGHUP)

    ixfr_log = r"client @\S+ 127\.0\.0\.1#\d+\S* .*transfer of 'example/IN': IXFR ended"


class NsdPrimary(smod.Nsd):
    def __init__(self, workdir, zone_dir, zones, tern_port: int):
        self.tern_port = tern_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "nsd.conf"
        conf.write_text(self.server_section(self.zone_dir) + f"""key:
    name: {KEY_NAME}
    algorithm: hmac-sha256
    secret: "{SECRET}"
zone:
    name: {ZONE}
    zonefile: {ZONE}.zone
    notify: 127.0.0.1@{self.tern_port} {KEY_NAME}
    provide-xfr: 127.0.0.0/8 {KEY_NAME}
""")
        return ["nsd", "-d", "-c", str(conf)]

    def reload(self) -> None:
        os.killpg(self.proc.pid, signal.SIGHUP)

    ixfr_log = None  # NSD 4.6 answers IXFR with the whole zone


PRIMARIES = {"knot": KnotPrimary, "bind": BindPrimary, "nsd": NsdPrimary}


# The questions asked of tern and its primary after each transfer: names that exist,
# that do not, and below the zone; the types the zone has and some it has not.
QUESTIONS = [(f"{owner}.{ZONE}.", rtype)
             for owner in ("www", "mail", "old", "new", "host0", "host7", "host399", "nx", "a.b")
             for rtype in ("A", "AAAA", "MX", "TXT", "NS")] + [
    (f"{ZONE}.", rtype) for rtype in ("SOA", "NS", "MX", "A")]


def same_answers(tern, primary, name: str) -> None:
    common.same_answers("secondary", tern, primary, QUESTIONS)


def run_with(name: str) -> None:
    with tempfile.TemporaryDirectory(prefix=f"tern-secondary-{name}-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        zone_file = zone_dir / f"{ZONE}.zone"
        zone_file.write_text(zone_text(1, 80, "old"))
        tern_port = smod.free_port()
        primary = PRIMARIES[name](tmp / name, zone_dir, [ZONE], tern_port)
        config = f"""listen: ["127.0.0.1:{tern_port}"]
control-socket: {tmp}/tern/tern.sock
state-directory: {tmp}/tern/state
keys:
  - {{name: {KEY_NAME}, algorithm: hmac-sha256, secret: "{SECRET}"}}
transfer:
  allow: ["127.0.0.0/8"]
  key: {KEY_NAME}
zones:
  secondary:
    - {{origin: {ZONE}., primaries: ["127.0.0.1:{primary.port}"], key: {KEY_NAME}}}
"""
        tern = TernSecondary(harness.tern_binary(), tmp / "tern", zone_dir, [ZONE],
                             config_text=config)
        tern.port = tern_port
        with harness.serving({"primary": primary}):
            with harness.serving({"tern": tern}):
                # 1. The first transfer.
                wait_serial(tern, 1, primary)
                if records(tern.addr) != records(primary.addr):
                    fail(f"{name}: tern's copy of serial 1 differs from the primary's", tern)
                same_answers(tern, primary, name)
                print(f"transfer/secondary: {name}: serial 1 transferred, equal to the primary; "
                      f"{len(QUESTIONS)} questions answered alike")

                # 2. A change, reloaded by the primary, announced by NOTIFY.
                zone_file.write_text(zone_text(2, 81, "new"))
                primary.reload()
                wait_serial(tern, 2, primary)
                got, expected = records(tern.addr), records(primary.addr)
                if got != expected:
                    fail(f"{name}: tern's copy of serial 2 differs: {sorted(got ^ expected)[:4]}",
                         tern)
                same_answers(tern, primary, name)
                how = "received"
                if primary.ixfr_log is not None:
                    log = primary.log_tail(100000)
                    line = next((l for l in log.splitlines() if re.search(primary.ixfr_log, l)),
                                None)
                    if line is None:
                        fail(f"{name} logged no outgoing IXFR ({primary.ixfr_log})", primary, tern)
                    how = f"by IXFR ({name}: {line.strip()[-90:]})"
                print(f"transfer/secondary: {name}: serial 2 {how}; equal to the primary")

                # 3. zone-status.
                status = subprocess.run(
                    [str(harness.tern_binary()), "zone-status", "--socket",
                     str(tmp / "tern" / "tern.sock")],
                    capture_output=True, text=True, timeout=COMMAND_TIMEOUT).stdout
                if not status.startswith(f"{ZONE}. role secondary serial 2 "):
                    fail(f"{name}: zone-status: {status}", tern)
                print(f"transfer/secondary: {name}: zone-status: {status.strip()[:120]}")


def main() -> None:
    names = sys.argv[1:] or list(PRIMARIES)
    for name in names:
        run_with(name)
    print("transfer/secondary: ok")


if __name__ == "__main__":
    main()
