"""The Ceph test cluster itself: port picking, liveness checks, cleanup, and failing without Ceph."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from tests.support import ceph_cluster as cc

REPO = Path(__file__).resolve().parents[2]


def _listener() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock


def test_pick_ports_avoids_taken_ports() -> None:
    with _listener() as busy:
        port = busy.getsockname()[1]
        assert not cc.port_is_free(port)
        chosen = cc.pick_ports({"rgw": port, "mon_v1": port, "mon_v2": 0})
    assert port not in chosen.values()
    assert len(set(chosen.values())) == 3
    again = cc.pick_ports({"rgw": chosen["rgw"]}, taken={chosen["rgw"]})
    assert again["rgw"] != chosen["rgw"]


def test_pid_listens_on() -> None:
    with _listener() as sock:
        port = sock.getsockname()[1]
        assert cc.pid_listens_on(os.getpid(), port)
        assert not cc.pid_listens_on(os.getppid(), port)
    assert not cc.pid_listens_on(os.getpid(), port)


class _FakeRgw(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = b"<ListAllMyBucketsResult></ListAllMyBucketsResult>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_impostor_on_the_rgw_port_is_detected(tmp_path: Path) -> None:
    """A server that answers like RGW but is not our radosgw process must not count as 'up'."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _FakeRgw)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        cluster = cc.CephCluster(tmp_path)
        cluster.state = cc.ClusterState(
            workdir=str(tmp_path),
            fsid="x",
            ports={"rgw": server.server_address[1], "mon_v1": 0, "mon_v2": 0},
            access_key="a",
            secret_key="s",
            pids={"radosgw": sleeper.pid},
        )
        with pytest.raises(cc.CephStartError, match="something other than our radosgw"):
            cluster._rgw_ready()
    finally:
        sleeper.kill()
        sleeper.wait()
        server.shutdown()
        server.server_close()


def test_missing_ceph_raises_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cc.shutil, "which", lambda name: None)
    with pytest.raises(cc.CephUnavailableError, match="install-ceph.sh"):
        cc.CephCluster(tmp_path).start()


def test_fixture_fails_not_skips_without_ceph(tmp_path: Path) -> None:
    """Without the Ceph binaries on PATH a test using ``ceph_s3`` errors; it is never skipped."""
    (tmp_path / "test_needs_ceph.py").write_text(
        textwrap.dedent(
            """
            from tests.support.fixtures_ceph import ceph_s3  # noqa: F401

            def test_uses_ceph(ceph_s3):
                pass
            """
        )
    )
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin"), "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "1 error" in out and "skipped" not in out, out
    assert "Ceph is not installed" in out and "install-ceph.sh" in out, out


def test_session_cluster_is_really_ours(ceph_s3) -> None:
    port = int(ceph_s3.endpoint.rsplit(":", 1)[1])
    assert cc.pid_listens_on(ceph_s3.pids["radosgw"], port)
    for name, pid in ceph_s3.pids.items():
        assert cc.pid_is_ours(pid, name, ceph_s3.workdir), name


def _processes_using(workdir: Path) -> dict[int, str]:
    """PID -> binary of every process started with ``workdir``'s ceph.conf."""
    found = {}
    conf = str(workdir / "ceph.conf")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = [a.decode() for a in (entry / "cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue
        if conf in args:
            found[int(entry.name)] = os.path.basename(args[0])
    return found


def test_second_cluster_survives_a_port_race_and_cleans_up(
    ceph_s3, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the session cluster holds the usual ports, another cluster starts on free ones. Its
    first radosgw port is 'stolen' by an impostor that answers like RGW (what a concurrent test
    run looks like): the attempt is abandoned, its daemons stopped, and a retry succeeds."""
    impostor = http.server.HTTPServer(("127.0.0.1", 0), _FakeRgw)
    threading.Thread(target=impostor.serve_forever, daemon=True).start()
    real_pick, stolen = cc.pick_ports, []

    def pick(preferred: dict[str, int], taken=frozenset()) -> dict[str, int]:
        if "rgw" in preferred and not stolen:
            stolen.append(impostor.server_address[1])
            return {"rgw": stolen[0]}
        return real_pick(preferred, taken)

    monkeypatch.setattr(cc, "pick_ports", pick)
    workdir = Path(os.path.realpath(tmp_path_factory.mktemp("c2")))
    cluster = cc.CephCluster(workdir, die_with_parent=True)
    try:
        state = cluster.start()
        session_port = int(ceph_s3.endpoint.rsplit(":", 1)[1])
        assert state.ports["rgw"] not in (session_port, stolen[0])
        assert cluster.running()
        assert _processes_using(workdir) == {pid: name for name, pid in state.pids.items()}  # no leftovers
        assert json.loads((workdir / cc.STATE_FILE).read_text())["pids"] == state.pids
        fs = pafs.S3FileSystem(
            access_key=state.access_key,
            secret_key=state.secret_key,
            endpoint_override=state.endpoint.removeprefix("http://"),
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
        )
        fs.create_dir("second")
        with fs.open_output_stream("second/x") as out:
            out.write(b"2")
        # the two clusters are separate stores
        assert ceph_s3.filesystem().get_file_info("second/x").type == pafs.FileType.NotFound
    finally:
        impostor.shutdown()
        impostor.server_close()
        started = time.monotonic()
        cluster.stop()
        stop_seconds = time.monotonic() - started
    assert _processes_using(workdir) == {}
    assert not (workdir / cc.STATE_FILE).exists()
    assert stop_seconds < 8, f"stop took {stop_seconds:.1f} s"


def test_failed_start_stops_what_it_started(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure that is not a port race is not retried, and the daemons already up are stopped."""
    workdir = Path(os.path.realpath(tmp_path_factory.mktemp("c3")))

    def broken_rgw(self: cc.CephCluster) -> None:
        raise cc.CephStartError("radosgw would not start")

    monkeypatch.setattr(cc.CephCluster, "_start_rgw", broken_rgw)
    cluster = cc.CephCluster(workdir, die_with_parent=True)
    with pytest.raises(cc.CephStartError, match="would not start"):
        cluster.start()
    assert cluster.state is not None
    assert set(cluster.state.pids) == {"ceph-mon", "ceph-osd"}
    assert _processes_using(workdir) == {}
