"""Signing the generated zones with BIND's dnssec-keygen and dnssec-signzone (bind9-utils).

Each signed group gets fresh keys (ECDSAP256SHA256: one KSK, one ZSK per zone) in its own
directory and one signed copy of every generated zone, all three servers serving the very same
signed files (so the signatures they hand out are the same bytes). Validity is fixed, not
relative to today, so the validator check can use a fixed `now` (VALIDATION_TIME).

Modes:
  nsec        NSEC chain
  nsec3       NSEC3, salt, a few extra iterations (hashing is exercised, not only iteration 0)
  nsec3-optout NSEC3 with opt-out: insecure delegations get no NSEC3 of their own
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

ALGORITHM = "ECDSAP256SHA256"
INCEPTION = "20240101000000"
EXPIRATION = "20491231000000"
# A moment inside [INCEPTION, EXPIRATION] and inside the corpora zones' validity (2015/2019 to
# 2050): the `now` every RRSIG is validated at.
VALIDATION_TIME = 1893456000  # 2030-01-01T00:00:00Z

MODES = {
    "nsec": [],
    "nsec3": ["-3", "CAFE01", "-H", "3"],
    "nsec3-optout": ["-3", "-", "-H", "0", "-A"],
}
TOOL_TIMEOUT = 60


class SignError(RuntimeError):
    pass


def have_tools() -> bool:
    return all(shutil.which(t) for t in ("dnssec-keygen", "dnssec-signzone"))


def _run(cmd: list[str], cwd: pathlib.Path) -> str:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SignError(f"{cmd[0]}: {e}") from e
    if done.returncode != 0:
        raise SignError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr.strip()}")
    return done.stdout


def sign_zones(
    src_dir: pathlib.Path, zones: list[str], out_dir: pathlib.Path, mode: str, work: pathlib.Path
) -> None:
    """Sign `src_dir/<zone>.zone` for every zone into `out_dir/<zone>.zone`."""
    extra = MODES[mode]
    out_dir.mkdir(parents=True, exist_ok=True)
    for zone in zones:
        keys = work / f"keys-{zone}"
        keys.mkdir(parents=True, exist_ok=True)
        ksk = _run(["dnssec-keygen", "-q", "-a", ALGORITHM, "-P", INCEPTION, "-A", INCEPTION, "-f", "KSK", "-K", str(keys), zone], work).strip()
        zsk = _run(["dnssec-keygen", "-q", "-a", ALGORITHM, "-P", INCEPTION, "-A", INCEPTION, "-K", str(keys), zone], work).strip()
        unsigned = work / f"{zone}.unsigned"
        text = (src_dir / f"{zone}.zone").read_text()
        for key in (ksk, zsk):
            text += "\n" + (keys / f"{key}.key").read_text()
        unsigned.write_text(text)
        _run(
            [
                "dnssec-signzone",
                "-q",
                "-K",
                str(keys),
                "-o",
                zone,
                "-k",
                ksk,
                "-s",
                INCEPTION,
                "-e",
                EXPIRATION,
                "-j",
                "0",
                *extra,
                "-f",
                str(out_dir / f"{zone}.zone"),
                str(unsigned),
                zsk,
            ],
            work,
        )
