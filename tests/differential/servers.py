"""Start and stop the servers under comparison: Knot, NSD and tern.

Each server runs in its own process group on its own 127.0.0.1 port, with all state in a
private temp directory. `stop()` only ever signals the process group it created.
"""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import time

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype

import wire


class ServerError(RuntimeError):
    pass


def free_port() -> int:
    """A port free for both UDP and TCP on 127.0.0.1 (the kernel picks it)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind(("127.0.0.1", 0))
            port = u.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
                try:
                    t.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise ServerError("no free port found")


class Server:
    """One server process. Subclasses write the config and give the command line."""

    name = "?"

    def __init__(self, workdir: pathlib.Path, zone_dir: pathlib.Path, zones: list[str]):
        self.workdir = workdir
        self.zone_dir = zone_dir
        self.zones = zones
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = workdir / f"{self.name}.log"
        workdir.mkdir(parents=True, exist_ok=True)

    @property
    def addr(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> None:
        cmd = self.command()
        self.log_file = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=self.log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() signals exactly that group
            )
        except OSError as e:
            raise ServerError(f"{self.name}: cannot start {cmd[0]}: {e}") from e

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, timeout: float, check_stop=lambda: None) -> None:
        """Wait until every zone's SOA is served authoritatively over UDP and TCP."""
        deadline = time.monotonic() + timeout
        pending = list(self.zones)
        last = ""
        while pending:
            check_stop()
            if not self.alive():
                raise ServerError(
                    f"{self.name} exited (code {self.proc.returncode}) while starting; log:\n{self.log_tail()}"
                )
            zone = pending[0]
            q = dns.message.make_query(zone + ".", dns.rdatatype.SOA)
            q.flags &= ~dns.flags.RD
            r = wire.exchange(q.to_wire(), self.addr, tcp=False, timeout=0.5, retries=0)
            if r.ok and r.rcode == dns.rcode.NOERROR and r.message.flags & dns.flags.AA and r.answer:
                pending.pop(0)
                continue
            last = r.error or f"rcode {dns.rcode.to_text(r.rcode)} flags {r.flags}"
            if time.monotonic() > deadline:
                raise ServerError(
                    f"{self.name} did not serve zone {zone} within {timeout:.0f}s (last: {last}); log:\n"
                    f"{self.log_tail()}"
                )
            time.sleep(0.1)
        # TCP must work too
        q = dns.message.make_query(self.zones[0] + ".", dns.rdatatype.SOA)
        r = wire.exchange(q.to_wire(), self.addr, tcp=True, timeout=2.0, retries=2)
        if not r.ok:
            raise ServerError(f"{self.name} does not answer over TCP: {r.error}; log:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            pgid = self.proc.pid  # start_new_session: the group id is the leader's pid
            for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(pgid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # children of the group (NSD forks) may outlive the leader briefly; reap the group
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.log_file.close()
        self.proc = None


class Knot(Server):
    name = "knot"

    def base_config(self) -> str:
        """The server, control, log and database sections, on this server's port and
        directory (the transfer tests add keys, remotes, ACLs and zones to it)."""
        (self.workdir / "db").mkdir(exist_ok=True)
        return f"""server:
    listen: 127.0.0.1@{self.port}
    rundir: {self.workdir}
    background-workers: 1
    udp-workers: 1
    tcp-workers: 1

control:
    listen: {self.workdir}/knot.sock

log:
  - target: stdout
    any: info

database:
    storage: {self.workdir}/db
"""

    @staticmethod
    def template(storage, journal: str = "none", load: str = "") -> str:
        """The default template: zone files in `storage`, never written back, the
        journal keeping `journal` (none, changes), no semantic checks; `load`: a
        `zonefile-load` mode, if any."""
        load_line = f"    zonefile-load: {load}\n" if load else ""
        return f"""template:
  - id: default
    storage: {storage}
    zonefile-sync: -1
{load_line}    journal-content: {journal}
    semantic-checks: off
"""

    def command(self) -> list[str]:
        conf = self.workdir / "knot.conf"
        zone_entries = "\n".join(f"  - domain: {z}\n    file: {z}.zone" for z in self.zones)
        conf.write_text(
            self.base_config()
            + f"""
{self.template(self.zone_dir, "none", "whole")}
zone:
{zone_entries}
"""
        )
        return ["knotd", "-c", str(conf)]


class Nsd(Server):
    name = "nsd"

    def server_section(self, zonesdir: pathlib.Path) -> str:
        """The server and remote-control sections (rate limiting off), zone files read
        from `zonesdir`."""
        return f"""server:
    ip-address: 127.0.0.1@{self.port}
    do-ip6: no
    server-count: 1
    username: ""
    chroot: ""
    zonesdir: "{zonesdir}"
    database: ""
    pidfile: "{self.workdir}/nsd.pid"
    xfrdfile: "{self.workdir}/xfrd.state"
    xfrdir: "{self.workdir}"
    zonelistfile: "{self.workdir}/zone.list"
    logfile: "{self.workdir}/nsd-internal.log"
    verbosity: 2
    rrl-ratelimit: 0
    rrl-whitelist-ratelimit: 0

remote-control:
    control-enable: no

"""

    def command(self) -> list[str]:
        conf = self.workdir / "nsd.conf"
        zone_entries = "\n".join(f"zone:\n    name: {z}\n    zonefile: {z}.zone\n" for z in self.zones)
        conf.write_text(self.server_section(self.zone_dir) + zone_entries)
        return ["nsd", "-d", "-c", str(conf)]

    def log_tail(self, lines: int = 30) -> str:
        own = super().log_tail(lines)
        try:
            internal = (self.workdir / "nsd-internal.log").read_text(errors="replace")
        except OSError:
            internal = ""
        return own + "\n" + "\n".join(internal.splitlines()[-lines:])


class Tern(Server):
    name = "tern"

    def __init__(self, binary: pathlib.Path, *args, **kwargs):
        self.binary = binary
        super().__init__(*args, **kwargs)

    def command(self) -> list[str]:
        return [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}", "--zones", str(self.zone_dir)]
