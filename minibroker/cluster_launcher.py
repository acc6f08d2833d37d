"""`python -m minibroker cluster`: one KRaft controller and N brokers, each its own process (issue 29).

    python -m minibroker cluster --brokers N --host H --port P --data-dir D
                                 [--override k=v ...] [--console-port C] [--controller-port Q] [--fault-control]

Theory of operation. The launcher writes each node's configuration with Kafka's keys
(`process.roles`, `node.id`, `controller.quorum.voters`, `controller.listener.names`, `listeners`,
`listener.security.protocol.map`, `cluster.id`, `log.dirs`) into `D/<node>/node.properties`, then
starts each node with the one command that also restarts it alone after a kill -9:

    python -m minibroker --config D/<node>/node.properties       (output appended to D/<node>/node.log)

The file is written as `key: value` lines, which Java's Properties and YAML (minibroker's --config)
read alike. Layout and ports:

- `D/controller/` the controller, node.id 3000 (`CONTROLLER_NODE_ID`), `process.roles=controller`,
  listening on Q = `--controller-port`, by default P+N+1 (P itself is left alone, so that
  `--port 9092` gives brokers 9093, 9094, ...).
- `D/broker-i/` broker i (1..N), node.id i, `process.roles=broker`, listening on H:P+i.
  `--port 0` gives every node a free port instead (cluster.json says which).
- each node's log dir is `D/<node>/data` (its meta.properties carries the cluster id, stable across
  restarts: the launcher reuses the id it finds in the controller's meta.properties).
- `D/cluster.json`: `{"cluster_id", "brokers": [{"node_id", "pid", "host", "port"}, ...],
  "controller": {"node_id", "pid", "host", "port"}}`, written (atomically) once every broker
  serves, removed when the cluster stops. `D/.lock` keeps a second launcher off D.
- `--fault-control` (implied by --console-allow-faults): D/fault-control.token, and each broker's
  fault control endpoint as its "fault_control" in cluster.json (minibroker.faults.control).

A broker *serves* when it answers a Metadata request that names itself among the brokers: the
controller registered it and unfenced it (Kafka's BrokerHeartbeat answer with isFenced=false),
and the broker's own metadata image has caught up to that record, so it answers clients with the
cluster's topics and brokers (Kafka's BrokerServer moves to RUNNING at the same point). On a data
dir that held a broker before, its old image names it too: so the check counts only once this
run registered (the broker epoch E its log reports) and the controller saw it fetch the metadata
log past E (DescribeQuorum's observers), so the unfencing it names is this run's. The
cluster serves, and cluster.json is written, when each broker serves and then, asked once more,
names all N brokers (so a topic of replication factor N can be created at once).

SIGTERM or SIGINT stops the cluster: the brokers one after the other (each runs a controlled
shutdown, so leadership moves to the brokers still up, Kafka's rolling-restart order), then the
controller; exit 0. The launcher restarts nothing by itself (Kafka has no supervisor either: a
dead broker is fenced and its partitions' leadership moves), but it stops a node that was
restarted alone too: it finds the process holding the node's data dir lock (/proc/locks).
The nodes run in sessions of their own, so a Ctrl-C in the terminal reaches the launcher only,
which then stops them in order.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from minibroker import cluster_fault_control as fault_control
from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker.startup_errors import EXIT_STARTUP_ERROR, STARTUP_ERRORS
from minibroker_protocol.apis import describe_quorum, metadata
from minibroker_protocol.schema import Api, Message
from minibroker_storage.file_lock import FileLock, LogDirFailure

CONTROLLER_NODE_ID = 3000
CONTROLLER_LISTENER = "CONTROLLER"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 45.0  # a controlled shutdown is bounded by 30 s (kafka_raft_server)
CLUSTER_JSON = "cluster.json"
NODE_PROPERTIES = "node.properties"
NODE_LOG = "node.log"


class ClusterStartError(Exception):
    """The cluster cannot start (a port in use, a node that exited, a node that never served);
    the message is one line naming the node, the port or the path."""


@dataclass
class Node:
    """One process of the cluster: its id, role, address and directory."""

    node_id: int
    role: str  # "broker" or "controller"
    host: str
    port: int
    dir: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    log_mark: int = 0  # node.log's size when this run started

    @property
    def name(self) -> str:
        return "controller" if self.role == "controller" else f"broker-{self.node_id}"

    @property
    def properties_path(self) -> Path:
        return self.dir / NODE_PROPERTIES

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    def command(self) -> list[str]:
        """The command that starts (and restarts) this node alone."""
        return node_command(self.properties_path)

    def to_json(self) -> dict[str, object]:
        return {"node_id": self.node_id, "pid": self.proc.pid if self.proc is not None else None,
                "host": self.host, "port": self.port}


def node_command(properties: Path) -> list[str]:
    return [sys.executable, "-m", "minibroker", "--config", str(properties)]


def start_node_process(properties: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """Start a node from its node.properties, output appended to `log_path`, in a session of its
    own (a terminal's Ctrl-C goes to whoever started it, who stops it in order)."""
    with open(log_path, "ab") as out:
        return subprocess.Popen(node_command(properties), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def random_cluster_id() -> str:
    """A cluster id as Kafka's StorageTool random-uuid prints it (never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _existing_cluster_id(root: Path) -> str | None:
    for meta in sorted(root.glob("*/data/meta.properties")):
        for line in meta.read_text(errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "cluster.id" and value.strip():
                return value.strip()
    return None


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _check_port_free(host: str, port: int, what: str) -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            raise ClusterStartError(f"{what} cannot listen on {host}:{port}: {e.strerror or e}") from None


def plan(brokers: int, host: str, port: int, root: Path, controller_port: int | None) -> list[Node]:
    """The controller first, then brokers 1..N, with their ports (see the module doc)."""
    if brokers < 1:
        raise ClusterStartError(f"--brokers must be at least 1, not {brokers}")
    if port == 0:
        ports = [_free_port(host) for _ in range(brokers)]
        cport = controller_port or _free_port(host)
    else:
        ports = [port + i for i in range(1, brokers + 1)]
        cport = controller_port or port + brokers + 1
    if max(ports + [cport]) > 65535:
        raise ClusterStartError(f"--port {port} with {brokers} brokers needs ports up to {max(ports + [cport])}")
    nodes = [Node(CONTROLLER_NODE_ID, "controller", host, cport, root / "controller")]
    nodes += [Node(i, "broker", host, p, root / f"broker-{i}") for i, p in enumerate(ports, start=1)]
    return nodes


def node_properties(node: Node, controller: Node, cluster_id: str, overrides: list[str]) -> dict[str, str]:
    """Kafka's keys for one node, the launcher's overrides last (they win, as --override does)."""
    voters = f"{controller.node_id}@{controller.host}:{controller.port}"
    props = {"process.roles": node.role, "node.id": str(node.node_id), "cluster.id": cluster_id,
             "controller.quorum.voters": voters, "controller.listener.names": CONTROLLER_LISTENER,
             "log.dirs": str(node.data_dir.resolve())}
    if node.role == "controller":
        props["listeners"] = f"{CONTROLLER_LISTENER}://{node.host}:{node.port}"
        props["listener.security.protocol.map"] = f"{CONTROLLER_LISTENER}:PLAINTEXT"
    else:
        props["listeners"] = f"PLAINTEXT://{node.host}:{node.port}"
        props["listener.security.protocol.map"] = f"PLAINTEXT:PLAINTEXT,{CONTROLLER_LISTENER}:PLAINTEXT"
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ClusterStartError(f"Invalid override {item!r}: expected key=value")
        props[key.strip()] = value.strip()
    return props


def write_properties(path: Path, props: dict[str, str], comment: str) -> None:
    """`key: value` lines: Java's Properties reads them (':' separates), and so does YAML, as
    strings (each value is quoted when YAML would read it as something else)."""
    lines = [f"# {comment}"]
    for k, v in props.items():
        if "\n" in v or "\n" in k:
            raise ClusterStartError(f"config value of {k} spans lines")
        lines.append(f"{k}: {_yaml_text(v)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _yaml_text(v: str) -> str:
    # plain text YAML reads as the same string; Kafka's values (hosts, ids@host:port, lists,
    # numbers, true/false) are, except a value starting with a YAML indicator or holding ': ' or ' #'
    if v and v[0] not in "!&*?|>'\"%@`{}[],#-:" and ": " not in v and " #" not in v and v == v.strip():
        return v
    return json.dumps(v)  # a double-quoted YAML scalar (Java's Properties would keep the quotes)


def write_cluster_json(root: Path, cluster_id: str, nodes: list[Node]) -> Path:
    controller = next(n for n in nodes if n.role == "controller")
    brokers = []
    for n in nodes:
        if n.role == "broker":
            b = n.to_json()
            endpoint = fault_control.read_endpoint(root, n.node_id)  # with --fault-control (issue 32)
            if endpoint is not None:
                b["fault_control"] = {"host": endpoint[0], "port": endpoint[1]}
            brokers.append(b)
    doc = {"cluster_id": cluster_id, "brokers": brokers, "controller": controller.to_json()}
    path = root / CLUSTER_JSON
    tmp = root / (CLUSTER_JSON + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # a reader sees the whole file or none
    return path


def lock_holder(lock_file: Path) -> int | None:
    """The pid holding a POSIX lock on `lock_file` (a node's data dir .lock), from /proc/locks."""
    try:
        st = lock_file.stat()
        text = Path("/proc/locks").read_text()
    except OSError:
        return None
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in text.splitlines():
        parts = line.split()
        # "1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF" ("->" marks a waiter: skip it)
        if len(parts) >= 6 and parts[1] != "->" and parts[5] == want:
            return int(parts[4])
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie of ours is not alive
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


async def _ask(host: str, port: int, api: Api, request: Message, timeout: float = 5.0) -> Message:
    channel = ControllerChannel(host, port, client_id="minibroker-cluster")
    try:
        return await channel.send(api, request, timeout=timeout)
    finally:
        await channel.close()


async def serves(node: Node, brokers: frozenset[int] = frozenset()) -> bool:
    """The broker answers a Metadata that names itself and every broker of `brokers` (its image
    has it registered and unfenced); the controller answers ApiVersions."""
    try:
        if node.role == "controller":
            channel = ControllerChannel(node.host, node.port, client_id="minibroker-cluster")
            try:
                await asyncio.wait_for(channel._connect(), 5.0)  # noqa: SLF001 - ApiVersions is the question
            finally:
                await channel.close()
            return True
        resp = await _ask(node.host, node.port, metadata.API,
                          metadata.REQUEST(topics=[], allow_auto_topic_creation=False))
    except (OSError, ControllerUnavailable, TimeoutError, asyncio.IncompleteReadError):
        return False
    named = {b.node_id for b in getattr(resp, "brokers", None) or []}
    return node.node_id in named and brokers <= named


_REGISTERED = re.compile(rb"broker (\d+) registered with broker epoch (\d+)")


def registered_epoch(log_path: Path, mark: int, node_id: int) -> int | None:
    """The broker epoch this run of the broker registered with (its node.log from `mark`, the
    size the log had when the process started; minibroker.metadata.broker_lifecycle_manager)."""
    try:
        with open(log_path, "rb") as f:
            f.seek(mark)
            text = f.read()
    except OSError:
        return None
    epochs = [int(m.group(2)) for m in _REGISTERED.finditer(text) if int(m.group(1)) == node_id]
    return epochs[-1] if epochs else None


async def observer_offset(controller: Node, node_id: int) -> int:
    """How far broker `node_id` has fetched the metadata log (the controller's DescribeQuorum: its
    observers' log end offsets); -1 if the controller has not seen it fetch."""
    R = describe_quorum.REQUEST
    try:
        resp = await _ask(controller.host, controller.port, describe_quorum.API, R(topics=[R.TopicData(
            topic_name="__cluster_metadata", partitions=[R.PartitionData(partition_index=0)])]))
    except (OSError, ControllerUnavailable, TimeoutError, asyncio.IncompleteReadError):
        return -1
    assert isinstance(resp, describe_quorum.DescribeQuorumResponse)
    for t in resp.topics:
        for p in t.partitions:
            for o in p.observers:
                if o.replica_id == node_id:
                    return int(o.log_end_offset)
    return -1


async def serving(node: Node, controller: Node, log_mark: int, brokers: frozenset[int] = frozenset()) -> bool:
    """This run of the broker serves: it registered (a new broker epoch E, the offset of its
    RegisterBrokerRecord), has fetched the metadata log past E, and its Metadata names itself,
    so the unfencing that followed the registration is in its image. An image from before a
    restart (a broker serves from its old image while it catches up) does not count."""
    epoch = registered_epoch(node.dir / NODE_LOG, log_mark, node.node_id)
    if epoch is None or await observer_offset(controller, node.node_id) <= epoch:
        return False
    return await serves(node, brokers)


async def _wait_serving(nodes: list[Node], timeout: float, controller: Node | None = None,
                        brokers: frozenset[int] = frozenset()) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(nodes)
    while waiting:
        for n in list(waiting):
            if n.proc is not None and n.proc.poll() is not None:
                raise ClusterStartError(f"{n.name} exited with status {n.proc.returncode} while starting: "
                                        f"{_last_line(n.dir / NODE_LOG)} (log: {n.dir / NODE_LOG})")
            ok = (await serving(n, controller, n.log_mark, brokers) if controller is not None
                  else await serves(n, brokers))
            if ok:
                waiting.remove(n)
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise ClusterStartError(f"{', '.join(n.name for n in waiting)} did not serve within {timeout:.0f} s "
                                    f"(logs: {', '.join(str(n.dir / NODE_LOG) for n in waiting)})")
        await asyncio.sleep(0.05)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _last_line(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
        if lines:
            return lines[-1].strip()
    return "(no output)"


class ClusterLauncher:
    """Starts the nodes, writes cluster.json, and stops them in order (see the module doc)."""

    def __init__(self, root: Path, nodes: list[Node], cluster_id: str, overrides: list[str],
                 broker_extra: dict[int, list[str]]):
        self.root, self.nodes, self.cluster_id = root, nodes, cluster_id
        self.overrides, self.broker_extra = overrides, broker_extra
        self.controller = next(n for n in nodes if n.role == "controller")
        self.brokers = [n for n in nodes if n.role == "broker"]

    def write_configs(self) -> None:
        for n in self.nodes:
            props = node_properties(n, self.controller, self.cluster_id,
                                    self.overrides + self.broker_extra.get(n.node_id, []))
            write_properties(n.properties_path, props,
                             f"{n.name} of `minibroker cluster`; restart it alone with: "
                             f"python -m minibroker --config {n.properties_path}")
            n.data_dir.mkdir(parents=True, exist_ok=True)

    async def start(self, timeout: float) -> None:
        for n in self.nodes:
            _check_port_free(n.host, n.port, n.name)
        self.controller.proc = start_node_process(self.controller.properties_path, self.controller.dir / NODE_LOG)
        await _wait_serving([self.controller], timeout)
        for b in self.brokers:  # all at once: each registers on its own
            b.log_mark = _size(b.dir / NODE_LOG)
            b.proc = start_node_process(b.properties_path, b.dir / NODE_LOG)
        await _wait_serving(self.brokers, timeout, self.controller)
        # then all together: each broker names every broker (none was fenced again meanwhile)
        await _wait_serving(self.brokers, timeout, self.controller, frozenset(b.node_id for b in self.brokers))

    def pids(self, node: Node) -> list[int]:
        """The live processes of a node: the one started here, and one restarted alone (holding
        its data dir lock)."""
        out = []
        if node.proc is not None and node.proc.poll() is None:
            out.append(node.proc.pid)
        holder = lock_holder(node.data_dir / ".lock")
        if holder is not None and holder not in out and holder != os.getpid() and _alive(holder):
            out.append(holder)
        return out

    def stop(self) -> None:
        """Brokers one by one (controlled shutdown), then the controller; a node that does not stop
        within STOP_TIMEOUT_S is killed."""
        for n in [*self.brokers, self.controller]:
            for pid in self.pids(n):
                _terminate(pid, n.proc if n.proc is not None and n.proc.pid == pid else None)
        with contextlib.suppress(FileNotFoundError):
            (self.root / CLUSTER_JSON).unlink()


def _terminate(pid: int, proc: subprocess.Popen[bytes] | None) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)  # a paused node cannot run its shutdown
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return
        elif not _alive(pid):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait(10)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="minibroker cluster",
                                description="One KRaft controller and N brokers, each its own process.")
    p.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3); broker i has node.id i")
    p.add_argument("--host", default="127.0.0.1", help="address every node listens on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9092,
                   help="broker i listens on PORT+i (default 9092); 0 gives every node a free port")
    p.add_argument("--controller-port", type=int, default=None,
                   help="the controller's port (default PORT+N+1, or a free one with --port 0)")
    p.add_argument("--data-dir", default="cluster-data", help="D: D/controller, D/broker-i, D/cluster.json")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="a config key for every node (repeatable)")
    p.add_argument("--console-port", type=int, default=None, help="serve the web console on broker 1, on this port")
    p.add_argument("--console-allow-writes", action="store_true", help="console.allow.writes on broker 1")
    p.add_argument("--console-allow-faults", action="store_true",
                   help="console.allow.faults on broker 1 (POST /api/faults, the cluster kinds included)")
    p.add_argument("--fault-control", action="store_true",
                   help="every broker serves its faults to the others on 127.0.0.1, with a token in "
                        "D/fault-control.token (implied by --console-allow-faults: a fault's node may be any broker)")
    p.add_argument("--start-timeout", type=float, default=START_TIMEOUT_S,
                   help=f"seconds until every broker serves (default {START_TIMEOUT_S:.0f})")
    return p.parse_args(argv)


