#!/usr/bin/env python3
"""tern receiving zones over TLS (XoT, RFC 9103) from BIND 9.18 (issue 26).

On loopback, with a throwaway CA and certificates made by openssl in a temporary
directory:

    BIND (plain DNS on P; TLS on T with a good certificate, on X with an expired one)
        ──TLS──►  tern (zones.secondary with tls:, the TSIG key inside TLS)

1. `tls: {name, ca}` to T: tern's first copy comes by AXFR over TLS, equal record for
   record to BIND's own AXFR; the zone changes, BIND reloads and NOTIFYs tern (port 53
   style, plain UDP), and tern gets serial 2 by IXFR over TLS (BIND logs it);
2. `tls: {pin}` (the SHA-256 of the certificate's SubjectPublicKeyInfo, computed by
   openssl) to T: serial 3 by IXFR over TLS;
3. refused, each with tern_xot_transfers_total{direction="in",outcome} counted, the
   reason logged and serial 3 still served while BIND serves 4: another key's pin
   (authentication_failed); the expired certificate on X with `ca`
   (authentication_failed); a `name` the certificate does not carry
   (authentication_failed); BIND's plain-DNS port P given as the TLS primary
   (handshake_failed: no TLS there, and no fallback to plain TCP);
4. `fallback: plain, plain-port: P` with the wrong pin: the TLS attempt fails and is
   counted, then serial 4 comes over plain DNS (outcome fallback_plain).

Between steps tern is restarted with the next configuration and the same state
directory, so it serves its saved copy at once; each refusal is waited for as the
metric's increase after `tern refresh`.

Usage (from the repository root):

    TERN_BIN=target/release/tern python3 tests/xot/xot_in.py

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
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "transfer"))

import common  # noqa: E402  (tests/transfer/common.py)
from common import KEY_NAME, ZONE  # noqa: E402
import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)

SCRIPT = "xot_in"
SECRET = base64.b64encode(bytes(range(90, 122))).decode()
# How long a transfer or a refusal may take once asked for: a server that does not
# speak TLS is given up after tern's 10 s read timeout.
WAIT = 40.0
COMMAND_TIMEOUT = 30
PRIMARY_NAME = "primary.xot.test"


def fail(message: str, *servers: smod.Server) -> None:
    print(f"xot/{SCRIPT}: FAIL: {message}")
    for server in servers:
        print(f"--- {server.name} log:\n{server.log_tail(60)}")
    sys.exit(1)


def run(cmd: list[str], cwd: pathlib.Path, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True,
                          timeout=COMMAND_TIMEOUT)
    if done.returncode != 0:
        fail(f"{' '.join(cmd)}: {done.stderr.decode(errors='replace')}")
    return done.stdout


def make_certificates(tmp: pathlib.Path) -> dict[str, str]:
    """A CA, a server certificate for PRIMARY_NAME and 127.0.0.1 signed by it, one
    expired (valid from now to a day ago), and another key; the pins of the good
    certificate and of the other key, as openssl computes them."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem",
         "-subj", "/CN=tern XoT test CA", "-days", "2"], tmp)
    (tmp / "san.ext").write_text(
        f"subjectAltName=DNS:{PRIMARY_NAME},IP:127.0.0.1\n"
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    for name, days in (("good", "2"), ("expired", "-1")):
        run(["openssl", "req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={PRIMARY_NAME}"], tmp)
        run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey",
             "ca.key", "-CAcreateserial", "-days", days, "-extfile", "san.ext",
             "-out", f"{name}.pem"], tmp)
    run(["openssl", "genpkey", "-algorithm", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-out", "other.key"], tmp)

    def pin_of(der_spki: bytes) -> str:
        digest = run(["openssl", "dgst", "-sha256", "-binary"], tmp, der_spki)
        return "sha256/" + base64.b64encode(digest).decode()

    good_pubkey = run(["openssl", "x509", "-in", "good.pem", "-pubkey", "-noout"], tmp)
    good_spki = run(["openssl", "pkey", "-pubin", "-outform", "der"], tmp, good_pubkey)
    other_spki = run(["openssl", "pkey", "-in", "other.key", "-pubout", "-outform", "der"], tmp)
    return {"good": pin_of(good_spki), "other": pin_of(other_spki)}


def zone_text(serial: int, www: int, hosts: int = 300) -> str:
    lines = [
        f"$ORIGIN {ZONE}.",
        "$TTL 300",
        f"@ SOA ns1 hostmaster {serial} 3600 3600 1209600 300",
        "  NS ns1",
        "ns1 A 192.0.2.1",
        f"www A 192.0.2.{www}",
        f"s{serial} TXT \"serial {serial}\"",
    ]
    lines += [f"host{i} A 192.0.2.{i % 250 + 1}" for i in range(hosts)]
    return "\n".join(lines) + "\n"


class BindXot(harness.Bind):
    """BIND 9.18: plain DNS on `port`, XoT on `tls_port` (good certificate) and
    `expired_port` (expired certificate); NOTIFY to tern."""

    def __init__(self, workdir, zone_dir, certs: pathlib.Path, tern_port: int):
        self.certs = certs
        self.tern_port = tern_port
        self.tls_port = smod.free_port()
        self.expired_port = smod.free_port()
        super().__init__(workdir, zone_dir, [ZONE])

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        extra = (f"    listen-on port {self.tls_port} tls good {{ 127.0.0.1; }};\n"
                 f"    listen-on port {self.expired_port} tls expired {{ 127.0.0.1; }};")
        tls = "".join(
            f'tls {name} {{ key-file "{self.certs}/{name}.key"; '
            f'cert-file "{self.certs}/{name}.pem"; }};\n' for name in ("good", "expired"))
        conf.write_text(tls + self.options_section("", extra) + f"""
key "{KEY_NAME}" {{ algorithm hmac-sha256; secret "{SECRET}"; }};
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


class TernXot(harness.ConfiguredTern):
    def command(self) -> list[str]:
        conf = self.workdir / "tern.yaml"
        conf.write_text(self.config_text)
        return [str(self.binary), "serve", "--config", str(conf)]


def tern_config(tmp: pathlib.Path, port: int, metrics_port: int, primary: int,
                tls: str) -> str:
    return f"""listen: ["127.0.0.1:{port}"]
control-socket: {tmp}/tern/tern.sock
state-directory: {tmp}/tern/state
metrics:
  listen: 127.0.0.1:{metrics_port}
keys:
  - {{name: {KEY_NAME}, algorithm: hmac-sha256, secret: "{SECRET}"}}
transfer:
  allow: ["127.0.0.0/8"]
zones:
  secondary:
    - {{origin: {ZONE}., primaries: ["127.0.0.1:{primary}"], key: {KEY_NAME}, tls: {tls}}}
"""


def xot_counts(metrics_port: int) -> dict[str, int]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    pattern = r'^tern_xot_transfers_total\{direction="in",outcome="(\w+)"\} (\d+)$'
    return {m.group(1): int(m.group(2)) for m in re.finditer(pattern, text, re.M)}


def tern_command(tmp: pathlib.Path, *args: str) -> str:
    done = subprocess.run([str(harness.tern_binary()), *args, "--socket",
                           str(tmp / "tern" / "tern.sock")],
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    return done.stdout + done.stderr


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-xot-in-") as tmp:
        tmp = pathlib.Path(tmp)
        certs = tmp / "certs"
        certs.mkdir()
        pins = make_certificates(certs)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        zone_file = zone_dir / f"{ZONE}.zone"
        zone_file.write_text(zone_text(1, 80))
        tern_port, metrics_port = smod.free_port(), smod.free_port()
        bind = BindXot(tmp / "bind", zone_dir, certs, tern_port)
        ca = f"{certs}/ca.pem"

        def tern_with(primary: int, tls: str) -> TernXot:
            tern = TernXot(harness.tern_binary(), tmp / "tern", zone_dir, [ZONE],
                           config_text=tern_config(tmp, tern_port, metrics_port, primary, tls))
            tern.port = tern_port
            return tern

        def bind_records() -> set:
            return common.axfr_records(bind.addr, SECRET)

        def change(serial: int) -> None:
            zone_file.write_text(zone_text(serial, 80 + serial))
            bind.reload()
            common.wait_serial(SCRIPT, bind, serial, WAIT, bind)

        def ixfr_lines() -> int:
            return sum(1 for line in bind.log_tail(100000).splitlines()
                       if re.search(r"transfer of 'example/IN': IXFR ended", line))

        with harness.serving({"bind": bind}):
            # 1. name + ca: AXFR, then IXFR after a NOTIFY.
            tern = tern_with(bind.tls_port, f"{{name: {PRIMARY_NAME}, ca: {ca}}}")
            with harness.serving({"tern": tern}):
                common.wait_serial(SCRIPT, tern, 1, WAIT, bind)
                if common.axfr_records(tern.addr, None) != bind_records():
                    fail("tern's copy of serial 1 differs from BIND's", tern, bind)
                ixfrs = ixfr_lines()
                change(2)
                common.wait_serial(SCRIPT, tern, 2, WAIT, bind)
                if common.axfr_records(tern.addr, None) != bind_records():
                    fail("tern's copy of serial 2 differs from BIND's", tern, bind)
                if ixfr_lines() <= ixfrs:
                    fail("BIND logged no IXFR out for serial 2", bind, tern)
                counts = xot_counts(metrics_port)
                if counts.get("received", 0) < 2:
                    fail(f"received over TLS not counted twice: {counts}", tern)
                print(f"xot/{SCRIPT}: name+ca: serial 1 by AXFR and 2 by IXFR over TLS from "
                      f"BIND; equal to BIND's; counted {counts}")

            # 2. pin: IXFR to serial 3.
            tern = tern_with(bind.tls_port, f"{{pin: '{pins['good']}'}}")
            with harness.serving({"tern": tern}):
                ixfrs = ixfr_lines()
                change(3)
                if common.serial(tern.addr) != 3:
                    # The NOTIFY may have come before tern listened: ask.
                    tern_command(tmp, "refresh", ZONE)
                common.wait_serial(SCRIPT, tern, 3, WAIT, bind)
                if common.axfr_records(tern.addr, None) != bind_records():
                    fail("tern's copy of serial 3 differs from BIND's", tern, bind)
                if ixfr_lines() <= ixfrs:
                    fail("BIND logged no IXFR out for serial 3", bind, tern)
                print(f"xot/{SCRIPT}: pin {pins['good']}: serial 3 by IXFR over TLS")

            change(4)
            # 3. Each refused: counted, logged, serial 3 kept.
            refusals = [
                ("another key's pin", bind.tls_port, f"{{pin: '{pins['other']}'}}",
                 "authentication_failed", "not accepted"),
                ("an expired certificate", bind.expired_port,
                 f"{{name: {PRIMARY_NAME}, ca: {ca}}}", "authentication_failed", "xpired"),
                ("a name the certificate lacks", bind.tls_port,
                 f"{{name: other.xot.test, ca: {ca}}}", "authentication_failed", "not valid for name"),
                ("a primary without TLS", bind.port, f"{{pin: '{pins['good']}'}}",
                 "handshake_failed", "TLS"),
            ]
            for what, port, tls, outcome, reason in refusals:
                tern = tern_with(port, tls)
                with harness.serving({"tern": tern}):
                    before = xot_counts(metrics_port)
                    tern_command(tmp, "refresh", ZONE)
                    deadline = time.monotonic() + WAIT
                    while xot_counts(metrics_port).get(outcome, 0) <= before.get(outcome, 0):
                        if time.monotonic() > deadline:
                            fail(f"{what}: {outcome} not counted: {xot_counts(metrics_port)}",
                                 tern)
                        time.sleep(0.1)
                    counts = xot_counts(metrics_port)
                    # The refresh failed and nothing else happened: no plain TCP fallback,
                    # nothing received.
                    if counts.get("received", 0) or counts.get("fallback_plain", 0):
                        fail(f"{what}: {counts}", tern)
                    if common.serial(tern.addr) != 3 or common.serial(bind.addr) != 4:
                        fail(f"{what}: tern serves {common.serial(tern.addr)}, not 3", tern)
                    log = tern.log_tail(200)
                    line = next((l for l in log.splitlines()
                                 if "refresh from" in l and "failed" in l), None)
                    if line is None or reason not in line or "no fallback" not in line:
                        fail(f"{what}: no failure logged with {reason!r}: {line}", tern)
                    print(f"xot/{SCRIPT}: {what}: refused ({outcome}), serial 3 kept; "
                          f"logged: {line.strip()[-150:]}")

            # 4. fallback: plain, with the wrong pin.
            tern = tern_with(bind.tls_port, f"{{pin: '{pins['other']}', fallback: plain, "
                                            f"plain-port: {bind.port}}}")
            with harness.serving({"tern": tern}):
                tern_command(tmp, "refresh", ZONE)
                common.wait_serial(SCRIPT, tern, 4, WAIT, bind)
                counts = xot_counts(metrics_port)
                if counts.get("authentication_failed", 0) < 1 or counts.get("fallback_plain", 0) < 1:
                    fail(f"fallback: {counts}", tern)
                print(f"xot/{SCRIPT}: fallback: plain: the wrong pin refused, serial 4 over "
                      f"plain DNS from port {bind.port}; counted {counts}")
    print(f"xot/{SCRIPT}: ok")


if __name__ == "__main__":
    main()
