"""The controller's listener (Kafka: ControllerServer with its own SocketServer).

One asyncio server on the controller listener (`controller.listener.names`, e.g.
CONTROLLER://127.0.0.1:9093): size-prefixed frames read one at a time per connection and answered
in order (a heartbeat or a fetch of one broker never overtakes its previous request), each
dispatched to minibroker.controller.controller_apis. An unknown api key closes the connection and an
unserved version gets UNSUPPORTED_VERSION, as on the broker listeners. PLAINTEXT only: the
controller listener has no TLS or SASL here (docs/differences.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import uuid
from pathlib import Path

from minibroker.controller.controller_apis import ControllerApis
from minibroker.controller.controller_registration_control import self_registration
from minibroker.controller.quorum_controller import ControllerConfig, QuorumController
from minibroker.features import kraft_supported
from minibroker_protocol.codec import decode
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.headers import decode_request_header, encode_response_frame
from minibroker_protocol.schema import Message

log = logging.getLogger("minibroker.controller")

MAX_FRAME = 100 * 1024 * 1024  # socket.request.max.bytes


class ControllerServer:
    def __init__(self, log_dir: Path, config: ControllerConfig, host: str, port: int,
                 listener_name: str = "CONTROLLER"):
        self.controller = QuorumController(log_dir, config)
        self.apis = ControllerApis(self.controller)
        self.host, self.port, self.listener_name = host, port, listener_name
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def startup(self) -> None:
        await self.controller.start()
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.apis.listener = (self.listener_name, self.host, self.port)
        # KIP-919: registered with the active controller, itself (a new incarnation at every start)
        self.controller.self_registration = self_registration(self.controller.config.node_id, uuid.uuid4(),
                                                              self.apis.listener, kraft_supported())
        await self.controller.maybe_register_self()
        log.info("controller %d listening on %s:%d", self.controller.config.node_id, self.host, self.port)

    async def shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.controller.shutdown()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                if not 0 < size <= MAX_FRAME:
                    return
                response = await self._handle(await reader.readexactly(size))
                if response is None:
                    return
                writer.write(response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except Exception:  # an unreadable request: this connection ends, the controller goes on
            log.warning("closing a controller connection after a request it could not read", exc_info=True)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _handle(self, frame: bytes) -> bytes | None:
        header, pos = decode_request_header(frame)
        served = self.apis.served.get(header.api_key)
        if served is None:
            log.warning("closing a controller connection: api key %d is not served here", header.api_key)
            return None
        version = header.api_version
        if not served.lo <= version <= served.hi:
            if served.api.key != 18:
                log.warning("closing a controller connection: %s v%d is not served", served.api.name, version)
                return None
            # ApiVersions: UNSUPPORTED_VERSION with our ranges, in v0 (KIP-511)
            unsupported = self.apis.api_versions()
            unsupported.error_code = ErrorCode.UNSUPPORTED_VERSION
            resp: Message = unsupported
            version = 0
        else:
            resp = await served.handler(decode(served.api.request, version, frame, pos), version)
        chunks = encode_response_frame(served.api, version, header.correlation_id, resp)
        return b"".join(c if isinstance(c, bytes | bytearray | memoryview) else c.read_all() for c in chunks)
