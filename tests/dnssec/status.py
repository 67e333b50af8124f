#!/usr/bin/env python3
"""Signed zones' status, metrics and failures (issue 24, "Control" and "Failure").

Three signed zones in one tern with `metrics.listen` set:

- st.test. (CSK, 14-day signatures), whose file holds a DNSKEY and an RRSIG of keys
  that are not the zone's;
- ex.test. (CSK, `rrsig-lifetime: 3600s`, `rrsig-refresh: 3590s`): signed again every
  few seconds, its signatures always near the refresh margin;
- ds.test. (KSK+ZSK, `propagation-delay: 0s`, `parent-ds-timeout: 2s`).

Checked (each step fails the script with tern's log):

1. The foreign keys: tern's log names their key tags in one warning at the load, and
   the AXFR of st.test. holds neither record (tern's own DNSKEY and RRSIGs only).
2. st.test.'s series agree with `tern zone-status` and with the AXFR: the earliest RRSIG
   expiration read from the transfer is `tern_zone_rrsig_expiry_timestamp_seconds` and
   zone-status's `rrsig-expiry`; the next re-sign, the last signing's time and its
   signatures are the same on both; one active CSK; no failure; `promtool check metrics`
   accepts the exposition.
3. A corrupt key makes a re-sign fail: st.test.'s CSK is overwritten with garbage and
   `tern reload st.test.` fails that zone; the previous version serves on (same serial,
   same earliest expiration), `tern_zone_signing_failures_total` is 1, and zone-status
   shows the failure with the key file's path.
4. A re-sign by the timer that fails while the signatures served expire within
   `rrsig-refresh`: ex.test.'s CSK is overwritten; tern's log says, at error, that the
   signatures served expire within the refresh margin; zone-status shows the failures
   and `EXPIRING`; the counter is above 0.
5. The parent wait: ds.test.'s first KSK awaiting its DS is no rollover (no
   `awaiting-ds-since`); after `tern keys rollover ds.test. ksk` the new KSK's DS is
   submitted, and once the wait is over `parent-ds-timeout` zone-status shows
   `DS-OVERDUE`, `tern_zone_ds_wait_overdue` is 1, and a signing (`tern reload`) logs it
   at error while the old KSK stays published (tern keeps waiting).

Every wait is for an event (a line in the log, a field in zone-status, a series in the
scrape), polled and bounded.

Usage (from the repository root; loopback only; starts and stops its tern):

    TERN_BIN=target/release/tern python3 tests/dnssec/status.py
"""

from __future__ import annotations

import base64
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.dnssec  # noqa: E402
import dns.rdata  # noqa: E402
import dns.rdataclass  # noqa: E402
import dns.rdatatype  # noqa: E402

import signing  # noqa: E402  (tests/dnssec/signing.py: the zone, tern, the verifiers)
from signing import SigningTern, axfr, fail, harness, query, run, serial, zone_text  # noqa: E402

ST = "st.test"
EX = "ex.test"
DS = "ds.test"
WAIT = 60.0
POLL = 0.2

# A DNSKEY and an RRSIG no key of tern's made (an ECDSA P-256 key's 64 octets).
FOREIGN_KEY = base64.b64encode(bytes(range(64))).decode()
FOREIGN_DNSKEY = f"257 3 13 {FOREIGN_KEY}"
FOREIGN_RRSIG_TAG = 4321
FOREIGN_RRSIG = (f"A 13 3 3600 20300101000000 20200101000000 {FOREIGN_RRSIG_TAG} {ST}. "
                 + base64.b64encode(bytes(64)).decode())


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def control(tern, *args: str) -> str:
    done = run([str(tern.binary), args[0], "--socket", str(tern.workdir.parent / "tern.sock"),
                *args[1:]])
    return done.stdout + done.stderr


def status(tern, origin: str) -> str:
    return control(tern, "zone-status", f"{origin}.")


def field(text: str, name: str) -> str | None:
    match = re.search(rf" {re.escape(name)} (\S+)", text)
    return match.group(1) if match else None


def scrape(tern, port: int) -> dict[str, float]:
    """The exposition's samples, `name{labels}` to value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


def promtool_check(tern, port: int) -> None:
    """`promtool check metrics` accepts the exposition, the signing series included."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True)
    if check.returncode != 0 or check.stdout.strip() or check.stderr.strip():
        fail(f"promtool check metrics: rc {check.returncode}\n{check.stdout}{check.stderr}",
             tern)


def sample(samples: dict[str, float], name: str, origin: str, extra: str = "") -> float | None:
    return samples.get(f'{name}{{zone="{origin}."{extra}}}')


