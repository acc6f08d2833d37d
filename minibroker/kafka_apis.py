"""`KafkaApis`: the request dispatcher (Kafka: KafkaApis.handle, with RequestChannel's metrics).

Theory of operation: a connection (minibroker.network.processor) hands each request frame to
`handle`, which
  1. lets the connection's SASL exchange take what comes before a request header (a refused or
     oversized frame, raw tokens after a v0 SaslHandshake; minibroker.security.sasl);
  2. decodes the request header, once: an unreadable one closes the connection;
  3. asks the SASL exchange, on SASL_* listeners, whether the request is its own to answer
     (SaslHandshake, SaslAuthenticate, anything before authentication) or goes on;
  4. finds the handler of the API (an unknown api key closes the connection, as Kafka does) and
     checks the version: UNSUPPORTED_VERSION, answered in ApiVersions v0 for ApiVersions (KIP-511);
  5. decodes the body with the API's schema and awaits the handler; a KafkaError becomes the
     response's top-level error code, any other failure UNKNOWN_SERVER_ERROR;
  5a. with faults set (minibroker.faults, issue 32), lets them turn the handler into one that
     delays, drops, closes or answers an error; without any this costs one attribute check;
  6. records the request's metrics, calls the trace hook (--trace, the console), and encodes the
     response once (header + body, record data left as file regions for the zero-copy path);
     with client quotas set, a throttled response carries its throttle time and the channel is
     muted for it (KIP-219).
Handlers get one `RequestContext` (minibroker.handlers.registry) carrying the `BrokerServices`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from minibroker.handlers.api_versions import advertised
from minibroker.handlers.registry import Handler, HandlerFn, RequestContext, ServedHandlers
from minibroker.network.channel import Answer, Channel
from minibroker.quotas.manager import quota_user
from minibroker.quotas.throttle import request_throttle_ms
from minibroker.request_decoding import decode_off_loop, decodes_off_loop, encode_off_loop
from minibroker.services import BrokerServices
from minibroker_protocol import types as t
from minibroker_protocol.apis import api_versions
from minibroker_protocol.codec import Output, decode_from, encode
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.headers import decode_request_header, encode_response_frame
from minibroker_protocol.schema import Api, Message
from minibroker_protocol.types import DecodeError

log = logging.getLogger("minibroker.kafka_apis")


class RequestTracer(Protocol):
    """The trace hook (minibroker.tools.trace.TraceListeners)."""

    def request(self, ctx: RequestContext, request: Message, response: Message | None, frame: bytes | bytearray,
                started: float) -> None: ...


class RequestFaults(Protocol):
    """The fault hook (minibroker.faults.registry.FaultRegistry): the handler a request gets."""

    def wrap(self, ctx: RequestContext, api: Api, request: Message, fn: HandlerFn) -> HandlerFn: ...


class KafkaApis:
    def __init__(self, services: BrokerServices, handlers: ServedHandlers):
        self.services = services
        self.handlers = handlers
        self.tracer: RequestTracer | None = None  # set while a trace listener is attached
        self.faults: RequestFaults | None = None  # set while a request fault is (minibroker.faults)

    async def handle(self, channel: Channel, frame: bytes | bytearray) -> Answer:
        """The response's chunks for one request frame, or None for no response."""
        started = time.perf_counter()
        sasl = channel.authenticator
        if sasl is not None and (early := sasl.before_header(channel, frame)) is not None:
            return await early
        if self.tracer is not None:
            # The produce path assigns offsets in a writable frame in place (minibroker_storage.log); a trace
            # shows the bytes as they came, so it gets an immutable copy and the log copies instead.
            frame = bytes(frame)
        try:
            header, pos = decode_request_header(frame)
        except DecodeError as e:
            if sasl is not None and not sasl.authenticated:
                return sasl.unreadable_header(channel)
            log.warning("closing connection from %s: unreadable request header (%s)", channel.peer, e)
            channel.close("bad request header")
            return None
        if sasl is not None and (exchange := sasl.on_request(channel, header, frame, pos)) is not None:
            return await exchange
        handler = self.handlers.loaded.get(header.api_key) or self.handlers.get(header.api_key)
        if handler is None:
            log.warning("closing connection from %s: unknown api key %d (client %s)",
                        channel.peer, header.api_key, header.client_id)
            channel.close("unknown api key")
            return None
        version = header.api_version
        ctx = RequestContext(header, self.services, channel)
        if version not in handler.versions:
            return self._unsupported_version(ctx, channel, handler)
        try:
            large = decodes_off_loop(header.api_key, len(frame) - pos)
            if large:  # many MB of elements: decoded on a worker thread, within a budget (issue 30)
                request, end = await decode_off_loop(handler.api.request, version, frame, pos)
            else:
                request, end = decode_from(handler.api.request, version, frame, pos)
            if end != len(frame):
                # Kafka's RequestContext.parseRequest ignores bytes after the body, and librdkafka
                # (2.16) sends 3 of them after an all-topics Metadata v12 (AdminClient.list_topics).
                log.debug("%s v%d from %s: %d trailing bytes ignored", handler.api.name, version,
                          channel.peer, len(frame) - end)
        except DecodeError as e:
            log.warning("closing connection from %s: malformed %s v%d request (%s)",
                        channel.peer, handler.api.name, version, e)
            channel.close("malformed request")
            return None
        fn = handler.fn
        if self.faults is not None:
            fn = self.faults.wrap(ctx, handler.api, request, fn)
        try:
            response = await fn(ctx, request)
        except KafkaError as err:  # not `e`: mypyc types a name by its first except clause (DecodeError)
            response = _error_response(handler.api, err.code)
            if response is None:
                log.warning("%s v%d from %s failed: %s", handler.api.name, version, channel.peer, err)
                channel.close("request failed")
                return None
        except Exception:
            log.exception("%s v%d from %s failed", handler.api.name, version, channel.peer)
            response = _error_response(handler.api, ErrorCode.UNKNOWN_SERVER_ERROR)
            if response is None:
                channel.close("internal error")
                return None
        services = self.services
        # counted once the answer is on its way (the connection writes it as this returns): the
        # client waits for no bookkeeping, and the time includes the send, as Kafka's
        # RequestMetrics TotalTimeMs does (issue 33)
        asyncio.get_running_loop().call_soon(services.metrics.request_answered, header.api_key, version, started)
        if self.tracer is not None:
            self.tracer.request(ctx, request, response, frame, started)
        if response is None:
            chunks = None
        elif large:
            chunks = await encode_off_loop(handler.api, version, header.correlation_id, response)
        else:
            chunks = encode_response_frame(handler.api, version, header.correlation_id, response)
        if services.quota_store.quotas:
            throttle = request_throttle_ms(services.client_quotas, header.api_key, header.client_id or "",
                                           len(frame) + 4, response, chunks, time.perf_counter() - started,
                                           user=quota_user(channel.principal))
            if throttle:
                # KIP-219: answer at once with the throttle time, then mute the channel for it
                channel.mute(throttle)
                if response is not None and hasattr(response, "throttle_time_ms"):
                    response.throttle_time_ms = max(response.throttle_time_ms, throttle)
                    chunks = encode_response_frame(handler.api, version, header.correlation_id, response)
        return chunks

    def _unsupported_version(self, ctx: RequestContext, channel: Channel, handler: Handler) -> Answer:
        header = ctx.header
        if header.api_key == api_versions.API.key:
            # KIP-511: answer in ApiVersions v0 with our ranges so the client can pick a version.
            body = api_versions.RESPONSE(error_code=ErrorCode.UNSUPPORTED_VERSION,
                                         api_keys=advertised(self.handlers.versions))
            out = Output(b"\0\0\0\0")
            t.write_int32(out, header.correlation_id)
            encode(api_versions.RESPONSE, 0, body, out)
            out[0:4] = (len(out) - 4).to_bytes(4, "big")
            return [out]
        log.warning("closing connection from %s: %s v%d is not supported (we serve v%s)",
                    channel.peer, handler.api.name, header.api_version, handler.versions)
        channel.close("unsupported version")
        return None


def _error_response(api: Api, code: int) -> Message | None:
    """A response carrying `code` in its top-level error field, for APIs that have one."""
    if any(f.name == "error_code" for f in api.response.fields):
        return api.response(error_code=code)
    return None
