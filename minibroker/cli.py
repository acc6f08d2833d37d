"""Command line: `python -m minibroker --host H --port P --data-dir D [--config F] [--override k=v ...]`.

Subcommands for the tools (e.g. `python -m minibroker dump-log FILE...`) are dispatched by name
before the broker's own options are parsed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
from pathlib import Path

import uvloop

# the config and the socket server come before the broker's modules: the listeners are bound first
from minibroker.config import BrokerConfig
from minibroker.network.socket_server import SocketServer
from storage.meta_properties import MetaPropertiesError

TOOLS = {
    "dump-log": "minibroker.tools.dump_log",
    "certs": "minibroker.security.certs",
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="minibroker", description="A Kafka-protocol broker on one machine.")
    p.add_argument("--host", default=None, help="address to listen on and advertise (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default 9092; 0 picks a free one)")
    p.add_argument("--data-dir", default=None, help="log.dirs: where partitions are stored")
    p.add_argument("--config", type=Path, default=None, help="YAML file with Kafka's config keys")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="set a config key (repeatable), e.g. --override num.partitions=3")
    p.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop", help="event loop (default uvloop)")
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--trace", action="store_true", help="print one line per request and response")
    p.add_argument("--trace-format", choices=["text", "json"], default="text")
    p.add_argument("--trace-bytes", action="store_true", help="add an annotated hex view to the trace")
    p.add_argument("--console-port", type=int, default=None,
                   help="serve the web console and /metrics on this port (console.port; 0 = any free port)")
    p.add_argument("--console-host", default=None, help="address of the console (console.host; default 127.0.0.1)")
    p.add_argument("--console-allow-writes", action="store_true",
                   help="let the console create/delete topics, produce and reset offsets (console.allow.writes)")
    args = p.parse_args(argv)
    for key, value in (("console.port", args.console_port), ("console.host", args.console_host),
                       ("console.allow.writes", "true" if args.console_allow_writes else None)):
        if value is not None:
            args.override.append(f"{key}={value}")
    return args


async def serve(args: argparse.Namespace) -> int:
    config = BrokerConfig.load(args.config, args.override, host=args.host, port=args.port,
                               data_dir=args.data_dir)
    if config.get("process.roles"):
        from minibroker.kafka_raft_server import serve_kraft  # lazy: the controller only with process.roles

        return await serve_kraft(config)
    # The listeners are bound before the broker's modules are imported (about 30 ms, issue 22): a
    # client that connects meanwhile waits in the backlog until the broker accepts, as Kafka's
    # acceptors take connections before request processing is enabled, instead of being refused.
    socket_server = SocketServer(config)
    socket_server.bind()
    from minibroker.server import BrokerServer  # lazy: imported once the listeners are bound (above)

    server = BrokerServer(config, socket_server=socket_server)
    try:
        await server.startup()
    except MetaPropertiesError as e:
        # a data dir of another node or cluster: one line, no traceback (Kafka logs "Exiting Kafka
        # due to fatal exception" with MetaPropertiesEnsemble's message)
        print(f"minibroker: {e}", file=sys.stderr, flush=True)
        return 1
    if server.console is not None:
        print(f"minibroker console: {server.console.url}", file=sys.stderr, flush=True)
    if args.trace:
        from minibroker.tools.trace import Tracer  # lazy: only with --trace

        server.trace_listeners.add(Tracer(sys.stdout, fmt=args.trace_format, with_bytes=args.trace_bytes))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # glibc's malloc thresholds (minibroker.malloc_tuning) pay off once produce requests flow: set
    # a second after listening, so its ctypes import is not on the start path (issue 22)
    loop.call_later(TUNE_MALLOC_AFTER_S, _tune_malloc)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
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
    if args.loop == "uvloop":
        return uvloop.run(serve(args))
    return asyncio.run(serve(args))
