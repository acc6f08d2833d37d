"""--trace: a kcat -P session reads ApiVersions -> Metadata -> Produce; fields of the version on
the wire only; batches summarised; response sizes are what went out; the annotated hex view adds
up seed 002's 76-byte record; json lines; a failing tracer never fails a request."""

from __future__ import annotations

import io
import json
import re
import shutil
import socket
import struct
import subprocess

import pytest
from kafka import KafkaProducer

from minibroker.testing import BrokerThread
from minibroker.tools.trace import Tracer
from minibroker_protocol.apis import api_versions
from minibroker_protocol.codec import encode
from minibroker_protocol.headers import RequestHeader, encode_request_header
from tests.helpers import TEST_OVERRIDES

kcat = shutil.which("kcat")


@pytest.fixture
def traced(tmp_path):
    with BrokerThread(tmp_path / "d", overrides=dict(TEST_OVERRIDES)) as b:
        yield b


def attach(b: BrokerThread, **kw) -> io.StringIO:
    out = io.StringIO()
    b.call(lambda broker: setattr(broker.apis, "tracer", Tracer(out, **kw)))
    return out


def detach(b: BrokerThread) -> None:
    b.call(lambda broker: setattr(broker.apis, "tracer", None))


@pytest.mark.skipif(kcat is None, reason="kcat not installed")
def test_kcat_produce_session_reads_as_the_protocol(traced):
    out = attach(traced)
    subprocess.run([kcat, "-b", traced.bootstrap, "-P", "-t", "demo", "-K", "\t"], input=b"key\tvalue\n",
                   timeout=30, check=True)
    traced.wait_for(lambda: traced.end_offsets("demo") == {0: 1}, timeout=5)
    lines = out.getvalue().splitlines()
    apis = [re.match(r"(->|<-) (\w+) v(\d+) corr=(\d+)", ln).groups() for ln in lines]
    names = [a[1] for a in apis if a[0] == "->"]
    assert names[:2] == ["ApiVersions", "Metadata"] and names[-1] == "Produce"
    for req, resp in zip(apis[::2], apis[1::2], strict=True):  # every request answered, in order
        assert req[0] == "->" and resp[0] == "<-" and req[1:] == resp[1:]
    produce = next(ln for ln in lines if ln.startswith("-> Produce"))
    assert "client=rdkafka" in produce and "acks: -1" in produce
    assert "records: {bytes: 76, batches: [{base_offset: 0, count: 1, codec: 'none', bytes: 76}]}" in produce
    answer = next(ln for ln in lines if ln.startswith("<- Produce"))
    assert re.search(r" \d+ B \d+\.\d ms \{responses: \[\{name: 'demo', partition_responses: "
                     r"\[\{index: 0, error_code: 0, base_offset: 0", answer)


def test_only_fields_of_the_version_on_the_wire(traced):
    out = attach(traced)
    p = KafkaProducer(bootstrap_servers=traced.bootstrap, enable_idempotence=False)
    p.send("v", b"x").get(10)
    p.close(5)
    md = next(ln for ln in out.getvalue().splitlines() if ln.startswith("-> Metadata") and "name: 'v'" in ln)
    version = int(re.search(r"Metadata v(\d+)", md).group(1))
    # topic_id arrived in Metadata v10, include_cluster_authorized_operations in v8-10
    assert ("topic_id" in md) == (version >= 10)
    assert ("include_cluster_authorized_operations" in md) == (8 <= version <= 10)


def _api_versions_frame(correlation_id: int) -> bytes:
    body = bytearray()
    encode_request_header(body, RequestHeader(api_versions.API.key, 3, correlation_id, "raw"))
    encode(api_versions.REQUEST, 3, api_versions.REQUEST(client_software_name="raw",
                                                         client_software_version="1"), body)
    return struct.pack(">i", len(body)) + bytes(body)


def _read_response(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        head += sock.recv(4 - len(head))
    (n,) = struct.unpack(">i", head)
    data = b""
    while len(data) < n:
        data += sock.recv(n - len(data))
    return head + data


def test_sizes_are_the_bytes_on_the_wire_and_json_lines(traced):
    out = attach(traced, fmt="json", with_bytes=True)
    frame = _api_versions_frame(77)
    with socket.create_connection(tuple(traced.bootstrap.rsplit(":", 1)), timeout=5) as s:
        s.sendall(frame)
        resp = _read_response(s)
    entry = json.loads(out.getvalue().splitlines()[0])
    assert entry["api"] == "ApiVersions" and entry["correlation_id"] == 77 and entry["client_id"] == "raw"
    assert entry["request_bytes"] == len(frame) and entry["request_hex"] == frame.hex()
    assert entry["response_bytes"] == len(resp)
    assert entry["request"] == {"client_software_name": "raw", "client_software_version": "1"}
    assert entry["response"]["error_code"] == 0 and entry["latency_ms"] >= 0


def test_annotated_hex_adds_up_the_76_byte_record(traced):
    out = attach(traced, with_bytes=True)
    p = KafkaProducer(bootstrap_servers=traced.bootstrap, enable_idempotence=False, linger_ms=0)
    p.send("hex", key=b"key", value=b"value").get(10)
    p.close(5)
    text = out.getvalue()
    block = text[text.index("-> Produce"):text.index("<- Produce")].splitlines()[1:]
    labels = []
    pos = 0
    for ln in block:  # the spans cover the frame exactly once, in order
        elided = re.fullmatch(r"    ([0-9a-f]{4})  \.\.\. (\d+) more bytes", ln)
        if elided:
            assert int(elided.group(1), 16) == pos
            pos += int(elided.group(2))
            continue
        off, hx, label = re.match(r"    ([0-9a-f]{4})  ((?:[0-9a-f]{2} )*[0-9a-f]{2})\s*(.*)$", ln).groups()
        assert int(off, 16) == pos
        pos += len(hx.split())
        labels.append((off, hx, label))
    assert pos == int(re.search(r"-> Produce v\d+ corr=\d+ client=\S+ (\d+) B", text).group(1))
    by_label = {lab.strip(): (int(off, 16), len(hx.split())) for off, hx, lab in labels if lab}
    assert "records: 76 bytes follow" in by_label
    start = by_label["batch 0: baseOffset = 0"][0]
    assert by_label["magic = 2"] == (start + 16, 1)
    rec = next(v for k, v in by_label.items() if k.startswith("record 0: length = 14"))
    assert rec[0] - start == 61  # the v2 batch header is 61 bytes; 61 + 1 + 14 = 76
    assert by_label["key = b'key'"][1] == 3 and by_label["value = b'value'"][1] == 5
    assert by_label["headers count = 0"][0] == start + 75


def test_a_broken_tracer_does_not_fail_requests(traced):
    class Broken(io.StringIO):
        def write(self, s):
            raise OSError("stdout closed")

    traced.call(lambda broker: setattr(broker.apis, "tracer", Tracer(Broken())))
    with socket.create_connection(tuple(traced.bootstrap.rsplit(":", 1)), timeout=5) as s:
        s.sendall(_api_versions_frame(5))
        assert struct.unpack(">i", _read_response(s)[4:8])[0] == 5
    detach(traced)