def _console_overrides(args: argparse.Namespace) -> list[str]:
    out = []
    if args.console_port is not None:
        out.append(f"console.port={args.console_port}")
    if args.console_allow_writes:
        out.append("console.allow.writes=true")
    if args.console_allow_faults:
        out.append("console.allow.faults=true")
    return out


async def run(args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    root = Path(args.data_dir).absolute()
    lock = _lock_root(root)
    try:
        with contextlib.suppress(FileNotFoundError):
            (root / CLUSTER_JSON).unlink()  # a stale one from a launcher that was killed
        nodes = plan(args.brokers, args.host, args.port, root, args.controller_port)
        cluster_id = _existing_cluster_id(root) or random_cluster_id()
        launcher = ClusterLauncher(root, nodes, cluster_id, list(args.override), {1: _console_overrides(args)})
        launcher.write_configs()
        with contextlib.suppress(FileNotFoundError):  # a broker finds the token at start, or has none
            (root / fault_control.TOKEN_FILE).unlink()
        for b in launcher.brokers:
            with contextlib.suppress(FileNotFoundError):
                (b.dir / fault_control.ENDPOINT_FILE).unlink()
        if args.fault_control or args.console_allow_faults:
            fault_control.write_token(root)
        started = time.monotonic()
        try:
            starting = asyncio.create_task(launcher.start(args.start_timeout))
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([starting, stopping], return_when=asyncio.FIRST_COMPLETED)
            if not starting.done():  # stopped while starting: stop what started
                starting.cancel()
                with contextlib.suppress(asyncio.CancelledError, ClusterStartError):
                    await starting
                await asyncio.to_thread(launcher.stop)
                return 0
            stopping.cancel()
            starting.result()
        except ClusterStartError:
            await asyncio.to_thread(launcher.stop)
            raise
        path = write_cluster_json(root, cluster_id, nodes)
        bootstrap = ",".join(f"{b.host}:{b.port}" for b in launcher.brokers)
        print(f"minibroker cluster: {len(launcher.brokers)} brokers serving at {bootstrap} (controller "
              f"{launcher.controller.host}:{launcher.controller.port}) in {time.monotonic() - started:.2f} s; {path}",
              file=sys.stderr, flush=True)
        await stop.wait()
        print("minibroker cluster: stopping (brokers, then the controller)", file=sys.stderr, flush=True)
        await asyncio.to_thread(launcher.stop)
        return 0
    finally:
        lock.unlock()


def _lock_root(root: Path) -> FileLock:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LogDirFailure(f"Failed to create or validate cluster directory {root}: {e.strerror or e}") from None
    lock = FileLock(root / ".lock")
    if not lock.try_lock():
        raise LogDirFailure(f"Failed to acquire lock on {root / '.lock'}. A notable reason is that another "
                            "`minibroker cluster` is running on this directory.")
    return lock


_START_ERRORS: tuple[type[Exception], ...] = (ClusterStartError, *STARTUP_ERRORS)


def main(argv: list[str]) -> int:
    """The `cluster` subcommand (minibroker.cli): exit 0 after a clean stop, 2 on a start-up error."""
    args = parse_args(argv)
    try:
        return asyncio.run(run(args))
    except _START_ERRORS as e:
        print("minibroker: " + " ".join(str(e).split()), file=sys.stderr, flush=True)  # one line
        return EXIT_STARTUP_ERROR