def wait_for(what: str, tern, condition, timeout: float = WAIT):
    """Polls `condition` until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            fail(f"{what}: not seen within {timeout:.0f}s", tern)
        time.sleep(POLL)


def rrsig_expirations(text: str) -> list[int]:
    """The RRSIG expirations of an AXFR's text, as Unix times."""
    times = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 8 and parts[3] == "RRSIG":
            rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.RRSIG,
                                        " ".join(parts[4:]))
            times.append(rdata.expiration)
    return times


def log_lines(tern, pattern: str) -> list[str]:
    return [line for line in tern.log_tail(1_000_000).splitlines() if re.search(pattern, line)]


def corrupt(state: pathlib.Path, origin: str, role: str) -> pathlib.Path:
    directory = state / "keys" / f"{origin}."
    key = next(path for path in sorted(directory.iterdir())
               if path.name.startswith(f"{role}-") and path.name.endswith(".pem"))
    key.write_text("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
    return key


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-status-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        state = tmp / "state"
        (zone_dir / f"{ST}.zone").write_text(
            zone_text(ST, 1) + f"@ DNSKEY {FOREIGN_DNSKEY}\nwww RRSIG {FOREIGN_RRSIG}\n")
        (zone_dir / f"{EX}.zone").write_text(zone_text(EX, 1))
        (zone_dir / f"{DS}.zone").write_text(zone_text(DS, 1))
        foreign_tag = dns.dnssec.key_id(
            dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.DNSKEY, FOREIGN_DNSKEY))
        metrics_port = free_tcp_port()
        config = f"""control-socket: {tmp}/tern.sock
state-directory: {state}
metrics:
  listen: 127.0.0.1:{metrics_port}
transfer:
  allow: ["127.0.0.1"]
dnssec:
  policies:
    - name: long
    - name: short
      rrsig-lifetime: 3600s
      rrsig-refresh: 3590s
    - name: roll
      keys: ksk-zsk
      propagation-delay: 0s
      dnskey-ttl: 1
      parent-ds-timeout: 2s
zones:
  list:
    - {{origin: {ST}, file: {zone_dir}/{ST}.zone, dnssec-policy: long}}
    - {{origin: {EX}, file: {zone_dir}/{EX}.zone, dnssec-policy: short}}
    - {{origin: {DS}, file: {zone_dir}/{DS}.zone, dnssec-policy: roll}}
"""
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir, [ST, EX, DS],
                           config_text=config)
        try:
            tern.start()
            tern.wait_ready(signing.WAIT)

            # 1. The foreign keys: reported once, by tag; not served.
            pattern = rf"zone {re.escape(ST)}\.: its file holds RRSIG or DNSKEY records of keys"
            lines = log_lines(tern, pattern)
            tags = sorted([FOREIGN_RRSIG_TAG, foreign_tag])
            named = f"key tags {', '.join(map(str, tags))})"
            if len(lines) != 1 or named not in lines[0] or "WARN" not in lines[0].upper():
                fail(f"{ST}: wanted one warning naming {named}, got {lines}", tern)
            text = axfr(tern, ST, tmp / f"{ST}.1.axfr")
            if FOREIGN_KEY in text or f" {FOREIGN_RRSIG_TAG} {ST}. " in text:
                fail(f"{ST}: the foreign DNSKEY or RRSIG is served:\n{text}", tern)
            print(f"dnssec/status: {ST}: foreign keys reported once and replaced: "
                  f"{lines[0].strip()[-120:]}")

            # 2. Metrics, zone-status and the AXFR agree.
            expirations = rrsig_expirations(text)
            line = status(tern, ST)
            samples = scrape(tern, metrics_port)
            earliest = min(expirations)
            checks = {
                "rrsig expiry (metric)": (sample(samples, "tern_zone_rrsig_expiry_timestamp_seconds", ST), earliest),
                "rrsig expiry (zone-status)": (field(line, "rrsig-expiry"), str(earliest)),
                "next re-sign": (sample(samples, "tern_zone_next_resign_timestamp_seconds", ST),
                                 float(field(line, "next-resign") or "nan")),
                "last signing": (sample(samples, "tern_zone_signing_timestamp_seconds", ST),
                                 float(field(line, "last-signing") or "nan")),
                "signatures": (sample(samples, "tern_zone_signatures_made_total", ST),
                               float(field(line, "signatures") or "nan")),
                "failures": (sample(samples, "tern_zone_signing_failures_total", ST), 0),
                "failures (zone-status)": (field(line, "failures"), "0"),
                "policy": (field(line, "policy"), "long"),
                "active CSK": (sample(samples, "tern_zone_keys", ST, ',role="csk",state="active"'), 1),
                "refresh margin": (sample(samples, "tern_zone_rrsig_refresh_seconds", ST), 7 * 86400),
            }
            wrong = {name: got for name, got in checks.items() if got[0] != got[1]}
            if wrong:
                fail(f"{ST}: metrics, zone-status and AXFR disagree: {wrong}\n"
                     f"zone-status: {line}", tern)
            if len(expirations) < 10 or float(field(line, "signatures") or 0) < len(expirations):
                fail(f"{ST}: {len(expirations)} RRSIGs by AXFR, zone-status: {line}", tern)
            promtool_check(tern, metrics_port)
            duration = sample(samples, "tern_zone_signing_duration_seconds", ST)
            if duration is None or not 0 <= duration < 60:
                fail(f"{ST}: signing duration {duration}", tern)
            print(f"dnssec/status: {ST}: metrics agree with zone-status and the AXFR "
                  f"(earliest RRSIG expiration {earliest}, {len(expirations)} RRSIGs); "
                  f"zone-status: {line.strip()}")

            # 3. A corrupt key: the re-sign fails, the previous version serves on.
            served = serial(tern, ST)
            key = corrupt(state, ST, "csk")
            done = control(tern, "reload", f"{ST}.")
            if "1 failed to load, 1 of them kept their previous version" not in done:
                fail(f"tern reload {ST}. with a corrupt key: {done}", tern)
            if serial(tern, ST) != served:
                fail(f"{ST}: serial {served} no longer served after a failed signing", tern)
            after = rrsig_expirations(axfr(tern, ST, tmp / f"{ST}.2.axfr"))
            if min(after) != earliest:
                fail(f"{ST}: the served version changed: earliest expiration {min(after)}", tern)
            line = status(tern, ST)
            samples = scrape(tern, metrics_port)
            failures = sample(samples, "tern_zone_signing_failures_total", ST)
            if failures != 1 or field(line, "failures") != "1" or str(key) not in line:
                fail(f"{ST}: after a failed signing: failures metric {failures}, "
                     f"zone-status: {line}", tern)
            if sample(samples, "tern_zone_signing_failure_timestamp_seconds", ST) is None:
                fail(f"{ST}: no failure time in the metrics", tern)
            print(f"dnssec/status: {ST}: corrupt key: serial {served} serves on, failures 1; "
                  f"zone-status: {line.strip()[-160:]}")

            # 4. Re-signs by the timer keep failing near expiry: loud.
            wait_for(f"{EX}: a re-sign by the timer",
                     tern, lambda: log_lines(tern, rf"zone {re.escape(EX)}\.: its signatures near"))
            corrupt(state, EX, "csk")
            pattern = (rf"zone {re.escape(EX)}\.: signing failed \(\d+ failures so far\) and "
                       rf"the signatures served expire at \d+ \(in \d+ s, within rrsig-refresh")
            lines = wait_for(f"{EX}: the error that its signatures expire within the margin",
                             tern, lambda: log_lines(tern, pattern))
            if "ERROR" not in lines[0].upper():
                fail(f"{EX}: not logged at error: {lines[0]}", tern)
            line = status(tern, EX)
            failures = sample(scrape(tern, metrics_port), "tern_zone_signing_failures_total", EX)
            if "EXPIRING" not in line or not failures or int(field(line, "failures") or 0) < 1:
                fail(f"{EX}: failures metric {failures}, zone-status: {line}", tern)
            print(f"dnssec/status: {EX}: failing re-signs near expiry logged at error: "
                  f"{lines[0].strip()[-140:]}")

            # 5. The parent wait: overdue after parent-ds-timeout, loud, still waiting.
            line = status(tern, DS)
            if "awaiting-ds-since" in line:
                fail(f"{DS}: a first KSK is no rollover waiting: {line}", tern)
            control(tern, "keys", "rollover", f"{DS}.", "ksk")
            line = wait_for(f"{DS}: DS-OVERDUE in zone-status", tern,
                            lambda: (lambda text: "DS-OVERDUE" in text and text)(status(tern, DS)))
            overdue = sample(scrape(tern, metrics_port), "tern_zone_ds_wait_overdue", DS)
            if overdue != 1:
                fail(f"{DS}: tern_zone_ds_wait_overdue {overdue}", tern)
            control(tern, "reload", f"{DS}.")
            pattern = rf"zone {re.escape(DS)}\.: the key rollover has waited \d+ s for the parent's DS"
            lines = wait_for(f"{DS}: the overdue wait logged", tern,
                             lambda: log_lines(tern, pattern))
            if "ERROR" not in lines[0].upper():
                fail(f"{DS}: not logged at error: {lines[0]}", tern)
            keys = control(tern, "keys", "list", f"{DS}.")
            if len(re.findall(r"^\s+ksk ", keys, re.M)) != 2:
                fail(f"{DS}: wanted both KSKs published while waiting: {keys}", tern)
            print(f"dnssec/status: {DS}: rollover waiting past parent-ds-timeout: "
                  f"zone-status: {line.strip()[-120:]}; log: {lines[0].strip()[-100:]}")
        finally:
            tern.stop()
    print("dnssec/status: ok")


if __name__ == "__main__":
    main()
