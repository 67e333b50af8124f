#!/usr/bin/env python3
"""tern as a primary: Knot, NSD and BIND 9 transfer its zone with TSIG (issue 10).

    tern (primary, transfer.allow 127.0.0.0/8, transfer.key transfer-key)
      ├──► knotd  (secondary; `master: tern` with the key)
      ├──► nsd    (secondary; `request-xfr: AXFR ... transfer-key`)
      └──► named  (secondary; `primaries { ... key transfer-key; }`)

Each secondary starts with no copy of the zone and must serve it (authoritative SOA)
within a bounded wait; then its own AXFR of the zone, read by dnspython, must equal
tern's, record for record, and its log must show the transfer from tern's port. Then the
zone file changes and tern is sent SIGHUP: tern records the difference and sends NOTIFY
(signed) to the three, each must serve the new serial, equal to the changed zone, and
tern must log one signed incremental IXFR (8 records) out per secondary, and each
secondary must log it as an increment (Knot names the IXFR, NSD and BIND give its size). Before
that, clients: dnspython's `dns.query.xfr` with the key (dnspython checks the TSIG of
every message), `kdig` with `-y` (Knot's client), `dig` with `-y` (BIND's client), and
the refusals tern must give: no key REFUSED; an unknown key NOTAUTH/BADKEY; a wrong
secret NOTAUTH/BADSIG, each as kdig reports it.

Usage (from the repository root; loopback only; starts and stops every server):

    TERN_BIN=target/release/tern python3 tests/transfer/primary.py

Exits 1 on any failure, with the reason and the server's log.
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
from common import KEY_NAME, ZONE, axfr_records, text_records  # noqa: E402
import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)

SECRET = base64.b64encode(bytes(range(7, 39))).decode()
WRONG_SECRET = base64.b64encode(b"not the secret at all, 32 octet").decode()
# How long a secondary may take to transfer the zone and serve it.
TRANSFER_WAIT = 60.0
COMMAND_TIMEOUT = 30

# Asked of tern and each secondary after the change: rcode, AA, answer and the
# authority's SOA must be equal.
QUESTIONS = [(f"{owner}{ZONE}.", rtype)
             for owner in ("", "www.", "web.", "mail.", "ns1.", "added.", "removed.", "host0.",
                           "host1499.", "mixed.case.", "_sip._udp.", "nx.", "any.wild.")
             for rtype in ("A", "AAAA", "TXT", "MX", "SRV", "NS")] + [(f"{ZONE}.", "SOA")]

# The line each secondary logs for the IXFR of the change from tern.
INCREMENT_LOG = {
    "knot": r"IXFR, incoming, remote 127\.0\.0\.1@{port}, finished",
    "nsd": r"serial 2024010102 at \S+ from 127\.0\.0\.1@{port} TSIG verified with key "
           r"transfer-key of 266 bytes",
    "bind": r"from 127\.0\.0\.1#{port}: Transfer completed: 1 messages, 8 records",
}
# The line each secondary logs for a transfer from tern signed with the key.
TRANSFER_LOG = {
    # Knot 3.2 does not name the key; tern refuses unsigned transfers here.
    "knot": r"AXFR, incoming, remote 127\.0\.0\.1@{port}, finished",
    "nsd": r"from 127\.0\.0\.1@{port} TSIG verified with key {key}",
    "bind": r"transfer of 'example/IN' from 127\.0\.0\.1#{port}: Transfer completed",
}


def zone_text(serial: int = 2024010101, changed: bool = False) -> str:
    """A zone of a few thousand records of many types: delegations with glue, a
    wildcard, CNAME, MX, SRV, TXT, AAAA, names in mixed case; several TCP messages.
    `changed`: web's address differs, one name more and one less."""
    lines = [
        f"$ORIGIN {ZONE}.",
        "$TTL 300",
        f"@ SOA ns1 hostmaster {serial} 7200 3600 1209600 300",
        "  NS ns1",
        "  NS ns2",
        "  MX 10 mail",
        "ns1 A 192.0.2.1",
        "ns2 AAAA 2001:db8::2",
        "mail A 192.0.2.25",
        "* TXT \"wildcard\"",
        "www CNAME web",
        f"web A 192.0.2.{81 if changed else 80}",
        "added A 192.0.2.7" if changed else "removed A 192.0.2.8",
        "_sip._udp SRV 10 20 5060 sip",
        "sip A 192.0.2.60",
        "sub NS ns.sub",
        "ns.sub A 192.0.2.53",
        "Mixed.Case A 192.0.2.99",
    ]
    for i in range(1500):
        lines.append(f"host{i} A 192.0.2.{i % 250 + 1}")
        lines.append(f'host{i} TXT "record {i} {"t" * (i % 40)}"')
        if i % 5 == 0:
            lines.append(f"host{i} AAAA 2001:db8::{i:x}")
    return "\n".join(lines) + "\n"


