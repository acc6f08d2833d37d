"""Hostile clients for the limits tests and bench/memory_attack.py: many connections that each
claim a huge request and send its body as fast as the broker reads it, idle connections, and
slowloris frames; and the broker's resident memory from /proc."""

from __future__ import annotations

import resource
import selectors
import socket
import struct
import threading
import time


def raise_fd_limit(want: int) -> int:
    """Raise this process's soft RLIMIT_NOFILE towards `want` (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, want), hard if hard != resource.RLIM_INFINITY else want)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class MemoryAttack:
    """`n` connections, each sending a size prefix of `claim` bytes, a Produce v0 header and then
    zeros as fast as the broker reads, on one selector thread."""

    def __init__(self, bootstrap: str, n: int, claim: int = 100 * 1024 * 1024):
        host, port = bootstrap.rsplit(":", 1)
        self.addr = (host, int(port))
        self.n, self.claim = n, claim
        self.socks: list[socket.socket] = []
        self.sent: dict[int, int] = {}
        self.closed_by_broker: set[int] = set()
        self.local_ports: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        sel = selectors.DefaultSelector()
        for _ in range(self.n):
            s = socket.create_connection(self.addr)
            s.setblocking(False)
            self.socks.append(s)
            self.local_ports.append(s.getsockname()[1])
            self.sent[s.fileno()] = 0
            sel.register(s, selectors.EVENT_WRITE)
        head = struct.pack(">ihhih", self.claim, 0, 0, 0, -1)  # size, Produce v0, corr 0, null client id
        chunk = bytes(1024 * 1024)
        self._thread = threading.Thread(target=self._run, args=(sel, head, chunk), daemon=True)
        self._thread.start()

    def _run(self, sel: selectors.BaseSelector, head: bytes, chunk: bytes) -> None:
        total = self.claim + 4
        while not self._stop.is_set() and sel.get_map():
            for key, _ in sel.select(0.2):
                s: socket.socket = key.fileobj  # type: ignore[assignment]
                fd = key.fd
                done = self.sent[fd]
                try:
                    data = head if done == 0 else chunk[: min(len(chunk), total - done)]
                    n = s.send(data)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    self.closed_by_broker.add(fd)
                    sel.unregister(s)
                    continue
                self.sent[fd] = done + n
                if self.sent[fd] >= total:
                    sel.unregister(s)
        sel.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        for s in self.socks:
            s.close()

    @property
    def bytes_sent(self) -> int:
        return sum(self.sent.values())

    def unfinished_ports(self) -> set[int]:
        """Local ports of the connections that had not sent their whole request: the broker held
        each part-way (one may have read its request in full as the pool's overflow, never paused)."""
        return {port for fd, port in zip(self.sent, self.local_ports, strict=True) if self.sent[fd] < self.claim + 4}


def open_idle(bootstrap: str, n: int) -> list[socket.socket]:
    host, port = bootstrap.rsplit(":", 1)
    out = []
    for _ in range(n):
        out.append(socket.create_connection((host, int(port)), timeout=10))
    return out


def wait_for(pred, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()
