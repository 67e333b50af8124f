#!/usr/bin/env python3
"""The Debian package `make deb` builds (scripts/build-deb.sh).

- its contents (dpkg-deb -c): the binary, the unit, the configuration and the example
  zone (conffiles), the tern(8) page, the copyright and changelog, all root-owned;
  its control fields and maintainer scripts (the `tern` system user);
- lintian: no error (E:) line;
- extracted with dpkg -x into a temporary root: `systemd-analyze verify` accepts the
  unit (a copy whose /usr/bin/tern is the extracted binary, with MANPATH on the
  extracted pages so that Documentation=man:tern(8) resolves), and reports a broken
  copy (so the check can fail); `man` renders the page without warnings;
- the extracted binary checks the extracted configuration, then serves it (the port
  overridden to a free loopback port, the zones to the extracted /etc/tern/zones, the
  control socket to a temp dir) until www.example.com answers from the example zone,
  and `tern stats` reads it.

  TERN_BIN=target/release/tern TERN_DEB=target/debian/tern_0.1.0-1_amd64.deb \
      python3 tests/service/package.py
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile

import common
from common import Failure

SCRIPT = "package.py"

# path -> mode, as dpkg-deb -c lists them.
EXPECTED = {
    "./usr/bin/tern": "-rwxr-xr-x",
    "./lib/systemd/system/tern.service": "-rw-r--r--",
    "./etc/tern/tern.yaml": "-rw-r--r--",
    "./etc/tern/zones/example.com.zone": "-rw-r--r--",
    "./usr/share/man/man8/tern.8.gz": "-rw-r--r--",
    "./usr/share/doc/tern/copyright": "-rw-r--r--",
    "./usr/share/doc/tern/changelog.Debian.gz": "-rw-r--r--",
}

# Settings the unit must have (issue 11), as `Key=value` lines.
UNIT_LINES = [
    "Type=notify",
    "User=tern",
    "ExecStartPre=/usr/bin/tern check --config /etc/tern/tern.yaml",
    "ExecStart=/usr/bin/tern serve --config /etc/tern/tern.yaml",
    "ExecReload=/bin/kill -HUP $MAINPID",
    "AmbientCapabilities=CAP_NET_BIND_SERVICE",
    "ProtectSystem=strict",
    "StateDirectory=tern",
    "RuntimeDirectory=tern",
]
UNIT_KEYS = ["LimitNOFILE=", "WatchdogSec=", "NoNewPrivileges=yes"]


def sh(*args, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("timeout", 300)
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)


def deb_path() -> pathlib.Path:
    if "TERN_DEB" in os.environ:
        path = pathlib.Path(os.environ["TERN_DEB"])
    else:
        version = sh(common.tern_binary(), "--version").stdout.split()[1]
        arch = sh("dpkg", "--print-architecture").stdout.strip()
        path = common.REPO / "target" / "debian" / f"tern_{version}-1_{arch}.deb"
    if not path.is_file():
        raise Failure(f"no package at {path} (make deb)")
    return path


def check_contents(deb: pathlib.Path, tmp: pathlib.Path) -> None:
    listing = sh("dpkg-deb", "-c", deb)
    if listing.returncode != 0:
        raise Failure(f"dpkg-deb -c: {listing.stderr}")
    entries = {}
    for line in listing.stdout.splitlines():
        fields = line.split()
        entries[fields[5]] = (fields[0], fields[1])
    for path, mode in EXPECTED.items():
        if path not in entries:
            raise Failure(f"{path} is not in the package:\n{listing.stdout}")
        if entries[path][0] != mode:
            raise Failure(f"{path} has mode {entries[path][0]}, want {mode}")
    owners = {owner for _, owner in entries.values()}
    if owners != {"root/root"}:
        raise Failure(f"files owned by {owners}, want root/root only")

    control = tmp / "control"
    result = sh("dpkg-deb", "-e", deb, control)
    if result.returncode != 0:
        raise Failure(f"dpkg-deb -e: {result.stderr}")
    fields = (control / "control").read_text()
    for needed in ["Package: tern\n", "adduser", "libc6 (>= "]:
        if needed not in fields:
            raise Failure(f"control has no {needed!r}:\n{fields}")
    conffiles = (control / "conffiles").read_text().split()
    if sorted(conffiles) != ["/etc/tern/tern.yaml", "/etc/tern/zones/example.com.zone"]:
        raise Failure(f"conffiles: {conffiles}")
    postinst = (control / "postinst").read_text()
    if "adduser --system --group" not in postinst or "tern" not in postinst:
        raise Failure("postinst does not create the tern system user")
    for script in ["postinst", "prerm", "postrm"]:
        result = sh("sh", "-n", control / script)
        if result.returncode != 0:
            raise Failure(f"{script} does not parse: {result.stderr}")


def check_lintian(deb: pathlib.Path) -> None:
    result = sh("lintian", "--no-tag-display-limit", deb)
    errors = [line for line in result.stdout.splitlines() if line.startswith("E:")]
    if errors or result.returncode not in (0, 1, 2):
        raise Failure(f"lintian (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    tags = [line for line in result.stdout.splitlines() if line[:2] in ("W:", "I:", "E:")]
    print(f"service/{SCRIPT}: lintian: no errors" + "".join(f"\n  {t}" for t in tags))


def check_unit(root: pathlib.Path, tmp: pathlib.Path) -> None:
    unit = (root / "lib/systemd/system/tern.service").read_text()
    lines = {line.strip() for line in unit.splitlines()}
    for line in UNIT_LINES:
        if line not in lines:
            raise Failure(f"the unit has no line {line!r}")
    for key in UNIT_KEYS:
        if not any(line.startswith(key) for line in lines):
            raise Failure(f"the unit sets no {key}")

    env = {**os.environ, "MANPATH": str(root / "usr/share/man")}
    binary = root / "usr/bin/tern"

    def verify(name: str, text: str) -> subprocess.CompletedProcess:
        path = tmp / "units" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text.replace("/usr/bin/tern", str(binary)))
        return sh("systemd-analyze", "verify", path, env=env)

    result = verify("tern.service", unit)
    if result.returncode != 0 or (result.stdout + result.stderr).strip():
        raise Failure(f"systemd-analyze verify (exit {result.returncode}):\n"
                      f"{result.stdout}{result.stderr}")
    broken = verify("tern-broken.service", unit.replace("Type=notify", "Type=notfy"))
    if "Type=notfy" in unit or "notfy" not in broken.stdout + broken.stderr:
        raise Failure(f"systemd-analyze verify did not report a broken unit:\n"
                      f"{broken.stdout}{broken.stderr}")


def check_manpage(root: pathlib.Path) -> None:
    page = root / "usr/share/man/man8/tern.8.gz"
    result = sh("man", "--warnings", "-l", page, env={**os.environ, "MANWIDTH": "80"})
    if result.returncode != 0 or result.stderr.strip():
        raise Failure(f"man -l {page}: {result.returncode} {result.stderr}")
    for needed in ["tern serve", "--listen", "SIGHUP", "/etc/tern/tern.yaml"]:
        if needed not in result.stdout.replace("\u2010", "-"):
            raise Failure(f"the manual page does not mention {needed}:\n{result.stdout}")


def check_serving(root: pathlib.Path, tmp: pathlib.Path) -> None:
    binary = root / "usr/bin/tern"
    config = root / "etc/tern/tern.yaml"
    zones = root / "etc/tern/zones"
    result = sh(binary, "check", "--config", config, "--zones", zones)
    if result.returncode != 0 or "1 zone(s) OK" not in result.stdout:
        raise Failure(f"tern check of the packaged configuration: {result.stdout}{result.stderr}")
    port = common.free_port()
    socket_path = tmp / "tern.sock"
    args = ["--config", str(config), "--listen", f"127.0.0.1:{port}", "--zones", str(zones),
            "--socket", str(socket_path)]
    with common.Tern(args, tmp / "tern.log", binary=binary) as tern:
        try:
            common.wait_for("the example zone's answer", lambda: common.answer(
                port, "www.example.com.") == ["192.0.2.80"], common.START_TIMEOUT, tern.proc)
            stats = sh(binary, "stats", "--socket", socket_path, timeout=common.EVENT_TIMEOUT)
            if stats.returncode != 0 or "all cores: queries" not in stats.stdout:
                raise Failure(f"tern stats: {stats.stdout}{stats.stderr}")
        except Failure as err:
            raise Failure(f"{err}\n--- tern log:\n{tern.log_text()}") from None


def main() -> None:
    deb = deb_path()
    state = pathlib.Path("/var/lib/tern")
    state_existed = state.exists()
    with tempfile.TemporaryDirectory(prefix="tern-deb-") as tmp:
        tmp = pathlib.Path(tmp)
        try:
            check_contents(deb, tmp)
            check_lintian(deb)
            root = tmp / "root"
            result = sh("dpkg", "-x", deb, root)
            if result.returncode != 0:
                raise Failure(f"dpkg -x: {result.stderr}")
            check_unit(root, tmp)
            check_manpage(root)
            check_serving(root, tmp)
        finally:
            # The packaged configuration names /var/lib/tern: leave no trace of this run.
            if not state_existed and state.exists():
                shutil.rmtree(state, ignore_errors=True)
    print(f"service/{SCRIPT}: {deb.name} installs, verifies and serves the example zone")


if __name__ == "__main__":
    common.run(SCRIPT, main)
