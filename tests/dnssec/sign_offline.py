#!/usr/bin/env python3
"""`tern sign`: a configured zone signed offline, on one and on two threads (issue 24).

The two zones of tests/dnssec/signing.py (a delegation with glue, a secure delegation,
a wildcard, empty non-terminals) with 3,072 more names (three of the signer's batches of
1,024 names, so that two threads share the work), under the same two policies:

    csk.test.  ECDSA P-256, one CSK, NSEC
    kz.test.   Ed25519, a KSK and a ZSK, NSEC3 (no salt: the output is deterministic)

Checked, in order (each step fails the script with the command's output):

1. `tern sign --config tern.yaml --threads 1 -o OUT ORIGIN` and `--threads 2`, for both
   zones: each output passes BIND's `dnssec-verify` (`-z` for the CSK-only zone) and
   ldns's `ldns-verify-zone`, with the zone's keys from STATE/keys/ORIGIN (made by the
   first run, then read: the key files do not change).
2. kz.test. (Ed25519 signatures are deterministic) is byte-identical on one and on two
   threads; csk.test. (ECDSA nonces are random) is the same but for the signatures.
3. `--time` signs as at another time (the RRSIG inception is that time less an hour).
4. A zone the configuration does not name is refused, with its name in the message, and
   `-o` leaves no file behind.

Usage (from the repository root; no network; runs only `tern sign`):

    TERN_BIN=target/release/tern python3 tests/dnssec/sign_offline.py
"""

from __future__ import annotations

import os
import pathlib
import re
import datetime
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from signing import CSK, KZ, zone_text  # noqa: E402  (tests/dnssec/signing.py)

COMMAND_TIMEOUT = 120
# Names added to each zone: three batches of the signer's (tern_dnssec::zone::BATCH_NAMES).
HOSTS = 3 * 1024


def fail(message: str) -> None:
    print(f"dnssec/sign_offline: FAIL: {message}")
    sys.exit(1)


def run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)


def tern_binary() -> pathlib.Path:
    binary = pathlib.Path(os.environ.get("TERN_BIN", "target/release/tern"))
    if not binary.exists():
        fail(f"no tern binary at {binary} (make release)")
    return binary


def verify(origin: str, path: pathlib.Path, csk_only: bool) -> None:
    """The signed file passes dnssec-verify and ldns-verify-zone."""
    command = ["dnssec-verify", "-o", f"{origin}."] + (["-z"] if csk_only else []) + [str(path)]
    done = run(command)
    if done.returncode != 0:
        fail(f"dnssec-verify rejects {path.name}: {done.stdout[-600:]} {done.stderr[-600:]}")
    done = run(["ldns-verify-zone", str(path)])
    if done.returncode != 0:
        fail(f"ldns-verify-zone rejects {path.name}: {done.stdout[-600:]} {done.stderr[-600:]}")


def without_signatures(text: str) -> list[str]:
    """The lines, each RRSIG's last field (its signature, base64) left out."""
    lines = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) > 4 and fields[3] == "RRSIG":
            line = "\t".join(fields[:4] + [" ".join(fields[4].split(" ")[:8])])
        lines.append(line)
    return lines


def main() -> None:
    binary = tern_binary()
    with tempfile.TemporaryDirectory(prefix="tern-sign-") as tmp:
        tmp = pathlib.Path(tmp)
        state = tmp / "state"
        # Past one batch of 1,024 names, so that two threads each sign some.
        hosts = "".join(f"h{i} A 192.0.2.{i % 256}\n" for i in range(HOSTS))
        for origin in (CSK, KZ):
            (tmp / f"{origin}.zone").write_text(zone_text(origin, 1) + hosts)
        config = tmp / "tern.yaml"
        config.write_text(f"""state-directory: {state}
dnssec:
  signing-threads: 2
  policies:
    - name: csk
    - name: kz
      algorithm: ed25519
      keys: ksk-zsk
      nsec3: {{iterations: 0, salt-length: 0, opt-out: false}}
zones:
  list:
    - {{origin: {CSK}, file: {CSK}.zone, dnssec-policy: csk}}
    - {{origin: {KZ}, file: {KZ}.zone, dnssec-policy: kz}}
""")
        # A day ago, so that the signatures are valid now for the verifiers.
        now = int(time.time()) - 86_400
        outputs: dict[tuple[str, int], str] = {}
        keys_before: dict[str, dict[str, bytes]] = {}
        for threads in (1, 2):
            for origin in (CSK, KZ):
                out = tmp / f"{origin}.{threads}.signed"
                done = run([str(binary), "sign", "--config", str(config), "--threads",
                            str(threads), "--time", str(now), "-o", str(out), f"{origin}."])
                if done.returncode != 0:
                    fail(f"tern sign {origin} on {threads} thread(s): {done.stderr[-600:]}")
                summary = done.stderr.strip().splitlines()[-1]
                if f"on {threads} thread(s)" not in summary or "signatures" not in summary:
                    fail(f"tern sign's summary: {summary!r}")
                verify(origin, out, csk_only=origin == CSK)
                outputs[(origin, threads)] = out.read_text()
                keys = {path.name: path.read_bytes()
                        for path in sorted((state / "keys" / f"{origin}.").iterdir())}
                if origin not in keys_before:
                    keys_before[origin] = keys
                elif keys != keys_before[origin]:
                    fail(f"{origin}: the key files changed between two runs of tern sign")
                print(f"dnssec/sign_offline: {origin} on {threads} thread(s) verifies "
                      f"({summary.split(';')[-1].strip()})")

        if outputs[(KZ, 1)] != outputs[(KZ, 2)]:
            fail(f"{KZ} signed on two threads differs from one thread")
        if without_signatures(outputs[(CSK, 1)]) != without_signatures(outputs[(CSK, 2)]):
            fail(f"{CSK} signed on two threads differs from one thread (signatures aside)")
        print("dnssec/sign_offline: two threads make the same zones as one "
              f"({len(outputs[(KZ, 1)].splitlines())} and "
              f"{len(outputs[(CSK, 1)].splitlines())} records)")

        # 3. --time: inception one hour before it.
        expected = datetime.datetime.fromtimestamp(now - 3600, datetime.timezone.utc)
        inception = re.search(r"\tRRSIG\t\S+ \d+ \d+ \d+ \d+ (\d+) ", outputs[(CSK, 1)])
        if inception is None or inception.group(1) != expected.strftime("%Y%m%d%H%M%S"):
            fail(f"--time {now}: RRSIG inception {inception and inception.group(1)}")
        print("dnssec/sign_offline: --time signs as at that time")

        # 4. A zone not in the configuration.
        out = tmp / "other.signed"
        done = run([str(binary), "sign", "--config", str(config), "-o", str(out),
                    "other.test.", str(tmp / f"{CSK}.zone")])
        if done.returncode == 0 or "other.test" not in done.stderr:
            fail(f"a zone not configured: exit {done.returncode}, {done.stderr[-300:]!r}")
        if out.exists() or pathlib.Path(f"{out}.tmp").exists():
            fail("a refused zone left an output file")
        print("dnssec/sign_offline: a zone the configuration does not name is refused")
    print("dnssec/sign_offline: PASS")


if __name__ == "__main__":
    main()