def fail(message: str, *logs: smod.Server) -> None:
    common.fail("primary", message, *logs)


def client_tool(tool: str, addr, key: str | None) -> tuple[int, str]:
    command = [tool, f"@{addr[0]}", "-p", str(addr[1]), ZONE + ".", "AXFR"]
    if key:
        command[1:1] = ["-y", key]
    done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    return done.returncode, done.stdout + done.stderr


class TernPrimary(harness.ConfiguredTern):
    pass


class KnotSecondary(smod.Knot):
    name = "knot"

    def __init__(self, workdir, zone_dir, zones, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        conf.write_text(self.base_config() + f"""key:
  - id: {KEY_NAME}
    algorithm: hmac-sha256
    secret: {SECRET}
remote:
  - id: tern
    address: 127.0.0.1@{self.primary_port}
    key: {KEY_NAME}
acl:
  - id: local
    address: 127.0.0.0/8
    action: transfer
  - id: notify
    address: 127.0.0.1
    key: {KEY_NAME}
    action: notify
{self.template(self.workdir)}zone:
  - domain: {ZONE}
    master: tern
    acl: [local, notify]
""")
        return ["knotd", "-c", str(conf)]


class NsdSecondary(smod.Nsd):
    def __init__(self, workdir, zone_dir, zones, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "nsd.conf"
        conf.write_text(self.server_section(self.workdir) + f"""key:
    name: {KEY_NAME}
    algorithm: hmac-sha256
    secret: "{SECRET}"
zone:
    name: {ZONE}
    zonefile: {ZONE}.zone
    request-xfr: 127.0.0.1@{self.primary_port} {KEY_NAME}
    allow-notify: 127.0.0.1 {KEY_NAME}
    provide-xfr: 127.0.0.0/8 NOKEY
""")
        return ["nsd", "-d", "-c", str(conf)]


class BindSecondary(harness.Bind):
    def __init__(self, workdir, zone_dir, zones, primary_port: int):
        self.primary_port = primary_port
        super().__init__(workdir, zone_dir, zones)

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        options = "    notify no;\n    allow-notify { 127.0.0.1; };\n    allow-transfer { 127.0.0.0/8; };"
        conf.write_text(self.options_section(options) + f"""key "{KEY_NAME}" {{ algorithm hmac-sha256; secret "{SECRET}"; }};
zone "{ZONE}" {{
    type secondary;
    primaries {{ 127.0.0.1 port {self.primary_port} key "{KEY_NAME}"; }};
    file "{self.workdir}/{ZONE}.db";
}};
""")
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


def check_clients(tern: smod.Server, expected: set) -> None:
    # dnspython, checking every message's TSIG.
    got = axfr_records(tern.addr, SECRET)
    if got != expected:
        fail(f"dnspython AXFR differs from the zone file: {len(got ^ expected)} records", tern)
    print(f"transfer/primary: dnspython AXFR with TSIG: {len(got)} records, every message verified")

    key = f"hmac-sha256:{KEY_NAME}:{SECRET}"
    for tool in ("kdig", "dig"):
        code, output = client_tool(tool, tern.addr, key)
        soas = len(re.findall(r"\sIN\s+SOA\s", output))
        if code != 0 or soas != 2:
            fail(f"{tool} AXFR with the key: exit {code}, {soas} SOA records:\n{output[-2000:]}", tern)
        print(f"transfer/primary: {tool} AXFR with the key: ok")

    # Refusals, as Knot's client reports them.
    for key_arg, expected_text in (
        (None, "REFUSED"),
        (f"hmac-sha256:other-key:{SECRET}", "BADKEY"),
        (f"hmac-sha256:{KEY_NAME}:{WRONG_SECRET}", "BADSIG"),
    ):
        code, output = client_tool("kdig", tern.addr, key_arg)
        if expected_text not in output:
            fail(f"kdig AXFR with key {key_arg!r}: expected {expected_text}:\n{output[-2000:]}", tern)
        print(f"transfer/primary: kdig AXFR with key {key_arg!r}: {expected_text}")


def wait_serial(server: smod.Server, expected: int, *logs: smod.Server) -> None:
    common.wait_serial("primary", server, expected, TRANSFER_WAIT, *logs)


def wait_served(server: smod.Server) -> None:
    try:
        server.wait_ready(TRANSFER_WAIT)
    except smod.ServerError as e:
        fail(f"{server.name} did not serve the transferred zone: {e}", server)


def main() -> None:
    text = zone_text()
    with tempfile.TemporaryDirectory(prefix="tern-transfer-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        (zone_dir / f"{ZONE}.zone").write_text(text)
        expected = text_records(text)
        tern_port = smod.free_port()
        secondaries = [
            KnotSecondary(tmp / "knot", zone_dir, [ZONE], tern_port),
            NsdSecondary(tmp / "nsd", zone_dir, [ZONE], tern_port),
            BindSecondary(tmp / "bind", zone_dir, [ZONE], tern_port),
        ]
        targets = ", ".join(f'"127.0.0.1:{s.port}"' for s in secondaries)
        config = f"""keys:
  - {{name: {KEY_NAME}, algorithm: hmac-sha256, secret: "{SECRET}"}}
transfer:
  allow: ["127.0.0.0/8"]
  key: {KEY_NAME}
notify:
  targets: [{targets}]
  key: {KEY_NAME}
state-directory: {tmp}/tern-state
"""
        tern = TernPrimary(harness.tern_binary(), tmp / "tern", zone_dir, [ZONE], config_text=config)
        tern.port = tern_port
        with harness.serving({"tern": tern}):
            check_clients(tern, expected)
            started = []
            try:
                for secondary in secondaries:
                    secondary.start()
                    started.append(secondary)
                for secondary in secondaries:
                    wait_served(secondary)
                    got = axfr_records(secondary.addr, None)
                    if got != expected:
                        diff = sorted(got ^ expected)[:5]
                        fail(f"{secondary.name}'s copy differs from tern's zone: {diff}", secondary)
                    pattern = TRANSFER_LOG[secondary.name].format(port=tern.port, key=KEY_NAME)
                    log = secondary.log_tail(100000)
                    line = next((l for l in log.splitlines() if re.search(pattern, l)), None)
                    if line is None:
                        fail(f"{secondary.name}'s log shows no transfer from tern ({pattern})",
                             secondary)
                    print(f"transfer/primary: {secondary.name} transferred {len(got)} records "
                          f"from tern with TSIG; its copy equals the zone; its log: {line.strip()}")

                # A change: tern reloads it (SIGHUP), records the difference and
                # sends NOTIFY; each secondary asks for IXFR and gets the difference.
                (zone_dir / f"{ZONE}.zone").write_text(zone_text(2024010102, changed=True))
                changed = text_records(zone_text(2024010102, changed=True))
                os.killpg(tern.proc.pid, signal.SIGHUP)
                for secondary in secondaries:
                    wait_serial(secondary, 2024010102, tern)
                    got = axfr_records(secondary.addr, None)
                    if got != changed:
                        fail(f"{secondary.name}'s copy of the change differs: "
                             f"{sorted(got ^ changed)[:4]}", secondary)
                    common.same_answers("primary", secondary, tern, QUESTIONS)
                    print(f"transfer/primary: {secondary.name} serves serial 2024010102 after "
                          f"tern's NOTIFY; its copy equals the changed zone and it answers "
                          f"{len(QUESTIONS)} questions as tern does")
                # Each asked for IXFR and got the difference (8 records: three
                # SOAs of the new version, the old SOA, two deletions, two
                # additions), signed: one line in tern's log per secondary.
                pattern = (r"example\. IXFR, outgoing, to 127\.0\.0\.1, serial 2024010102: "
                           r"\d+ messages, 8 records, signed, in ")
                lines = [l for l in tern.log_tail(100000).splitlines() if re.search(pattern, l)]
                if len(lines) != len(secondaries):
                    fail(f"tern logged {len(lines)} incremental IXFRs, not {len(secondaries)} "
                         f"({pattern})", tern)
                print(f"transfer/primary: {len(lines)} incremental IXFRs out, e.g. {lines[0].strip()}")
                # And each secondary logged the change as an increment: Knot names
                # the IXFR; NSD and BIND give its size (266 octets, 8 records: the
                # whole zone would be 120 kB, 3,317 records).
                for secondary in secondaries:
                    pattern = INCREMENT_LOG[secondary.name].format(port=tern.port)
                    log = secondary.log_tail(100000)
                    line = next((l for l in log.splitlines() if re.search(pattern, l)), None)
                    if line is None:
                        fail(f"{secondary.name} logged no increment from tern ({pattern})",
                             secondary)
                    print(f"transfer/primary: {secondary.name}'s log: {line.strip()[-110:]}")
            finally:
                for secondary in started:
                    secondary.stop()
    print("transfer/primary: ok")


if __name__ == "__main__":
    main()
