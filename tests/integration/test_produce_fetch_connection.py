"""Bad input at the connection level: oversize frames, unknown api keys, unsupported versions,
truncated and malformed bodies. Each must close (or answer) that one connection and leave the
broker serving everyone else."""

from __future__ import annotations

import logging
import struct

import pytest

from minibroker_protocol.apis import api_versions, metadata, produce
from minibroker_protocol.codec import decode
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.headers import RequestHeader, encode_request_header
from tests.integration.helpers import RawClient, create_topic, module_broker, unique

MAX_REQUEST = 64 * 1024  # socket.request.max.bytes for this module's broker


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory, {"socket.request.max.bytes": MAX_REQUEST}) as b:
        yield b


def api_versions_works(bootstrap: str) -> bool:
    with RawClient(bootstrap) as raw:
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                  client_software_version="1"))
    return body.error_code == 0 and any(k.api_key == produce.API.key for k in body.api_keys)


def header_bytes(api_key: int, version: int, correlation_id: int = 7, client_id: str = "it-raw") -> bytes:
    out = bytearray()
    encode_request_header(out, RequestHeader(api_key, version, correlation_id, client_id))
    return bytes(out)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_frame_above_socket_request_max_bytes_closes_with_a_log_line(kafka_broker_module, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    with RawClient(kafka_broker_module.bootstrap) as bystander, RawClient(kafka_broker_module.bootstrap) as raw:
        # Only the size prefix: the broker must refuse before reading (or buffering) a body.
        raw.send_raw(struct.pack(">i", MAX_REQUEST + 1))
        assert raw.closed_by_peer()
        # The other connection, opened before, and new ones are still served.
        body = bystander.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                        client_software_version="1"))
        assert body.error_code == 0
    assert api_versions_works(kafka_broker_module.bootstrap)
    assert any(f"{MAX_REQUEST + 1} bytes exceeds the limit of {MAX_REQUEST}" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_a_frame_at_the_limit_is_read(kafka_broker_module):
    """The cap is on the size prefix: a request of exactly socket.request.max.bytes is handled."""
    topic = unique("at-limit")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        R = metadata.REQUEST
        body = R(topics=[R.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)
        # Trailing bytes after a body are ignored (Kafka's RequestContext.parseRequest), so padding
        # there makes a valid request of exactly the limit.
        payload = raw.request_bytes(metadata.API, 9, body, 1)[4:]
        payload += b"\0" * (MAX_REQUEST - len(payload))
        raw.send_raw(framed(payload))
        _, resp = raw.recv(metadata.API, 9)
    assert [t.name for t in resp.topics] == [topic]


def test_negative_frame_size_closes(kafka_broker_module):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.send_raw(struct.pack(">i", -5))
        assert raw.closed_by_peer()
    assert api_versions_works(kafka_broker_module.bootstrap)


@pytest.mark.parametrize("api_key", [99, 1000, -1])
def test_unknown_api_key_closes(kafka_broker_module, api_key, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.send_raw(framed(header_bytes(api_key, 0)))
        assert raw.closed_by_peer()
    assert any(f"unknown api key {api_key}" in r.getMessage() for r in caplog.records)
    assert api_versions_works(kafka_broker_module.bootstrap)


def test_api_versions_v99_gets_unsupported_version_in_v0_form(kafka_broker_module):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        # The body of a version we do not know is unreadable to us; the broker must not try.
        raw.send_raw(framed(header_bytes(api_versions.API.key, 99, correlation_id=42) + b"\x07junk"))
        frame = raw.recv_frame()
        # Response header v0 (just the correlation id), body in ApiVersions v0.
        assert struct.unpack_from(">i", frame)[0] == 42
        body = decode(api_versions.RESPONSE, 0, frame, 4)
        assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
        listed = [(k.api_key, k.min_version, k.max_version) for k in body.api_keys]
        assert listed == advertised_ranges(kafka_broker_module)
        assert (api_versions.API.key, 0, 5) in listed  # v5: KIP-1242, as Kafka 4.4
        # The connection stays open: the client retries at a version we listed, and gets the same list.
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                  client_software_version="1"))
        assert body.error_code == 0
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == listed


def advertised_ranges(mb) -> list[tuple[int, int, int]]:
    """What ApiVersions must list: every handler's range, except Produce, which starts at v0."""

    def ranges(broker) -> list[tuple[int, int, int]]:
        return sorted((h.api.key, 0 if h.api.key == produce.API.key else h.versions.lo, h.versions.hi)
                      for h in broker.handlers.values())

    return mb.call(ranges)


def served_range(mb, api) -> tuple[int, int]:
    return mb.call(lambda broker: (broker.handlers[api.key].versions.lo, broker.handlers[api.key].versions.hi))


def test_produce_is_advertised_from_v0(kafka_broker_module, caplog):
    """KAFKA-18659: librdkafka < 2.10 compresses with gzip/snappy/lz4 only if Produce v0 is listed
    (see test_kcat.test_compressed_produce). Kafka 4.0 lists it and closes on v0-2 requests; a
    broker that serves the legacy formats lists it because it serves it."""
    with RawClient(kafka_broker_module.bootstrap) as raw:
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                  client_software_version="1"))
    [entry] = [k for k in body.api_keys if k.api_key == produce.API.key]
    assert (entry.min_version, entry.max_version) == (0, 13)
    lo, _ = served_range(kafka_broker_module, produce.API)
    caplog.set_level(logging.INFO, logger="minibroker")
    for version in range(0, lo):  # advertised but not served: the connection is closed
        with RawClient(kafka_broker_module.bootstrap) as raw:
            raw.send_raw(framed(header_bytes(produce.API.key, version) + b"\x00\x01\x00\x00\x13\x88"))
            assert raw.closed_by_peer(), version
        assert any(f"Produce v{version} is not supported" in r.getMessage() for r in caplog.records)
    assert api_versions_works(kafka_broker_module.bootstrap)


