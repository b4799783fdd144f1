"""A throw-away single-node Ceph cluster (mon + memstore OSD + radosgw) on loopback, for tests.

Why a real cluster rather than an S3 mock: Delta commits rely on RGW enforcing conditional PUTs
(``If-None-Match: *``) and pyarrow's AWS SDK must cope with RGW's quirks; a mock proves neither.

Everything (config, keyrings, mon store, OSD dir, admin sockets, logs, PIDs) lives under one
directory. The state file ``cluster.json`` records PIDs and ports so ``stop DIR`` works from
another process. Command line::

    python -m tests.support.ceph_cluster start DIR   # prints endpoint and keys as JSON
    python -m tests.support.ceph_cluster stop DIR
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

REQUIRED_BINARIES = (
    "ceph-mon", "ceph-osd", "radosgw", "ceph", "ceph-authtool", "monmaptool", "radosgw-admin",
)  # fmt: skip
PREFERRED_PORTS = {"mon_v2": 3300, "mon_v1": 6789, "rgw": 7480}
STATE_FILE = "cluster.json"
# Stop order: gateway first, monitor last (the others talk to it while shutting down).
DAEMONS = ("radosgw", "ceph-osd", "ceph-mgr", "ceph-mon")


class CephUnavailableError(RuntimeError):
    """The Ceph binaries are not installed: the cluster cannot start (tests must fail, not skip)."""


class CephStartError(RuntimeError):
    """A daemon died or did not become ready in time; the message carries its log tail."""


class CephPortConflictError(CephStartError):
    """A port we picked was taken by someone else before our daemon bound it (another test run
    starting a cluster at the same moment): worth another attempt on fresh ports."""


class CephCommandError(CephStartError):
    """A Ceph command-line tool failed (while waiting for a daemon, this just means "not yet")."""


@dataclass
class ClusterState:
    """What ``stop`` and clients need: ports, credentials and the PID of each daemon."""

    workdir: str
    fsid: str
    ports: dict[str, int]
    access_key: str
    secret_key: str
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['rgw']}"

    def save(self) -> None:
        path = Path(self.workdir) / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(path)

    @classmethod
    def load(cls, workdir: Path) -> ClusterState:
        return cls(**json.loads((workdir / STATE_FILE).read_text()))


def missing_binaries() -> list[str]:
    return [b for b in REQUIRED_BINARIES if shutil.which(b) is None]


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def pick_ports(preferred: dict[str, int], taken: set[int] | frozenset[int] = frozenset()) -> dict[str, int]:
    """The preferred ports when free, else free ephemeral ones; 0 means "any free port".

    Free *now* only: the caller binds soon after, and a daemon losing the race is detected
    (:class:`CephPortConflictError`) and retried.
    """
    chosen: dict[str, int] = {}
    for name, port in preferred.items():
        used = set(taken) | set(chosen.values())
        if port and port not in used and port_is_free(port):
            chosen[name] = port
            continue
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", 0))
                candidate = sock.getsockname()[1]
            if candidate not in used:
                chosen[name] = candidate
                break
    return chosen


def listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on 127.0.0.1/0.0.0.0:``port`` (from /proc/net/tcp; Linux only)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A = LISTEN
                inodes.add(inode)
    return inodes


def pid_listens_on(pid: int, port: int) -> bool:
    """True if process ``pid`` owns a socket listening on ``port``: the port is really radosgw's."""
    wanted = listening_inodes(port)
    if not wanted:
        return False
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(fd)
        except OSError:  # closed meanwhile (e.g. the fd of this very listing)
            continue
        if link.startswith("socket:[") and link[8:-1] in wanted:
            return True
    return False


