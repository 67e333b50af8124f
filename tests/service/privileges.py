#!/usr/bin/env python3
"""`user: NAME`: tern started as root binds its sockets, then every thread becomes NAME
with NAME's group and supplementary groups, before it serves.

Creates the system user `tern-test` (and the extra group `tern-test-extra`, a
supplementary group of it) when absent, and removes what it created at the end. Starts
tern as root with `user: tern-test` on a loopback port and checks, for every thread in
/proc/PID/task, that the Uid and Gid lines are the user's four times and that Groups
lists exactly its groups; that it answers; that `tern stats` reaches the control
socket it created as that user; that a SIGHUP reload (zone files read as the user)
serves the changed zone. What needs root is done before the drop and the rest after it
(issue 22): the metrics endpoint on a port below 1024 answers, and the dnstap writer's
first connection to its socket comes from the user (SO_PEERCRED), as every later one
would. Then `user: tern-no-such-user` must fail the start with an error naming the user,
before anything is bound. Needs root (CI runs as root).

  TERN_BIN=target/release/tern python3 tests/service/privileges.py
"""

from __future__ import annotations

import grp
import os
import pathlib
import pwd
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import urllib.request

import common
from common import Failure

SCRIPT = "privileges.py"
USER = "tern-test"
EXTRA_GROUP = "tern-test-extra"


def ensure_account(created: list[tuple[str, str]]) -> None:
    """Creates the group and the user if absent; records what it created."""
    try:
        grp.getgrnam(EXTRA_GROUP)
    except KeyError:
        subprocess.run(["groupadd", "--system", EXTRA_GROUP], check=True)
        created.append(("group", EXTRA_GROUP))
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                        "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                        "--groups", EXTRA_GROUP, USER], check=True)
        created.insert(0, ("user", USER))
    if USER not in grp.getgrnam(EXTRA_GROUP).gr_mem:
        subprocess.run(["usermod", "--append", "--groups", EXTRA_GROUP, USER], check=True)


def remove_accounts(created: list[tuple[str, str]]) -> None:
    for kind, name in created:
        subprocess.run(["userdel" if kind == "user" else "groupdel", name], check=False)


def task_ids(pid: int) -> list[tuple[str, str, str, str]]:
    """(thread name, Uid line, Gid line, Groups line) of every thread of `pid`."""
    out = []
    for task in sorted(pathlib.Path(f"/proc/{pid}/task").iterdir()):
        try:
            lines = (task / "status").read_text().splitlines()
        except FileNotFoundError:
            continue
        fields = {line.split(":", 1)[0]: line.split(":", 1)[1].split() for line in lines
                  if ":" in line}
        out.append((" ".join(fields["Name"]), fields["Uid"], fields["Gid"],
                    fields.get("Groups", [])))
    return out


def main() -> None:
    if os.geteuid() != 0:
        raise Failure("run as root (CI does): only root can change user")
    created: list[tuple[str, str]] = []
    try:
        ensure_account(created)
        account = pwd.getpwnam(USER)
        groups = sorted({account.pw_gid, grp.getgrnam(EXTRA_GROUP).gr_gid})
        with tempfile.TemporaryDirectory(prefix="tern-user-") as tmp:
            tmp = pathlib.Path(tmp)
            # The user reads the zones at a reload and creates the control socket.
            os.chmod(tmp, 0o755)
            # Not made here: tern makes the control socket's directory for
            # the user before it becomes the user (as /run/tern as root).
            run_dir = tmp / "run"
            check_user(tmp, run_dir, account, groups)
            check_missing_user(tmp)
    finally:
        remove_accounts(created)


def free_low_port() -> int:
    """A free TCP port below 1024 on 127.0.0.1 (only root binds one)."""
    for port in range(1023, 900, -1):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise Failure("no free port below 1024 on 127.0.0.1")


class PeerCredentials:
    """A Unix socket that records the uid of whoever connects first."""

    def __init__(self, path: pathlib.Path) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        os.chmod(path, 0o777)  # the user may connect
        self.listener.listen(4)
        self.uids: list[int] = []
        self.connected = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        with connection:
            creds = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                          struct.calcsize("3i"))
            self.uids.append(struct.unpack("3i", creds)[1])
            self.connected.set()

    def close(self) -> None:
        self.listener.close()


