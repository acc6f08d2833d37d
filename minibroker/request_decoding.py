"""Decoding a large request body, and encoding its response, off the event loop (issue 30,
finding 9).

Theory of operation: the generic codec (minibroker_protocol.codec) builds an object per struct, about a
microsecond or more per element, so a request of many megabytes of small elements (a
DescribeProducers of a million topic names) took seconds of the one event loop, and every other
client waited. Kafka decodes on its network and request-handler threads. Here a body above
`OFF_LOOP_BYTES` (Produce: `OFF_LOOP_PRODUCE_BYTES`, its records stay bytes and cost nothing to
decode) is decoded on one worker thread; the loop keeps answering others meanwhile, the
interpreter's switch interval handing it the GIL every few milliseconds; its response is encoded
there too. One thread, so only one large body's objects are built at a time; the others wait
their turn (their frames are already charged to the memory pool).

Bounds: Kafka's own come first, the codec refuses a collection of more than 1,000,000 elements
and more than 10,000 tagged fields (minibroker_protocol.codec). Then what the handler does with the request
runs on the loop, at a cost per element (a DescribeProducers topic costs its handler and its
response about as much as its decoding): so a request is refused once it holds more than
`MAX_REQUEST_ELEMENTS` array elements in all, as soon as its decoding passes that count, and its
connection closed as for any request Kafka cannot parse. Kafka has no such bound; no client sends
a hundred thousand elements in one request (a body up to 64 KiB is decoded on the loop unbudgeted,
and cannot hold many more).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from minibroker_protocol.apis import produce
from minibroker_protocol.codec import Chunk, decode_from
from minibroker_protocol.headers import encode_response_frame
from minibroker_protocol.schema import Api, M, Message, Schema

OFF_LOOP_BYTES = 64 * 1024
OFF_LOOP_PRODUCE_BYTES = 1024 * 1024
MAX_REQUEST_ELEMENTS = 100_000

_executor: ThreadPoolExecutor | None = None


def decodes_off_loop(api_key: int, body_bytes: int) -> bool:
    """Whether a body this large is decoded on the worker thread (a cheap test, for every request)."""
    return body_bytes > (OFF_LOOP_PRODUCE_BYTES if api_key == produce.API.key else OFF_LOOP_BYTES)


def worker() -> ThreadPoolExecutor:
    """The one thread that large requests' work runs on (decoding, encoding, record walks)."""
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="request-decoder")
    return _executor


def _decode(schema: Schema[M], version: int, frame: bytes | bytearray, pos: int) -> tuple[M, int]:
    return decode_from(schema, version, frame, pos, max_elements=MAX_REQUEST_ELEMENTS)


async def decode_off_loop(schema: Schema[M], version: int, frame: bytes | bytearray, pos: int) -> tuple[M, int]:
    """`decode_from` on the decoding thread, within MAX_REQUEST_ELEMENTS; raises DecodeError."""
    return await asyncio.get_running_loop().run_in_executor(worker(), _decode, schema, version, frame, pos)


async def encode_off_loop(api: Api, version: int, correlation_id: int, response: Message) -> list[Chunk]:
    """`encode_response_frame` on the same thread (the response of a large request)."""
    return await asyncio.get_running_loop().run_in_executor(
        worker(), encode_response_frame, api, version, correlation_id, response)
