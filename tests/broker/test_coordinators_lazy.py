"""The coordinators are built when first needed (minibroker.coordinators, issue 22): a broker
with nothing on disk serves without them, a request that needs one builds it there and then, a
test thread reading one gets it built on the broker's loop, and one with state on disk is loaded
before the broker serves."""

from __future__ import annotations

import socket
import struct

import pytest

from minibroker.coordinators import Coordinators
from minibroker.testing import BrokerThread


def _find_coordinator(bootstrap: str, key: str, key_type: int = 0) -> int:
    """FindCoordinator v1 (0: a group, 1: a transactional id) over a raw socket: the answer's error code."""
    host, port = bootstrap.rsplit(":", 1)
    raw = key.encode()
    body = struct.pack(">hhih", 10, 1, 7, 4) + b"test" + struct.pack(">h", len(raw)) + raw + bytes([key_type])
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        resp = s.recv(size, socket.MSG_WAITALL)
    correlation_id, _throttle, error = struct.unpack(">iih", resp[:10])
    assert correlation_id == 7
    return error


def test_built_by_the_first_request_or_reader_and_loaded_at_start_when_on_disk(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Coordinators, "LOAD_REST_AFTER_S", 60.0)  # no background build during the test
    with BrokerThread(data_dir=tmp_path) as b:
        coordinators = b.broker.coordinators
        # nothing on disk: none is built before something needs it
        assert b.call(lambda br: (br.coordinators._group, br.coordinators._txn, br.coordinators._share)) == (
            None, None, None)
        assert _find_coordinator(b.bootstrap, "g1") == 0  # builds the group coordinator and its topic
        assert b.call(lambda br: br.coordinators._group is not None and br.coordinators._group.active)
        # from this (non-loop) thread: built on the broker's loop, started
        assert b.broker.txn_coordinator.active
        assert b.broker.share_groups is coordinators.share
        assert _find_coordinator(b.bootstrap, "t1", key_type=1) == 0  # creates __transaction_state
    with BrokerThread(data_dir=tmp_path) as b:
        # __consumer_offsets and __transaction_state are on disk now: loaded before serving; no share state
        assert b.call(lambda br: (br.coordinators._group is not None, br.coordinators._txn is not None,
                                  br.coordinators._share is not None)) == (True, True, False)