def check_user(tmp: pathlib.Path, run_dir: pathlib.Path, account, groups) -> None:
    zones = tmp / "zones"
    zones.mkdir()
    zone = zones / "example.com.zone"
    zone.write_text(common.ZONE.format(serial=1, address="192.0.2.80"))
    port = common.free_port()
    metrics_port = free_low_port()
    socket_path = run_dir / "tern.sock"
    tap = PeerCredentials(tmp / "tap.sock")
    config = tmp / "tern.yaml"
    config.write_text(f"user: {USER}\nlisten: ['127.0.0.1:{port}']\n"
                      f"zones: {{directory: {zones}}}\ncontrol-socket: {socket_path}\n"
                      f"metrics: {{listen: '127.0.0.1:{metrics_port}'}}\n"
                      f"dnstap: {{socket: {tmp / 'tap.sock'}}}\n")
    with common.Tern(["--config", str(config)], tmp / "tern.log") as tern:
        try:
            common.wait_for("an answer from tern", lambda: common.answer(
                port, "www.example.com.") == ["192.0.2.80"], common.START_TIMEOUT, tern.proc)
            tasks = task_ids(tern.proc.pid)
            want_uid = [str(account.pw_uid)] * 4
            want_gid = [str(account.pw_gid)] * 4
            for name, uid, gid, extra in tasks:
                if uid != want_uid or gid != want_gid:
                    raise Failure(f"thread {name}: Uid {uid}, Gid {gid}; want {want_uid[0]} "
                                  f"and {want_gid[0]}")
                if sorted(int(g) for g in extra) != groups:
                    raise Failure(f"thread {name}: Groups {extra}, want {groups}")
            if len(tasks) < 2:
                raise Failure(f"only {len(tasks)} thread(s): the cores are missing")
            # Bound as root, served as the user.
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                        timeout=common.EVENT_TIMEOUT) as reply:
                if reply.status != 200 or b"tern_queries_total" not in reply.read():
                    raise Failure(f"metrics on port {metrics_port}: {reply.status}")
            if not tap.connected.wait(common.EVENT_TIMEOUT):
                raise Failure("the dnstap writer never connected to its socket")
            if tap.uids != [account.pw_uid]:
                raise Failure(f"the dnstap writer connected as uid {tap.uids}, not as the "
                              f"user ({account.pw_uid}): before root was dropped")
            if os.stat(socket_path).st_uid != account.pw_uid:
                raise Failure("the control socket is not the user's")
            stats = subprocess.run([str(common.tern_binary()), "stats", "--socket",
                                    str(socket_path)], capture_output=True, text=True,
                                   timeout=common.EVENT_TIMEOUT)
            if stats.returncode != 0 or "all cores: queries" not in stats.stdout:
                raise Failure(f"tern stats: {stats.returncode} {stats.stdout}{stats.stderr}")
            zone.write_text(common.ZONE.format(serial=2, address="192.0.2.81"))
            tern.signal(signal.SIGHUP)
            common.wait_for("the reloaded zone", lambda: common.answer(
                port, "www.example.com.") == ["192.0.2.81"], proc=tern.proc)
            log = tern.log_text()
            if f"running as user {USER}" not in log:
                raise Failure("the log does not say which user tern runs as")
            meta = os.stat(run_dir)
            if meta.st_uid != account.pw_uid or meta.st_mode & 0o777 != 0o700:
                raise Failure(f"{run_dir}: uid {meta.st_uid}, mode {meta.st_mode & 0o777:o}; "
                              f"want the user's, 0700")
            # Killed, it leaves its socket behind, owned by the user.
            tern.proc.kill()
            tern.proc.wait(timeout=common.EVENT_TIMEOUT)
        except Failure as err:
            raise Failure(f"{err}\n--- tern log:\n{tern.log_text()}") from None
    tap.close()
    if os.stat(socket_path).st_uid != account.pw_uid:
        raise Failure("no stale socket of the user's was left to start over")
    # Started again as root, tern takes the user's stale socket as its own.
    config.write_text(f"user: {USER}\nlisten: ['127.0.0.1:{port}']\n"
                      f"zones: {{directory: {zones}}}\ncontrol-socket: {socket_path}\n")
    with common.Tern(["--config", str(config)], tmp / "tern-again.log") as tern:
        common.wait_for("an answer after the restart", lambda: common.answer(
            port, "www.example.com.") == ["192.0.2.81"], common.START_TIMEOUT, tern.proc)
        stats = subprocess.run([str(common.tern_binary()), "stats", "--socket",
                                str(socket_path)], capture_output=True, text=True,
                               timeout=common.EVENT_TIMEOUT)
        if stats.returncode != 0:
            raise Failure(f"tern stats after the restart: {stats.stdout}{stats.stderr}\n"
                          f"{tern.log_text()}")
        print(f"service/{SCRIPT}: {len(tasks)} threads run as {USER} "
              f"(uid {account.pw_uid}, groups {groups}) and answer")


def check_missing_user(tmp: pathlib.Path) -> None:
    port = common.free_port()
    config = tmp / "missing.yaml"
    config.write_text(f"user: tern-no-such-user\nlisten: ['127.0.0.1:{port}']\n"
                      f"zones: {{directory: {tmp / 'zones'}}}\n"
                      f"control-socket: {tmp / 'missing.sock'}\n")
    with common.Tern(["--config", str(config)], tmp / "missing.log") as tern:
        code = tern.wait_exit()
        log = tern.log_text()
    if code == 0 or 'user "tern-no-such-user" does not exist' not in log:
        raise Failure(f"a missing user: exit {code}, log:\n{log}")


if __name__ == "__main__":
    common.run(SCRIPT, main)