def test_version_above_the_served_range_closes(kafka_broker_module, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    _, hi = served_range(kafka_broker_module, metadata.API)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.send_raw(framed(header_bytes(metadata.API.key, hi + 1) + b"\x00" * 8))
        assert raw.closed_by_peer()
    assert any(f"Metadata v{hi + 1} is not supported" in r.getMessage() for r in caplog.records)
    assert api_versions_works(kafka_broker_module.bootstrap)


def test_truncated_body_closes(kafka_broker_module, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    with RawClient(kafka_broker_module.bootstrap) as raw:
        R = metadata.REQUEST
        body = R(topics=[R.MetadataRequestTopic(name="some-topic")], allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)
        whole = raw.request_bytes(metadata.API, 12, body, 1)[4:]
        raw.send_raw(framed(whole[:-6]))  # cut inside the topic name
        assert raw.closed_by_peer()
    assert any("malformed Metadata v12" in r.getMessage() for r in caplog.records)
    assert api_versions_works(kafka_broker_module.bootstrap)


@pytest.mark.parametrize("version, garbage", [
    # v4: topics is an int32-counted array, then allow_auto_topic_creation.
    pytest.param(4, struct.pack(">i", 0x7FFFFFF0), id="huge-array-length"),
    pytest.param(4, b"", id="empty-body"),
    pytest.param(4, struct.pack(">ih", 1, 50) + b"short", id="string-past-the-end"),
    # v12 (flexible): topics is a compact array, its length an unsigned varint.
    pytest.param(12, b"\xff" * 6, id="unterminated-varint"),
    pytest.param(12, b"\x02\x00" * 2, id="body-cut-short"),
])
def test_malformed_body_closes(kafka_broker_module, version, garbage):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.send_raw(framed(header_bytes(metadata.API.key, version) + garbage))
        assert raw.closed_by_peer()
    assert api_versions_works(kafka_broker_module.bootstrap)


def test_truncated_header_closes(kafka_broker_module):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.send_raw(framed(b"\x00\x12\x00"))  # three bytes of a header
        assert raw.closed_by_peer()
    assert api_versions_works(kafka_broker_module.bootstrap)


def test_client_closing_mid_frame_leaves_the_broker_serving(kafka_broker_module):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.send_raw(struct.pack(">i", 1000) + b"\x00" * 10)
    assert api_versions_works(kafka_broker_module.bootstrap)