def pid_is_ours(pid: int, binary: str, workdir: Path) -> bool:
    """Guards ``stop`` against a recycled PID: the process must be ``binary`` run with our conf."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    args = [a.decode(errors="replace") for a in cmdline if a]
    if not args or os.path.basename(args[0]) != binary:
        return False
    return str(workdir / "ceph.conf") in args


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGTERM the daemon if the test process dies without cleaning up."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


class CephCluster:
    """Start/stop one mon, one memstore OSD, optionally a mgr, and radosgw, all under ``workdir``.

    ``die_with_parent`` ties the daemons' lifetime to the starting process (right for a pytest
    fixture; wrong for the ``start`` command line, which must leave them running).
    """

    def __init__(
        self,
        workdir: Path | str,
        *,
        with_mgr: bool = False,
        memstore_bytes: int = 1 << 30,
        die_with_parent: bool = False,
        timeout: float = 90.0,
        attempts: int = 3,
    ) -> None:
        self.workdir = Path(workdir).resolve()
        self.with_mgr = with_mgr
        self.memstore_bytes = memstore_bytes
        self.die_with_parent = die_with_parent
        self.timeout = timeout
        self.attempts = attempts
        self._prefer_default_ports = True
        self.state: ClusterState | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # -- paths ----------------------------------------------------------------------------------
    @property
    def conf(self) -> Path:
        return self.workdir / "ceph.conf"

    def _log(self, name: str) -> Path:
        return self.workdir / "log" / f"{name}.log"

    # -- public ---------------------------------------------------------------------------------
    def start(self) -> ClusterState:
        """Bring the cluster up; on any failure stop whatever was started and raise."""
        missing = missing_binaries()
        if missing:
            raise CephUnavailableError(
                f"Ceph is not installed (missing: {', '.join(missing)}). "
                "Run scripts/install-ceph.sh "
                "(Debian packages ceph-mon ceph-osd ceph-mgr radosgw ceph-common)."
            )
        if (self.workdir / STATE_FILE).exists():
            raise CephStartError(f"{self.workdir} already holds a cluster; stop it first")
        started = time.monotonic()
        for attempt in range(1, self.attempts + 1):
            try:
                self._bootstrap(prefer_default_ports=attempt == 1)
                break
            except CephPortConflictError as exc:
                self.stop(remove=False)
                if attempt == self.attempts:
                    raise
                log.warning("ceph start attempt %d lost a port race (%s); retrying on fresh ports", attempt, exc)
                self._wipe()
            except BaseException:
                self.stop(remove=False)
                raise
        assert self.state is not None
        log.info("ceph cluster up at %s in %.1f s", self.state.endpoint, time.monotonic() - started)
        return self.state

    def _wipe(self) -> None:
        """Empty the work directory between attempts (the directory itself may be a fixture's)."""
        for child in self.workdir.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        self.state = None

    def stop(self, *, remove: bool = False, grace: float = 10.0) -> None:
        """Stop every recorded daemon (ours only) in order, SIGKILL after ``grace`` s; maybe rm the dir.

        One at a time, gateway first and monitor last: an OSD told to stop while the monitor is
        already gone waits out its 5 s "tell the monitor I am going down" timeout.
        """
        state = self.state
        if state is None and (self.workdir / STATE_FILE).exists():
            state = ClusterState.load(self.workdir)
        pids = dict(state.pids) if state else {}
        for name in DAEMONS:
            pid = pids.get(name)
            if not pid or not pid_is_ours(pid, name, self.workdir):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            if self._alive(name, pid, wait=grace):
                log.warning("ceph %s (pid %d) ignored SIGTERM for %.0f s; killing it", name, pid, grace)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._alive(name, pid, wait=5.0)
        for proc in self._procs.values():  # reap our own children so no zombie remains
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._procs.clear()
        (self.workdir / STATE_FILE).unlink(missing_ok=True)
        if remove:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def running(self) -> bool:
        """All recorded daemons are alive and radosgw owns its port."""
        if self.state is None:
            return False
        alive = all(pid_is_ours(pid, name, self.workdir) for name, pid in self.state.pids.items())
        return alive and pid_listens_on(self.state.pids["radosgw"], self.state.ports["rgw"])

    # -- bootstrap steps ------------------------------------------------------------------------
    def _bootstrap(self, prefer_default_ports: bool = True) -> None:
        for sub in ("mon/a", "osd/0", "mgr/x", "rgw", "run", "log"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        self._prefer_default_ports = prefer_default_ports
        # Only the monitor's ports now; radosgw's is picked right before it starts (it binds
        # about 10 s later, a window in which a concurrent test run could take a port).
        mon = {k: v for k, v in PREFERRED_PORTS.items() if k.startswith("mon_")}
        ports = pick_ports(mon if prefer_default_ports else dict.fromkeys(mon, 0))
        self.state = ClusterState(
            workdir=str(self.workdir),
            fsid=str(uuid.uuid4()),
            ports=ports,
            access_key="LINEAGE" + secrets.token_hex(6).upper(),
            secret_key=secrets.token_urlsafe(30),
        )
        self.state.save()
        self._write_conf()
        self._start_mon()
        if self.with_mgr:
            self._start_mgr()
        self._start_osd()
        self._start_rgw()
        self._create_user()

    def _write_conf(self) -> None:
        s, d = self.state, self.workdir
        assert s is not None
        self.conf.write_text(
            f"""[global]
fsid = {s.fsid}
mon initial members = a
mon host = [v2:127.0.0.1:{s.ports["mon_v2"]},v1:127.0.0.1:{s.ports["mon_v1"]}]
public network = 127.0.0.1/32
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = {d}/keyring
run dir = {d}/run
admin socket = {d}/run/$name.asok
log file = {d}/log/$name.log
mon cluster log file = {d}/log/cluster.log
log to stderr = false
err to stderr = false
ms bind ipv6 = false
ms bind retry count = 2
ms bind retry delay = 1
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon data avail warn = 1
mon data avail crit = 0

[mon.a]
mon data = {d}/mon/a

[mgr.x]
mgr data = {d}/mgr/x
keyring = {d}/mgr/x/keyring

[osd.0]
osd data = {d}/osd/0
keyring = {d}/osd/0/keyring
osd objectstore = memstore
memstore device bytes = {self.memstore_bytes}

[client.rgw.gw]
keyring = {d}/rgw/keyring
rgw data = {d}/rgw
{f"rgw frontends = beast endpoint=127.0.0.1:{s.ports['rgw']}" if "rgw" in s.ports else ""}
rgw enable usage log = false
# free deleted objects' data within seconds, not hours: the memstore OSD holds it in RAM
rgw gc obj min wait = 0
rgw gc processor period = 2
"""
        )

    def _run(self, *args: str, input_text: str | None = None, timeout: float = 30.0) -> str:
        """Run a Ceph command-line tool against our conf; raise with its output on failure."""
        cmd = [args[0], "-c", str(self.conf), *args[1:]]
        res = subprocess.run(cmd, capture_output=True, text=True, input=input_text, timeout=timeout)
        if res.returncode != 0:
            raise CephCommandError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
        return res.stdout

    def _spawn(self, name: str, *args: str) -> None:
        """Start a daemon in the foreground (``-f``) as our child and record its PID."""
        cmd = [name, "-f", "-c", str(self.conf), *args]
        out = open(self.workdir / "log" / f"{name}.out", "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if self.die_with_parent else None,  # noqa: PLW1509
            )
        finally:
            out.close()
        self._procs[name] = proc
        assert self.state is not None
        self.state.pids[name] = proc.pid
        self.state.save()
        log.debug("started %s pid %d", name, proc.pid)

    def _alive(self, name: str, pid: int, wait: float = 0.0) -> bool:
        """Whether daemon ``name`` (pid ``pid``) is still running after waiting up to ``wait`` s."""
        proc = self._procs.get(name)
        if proc is not None and proc.pid == pid:
            try:
                proc.wait(timeout=wait) if wait else proc.poll()
            except subprocess.TimeoutExpired:
                return True
            return proc.returncode is None
        deadline = time.monotonic() + wait
        while True:
            if not pid_is_ours(pid, name, self.workdir):
                return False
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.1)

    def _wait(self, what: str, daemon: str, check: Callable[[], bool], log_name: str) -> None:
        """Poll ``check`` until true; fail fast (with the log tail) if ``daemon`` dies."""
        deadline = time.monotonic() + self.timeout
        proc = self._procs[daemon]
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log_path = self._log(log_name)
                tail = f"{_log_tail(log_path)}\n{_log_tail(self.workdir / 'log' / f'{daemon}.out', 10)}"
                error = CephPortConflictError if "Address already in use" in tail else CephStartError
                raise error(f"{daemon} exited with {proc.returncode} waiting for {what}; log {log_path}:\n{tail}")
            try:
                if check():
                    return
            except (CephCommandError, subprocess.TimeoutExpired, OSError) as exc:
                log.debug("waiting for %s: %s", what, exc)
            time.sleep(0.2)
        raise CephStartError(
            f"timed out after {self.timeout:.0f} s waiting for {what}; "
            f"log {self._log(log_name)}:\n{_log_tail(self._log(log_name))}"
        )

    def _start_mon(self) -> None:
        d, s = self.workdir, self.state
        assert s is not None
        keyring = d / "keyring"
        subprocess.run(
            ["ceph-authtool", "--create-keyring", str(keyring), "--gen-key", "-n", "mon.",
             "--cap", "mon", "allow *"],
            check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(
            ["ceph-authtool", str(keyring), "--gen-key", "-n", "client.admin",
             "--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mds", "allow *",
             "--cap", "mgr", "allow *"],
            check=True, capture_output=True,
        )  # fmt: skip
        monmap = d / "monmap"
        addr = f"[v2:127.0.0.1:{s.ports['mon_v2']},v1:127.0.0.1:{s.ports['mon_v1']}]"
        subprocess.run(
            ["monmaptool", "--create", "--fsid", s.fsid, "--addv", "a", addr, str(monmap)],
            check=True,
            capture_output=True,
        )
        self._run("ceph-mon", "--mkfs", "-i", "a", "--monmap", str(monmap), "--keyring", str(keyring))
        self._spawn("ceph-mon", "-i", "a")
        self._wait("the monitor quorum", "ceph-mon", self._mon_ready, "mon.a")

    def _mon_ready(self) -> bool:
        out = self._run("ceph", "--connect-timeout", "5", "quorum_status", "-f", "json", timeout=10)
        return "a" in json.loads(out).get("quorum_names", [])

    def _start_mgr(self) -> None:
        keyring = self.workdir / "mgr" / "x" / "keyring"
        out = self._run("ceph", "auth", "get-or-create", "mgr.x", "mon", "allow profile mgr",
                        "osd", "allow *", "mds", "allow *")  # fmt: skip
        keyring.write_text(out)
        self._spawn("ceph-mgr", "-i", "x")

    def _start_osd(self) -> None:
        osd_dir = self.workdir / "osd" / "0"
        key = self._run("ceph-authtool", "--gen-print-key").strip()
        osd_uuid = str(uuid.uuid4())
        secret = json.dumps({"cephx_secret": key})
        osd_id = self._run("ceph", "osd", "new", osd_uuid, "-i", "-", input_text=secret).strip()
        if osd_id != "0":
            raise CephStartError(f"expected osd id 0 from a fresh monitor, got {osd_id!r}")
        # `ceph-osd --mkfs --key` does not write the keyring file: write it ourselves.
        (osd_dir / "keyring").write_text(f"[osd.0]\n\tkey = {key}\n")
        self._run("ceph-osd", "-i", "0", "--mkfs", "--osd-uuid", osd_uuid, timeout=60)
        self._spawn("ceph-osd", "-i", "0")
        self._wait("osd.0 up", "ceph-osd", self._osd_up, "osd.0")

    def _osd_up(self) -> bool:
        dump = json.loads(self._run("ceph", "osd", "dump", "-f", "json", timeout=10))
        return any(o["osd"] == 0 and o["up"] == 1 and o["in"] == 1 for o in dump.get("osds", []))

    def _start_rgw(self) -> None:
        s = self.state
        assert s is not None
        keyring = self.workdir / "rgw" / "keyring"
        out = self._run("ceph", "auth", "get-or-create", "client.rgw.gw",
                        "mon", "allow rw", "osd", "allow rwx", "mgr", "allow rw")  # fmt: skip
        keyring.write_text(out)
        preferred = PREFERRED_PORTS["rgw"] if self._prefer_default_ports else 0
        s.ports.update(pick_ports({"rgw": preferred}, taken=set(s.ports.values())))
        s.save()
        self._write_conf()
        self._spawn("radosgw", "-n", "client.rgw.gw")
        self._wait("radosgw to answer S3 requests", "radosgw", self._rgw_ready, "client.rgw.gw")

    def _rgw_ready(self) -> bool:
        """The S3 root answers *and* the listening socket belongs to our radosgw process."""
        s = self.state
        assert s is not None
        try:
            with urllib.request.urlopen(s.endpoint + "/", timeout=2) as resp:
                body = resp.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False
        if "ListAllMyBucketsResult" not in body:
            return False
        if not pid_listens_on(s.pids["radosgw"], s.ports["rgw"]):
            raise CephPortConflictError(f"something other than our radosgw answers on port {s.ports['rgw']}")
        return True

    def _create_user(self) -> None:
        s = self.state
        assert s is not None
        self._run(
            "radosgw-admin", "-n", "client.admin", "user", "create", "--uid=lineage-test",
            "--display-name=lineage test", f"--access-key={s.access_key}", f"--secret-key={s.secret_key}",
        )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--with-mgr", action="store_true", help="also run ceph-mgr (~300 MB)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    cluster = CephCluster(args.workdir, with_mgr=args.with_mgr)
    if args.action == "start":
        state = cluster.start()
        sys.stdout.write(json.dumps({"endpoint": state.endpoint, **asdict(state)}, indent=2) + "\n")
        return 0
    if args.action == "stop":
        cluster.stop()
        return 0
    if not (cluster.workdir / STATE_FILE).exists():
        sys.stderr.write(f"no cluster in {cluster.workdir}\n")
        return 1
    cluster.state = ClusterState.load(cluster.workdir)
    up = cluster.running()
    sys.stdout.write(("running " if up else "NOT running ") + cluster.state.endpoint + "\n")
    return 0 if up else 1


if __name__ == "__main__":
    sys.exit(main())
