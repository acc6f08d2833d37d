"""Command line: `python -m minibroker --host H --port P --data-dir D [--config F] [--override k=v ...]`.

Subcommands for the tools (e.g. `python -m minibroker dump-log FILE...`) are dispatched by name
before the broker's own options are parsed.

A start that cannot work (an invalid config value, a port in use, a host that is not this
machine's, a data directory that is a file, unwritable or used by another broker, a config file
that is not YAML) is one line on stderr naming the key, listener or path, and exit status 2
(Kafka's kafka-server-start exits non-zero after "Exiting Kafka due to fatal exception"); the
traceback only with `--debug`. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
import traceback
from pathlib import Path

import uvloop

# the config and the socket server come before the broker's modules: the listeners are bound first
from minibroker.config import BrokerConfig
from minibroker.network.socket_server import ListenerBindError, SocketServer
from minibroker.startup_errors import EXIT_STARTUP_ERROR, STARTUP_ERRORS

TOOLS = {
    "dump-log": "minibroker.tools.dump_log",
    "certs": "minibroker.security.certs",
    "cluster": "minibroker.cluster_launcher",
}
TOOL_SUMMARIES = {  # for --help; each tool has its own --help
    "dump-log": "print segment, index and snapshot files as Kafka's kafka-dump-log does",
    "certs": "make a CA and server/client certificates for TLS listeners (development and tests)",
    "cluster": "one KRaft controller and N brokers, each its own process (D/cluster.json lists them)",
}
# start-up errors said in one line (exit status 2); their messages name the key, listener or path
# (minibroker.startup_errors: shared with `python -m minibroker cluster`)
DEFAULT_DATA_DIR = "data"  # log.dir's dev default (minibroker.config.keys), under the working directory


def parse_args(argv: list[str]) -> argparse.Namespace:
    tools = "\n".join(f"  {name:<10} {TOOL_SUMMARIES[name]}" for name in TOOLS)
    p = argparse.ArgumentParser(
        prog="minibroker", description="A Kafka-protocol broker on one machine.",
        usage="%(prog)s [options]\n       %(prog)s {" + ",".join(TOOLS) + "} ...",
        epilog=f"subcommands (`minibroker <name> --help` for each):\n{tools}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default=None, help="address to listen on and advertise (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default 9092; 0 picks a free one)")
    p.add_argument("--data-dir", default=None,
                   help=f"log.dirs: where partitions are stored (default: log.dirs or log.dir of --config, "
                        f"else ./{DEFAULT_DATA_DIR}); one broker per directory (its .lock)")
    p.add_argument("--config", type=Path, default=None, help="YAML file with Kafka's config keys")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="set a config key (repeatable), e.g. --override num.partitions=3")
    p.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop", help="event loop (default uvloop)")
    p.add_argument("--log-level", default="INFO", type=str.upper,
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
    p.add_argument("--debug", action="store_true", help="a start-up error prints its traceback too")
    p.add_argument("--trace", action="store_true", help="print one line per request and response")
    p.add_argument("--trace-format", choices=["text", "json"], default="text")
    p.add_argument("--trace-bytes", action="store_true", help="add an annotated hex view to the trace")
    p.add_argument("--console-port", type=int, default=None,
                   help="serve the web console and /metrics on this port (console.port; 0 = any free port)")
    p.add_argument("--console-host", default=None, help="address of the console (console.host; default 127.0.0.1)")
    p.add_argument("--console-allow-writes", action="store_true",
                   help="let the console create/delete topics, produce and reset offsets (console.allow.writes)")
    p.add_argument("--console-allow-faults", action="store_true",
                   help="let tests set faults over HTTP: POST/GET/DELETE /api/faults (console.allow.faults)")
    p.add_argument("--schema-registry-port", type=int, default=None,
                   help="serve the schema registry (Confluent's REST API) on this port (schema.registry.port; "
                        "0 = any free port)")
    p.add_argument("--schema-registry-host", default=None,
                   help="address of the schema registry (schema.registry.host; default 127.0.0.1)")
    args = p.parse_args(argv)
    for key, value in (("console.port", args.console_port), ("console.host", args.console_host),
                       ("console.allow.writes", "true" if args.console_allow_writes else None),
                       ("console.allow.faults", "true" if args.console_allow_faults else None),
                       ("schema.registry.port", args.schema_registry_port),
                       ("schema.registry.host", args.schema_registry_host)):
        if value is not None:
            args.override.append(f"{key}={value}")
    return args


async def serve(args: argparse.Namespace) -> int:
    # SIGTERM / Ctrl-C from the first moment: one that comes while the broker starts stops it
    # cleanly once started, instead of killing it half-built (Kafka's shutdown hook)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    config = BrokerConfig.load(args.config, args.override, host=args.host, port=args.port,
                               data_dir=args.data_dir)
    tracer = None
    if args.trace:
        from minibroker.tools.trace import Tracer  # lazy: only with --trace

        tracer = Tracer(sys.stdout, fmt=args.trace_format, with_bytes=args.trace_bytes)
    if config.get("process.roles"):
        from minibroker.kafka_raft_server import serve_kraft  # lazy: the controller only with process.roles

        return await serve_kraft(config, stop, tracer)
    # The listeners are bound before the broker's modules are imported (about 30 ms, issue 22): a
    # client that connects meanwhile waits in the backlog until the broker accepts, as Kafka's
    # acceptors take connections before request processing is enabled, instead of being refused.
    socket_server = SocketServer(config)
    socket_server.bind()
    from minibroker.server import BrokerServer  # lazy: imported once the listeners are bound (above)

    server = BrokerServer(config, socket_server=socket_server)
    try:
        await server.startup()
    except ListenerBindError:  # the console's port (the listeners are bound already): built, so stop cleanly
        await server.shutdown()
        raise
    if server.console is not None:
        print(f"minibroker console: {server.console.url}", file=sys.stderr, flush=True)
    if server.schema_registry is not None:
        print(f"minibroker schema registry: {server.schema_registry.url}", file=sys.stderr, flush=True)
    if tracer is not None:
        server.trace_listeners.add(tracer)
    # glibc's malloc thresholds (minibroker.malloc_tuning) pay off once produce requests flow: set
    # a second after listening, so its ctypes import is not on the start path (issue 22)
    loop.call_later(TUNE_MALLOC_AFTER_S, _tune_malloc)
    await stop.wait()
    logging.getLogger("minibroker").info("shutting down")
    await server.shutdown()
    return 0


TUNE_MALLOC_AFTER_S = 1.0


def _tune_malloc() -> None:
    from minibroker.malloc_tuning import tune_malloc  # lazy: ctypes, a second after listening

    tune_malloc()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in TOOLS:
        return importlib.import_module(TOOLS[argv[0]]).main(argv[1:])
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    try:
        if args.loop == "uvloop":
            return uvloop.run(serve(args))
        return asyncio.run(serve(args))
    except STARTUP_ERRORS as e:
        if args.debug:
            traceback.print_exc()
        print("minibroker: " + " ".join(str(e).split()), file=sys.stderr, flush=True)  # one line
        return EXIT_STARTUP_ERROR
