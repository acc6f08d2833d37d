"""Faults over HTTP (`/api/faults` on the console's server, issue 32), driven with urllib as a test
in any language would drive them with curl: set, list (with "fired"), the firings, remove; off
without --console-allow-faults; the console's same-origin rule for writes; the /faults page."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pytest
from kafka import KafkaProducer

from minibroker.testing import BrokerThread
from tests.helpers import TEST_OVERRIDES
from tests.integration.helpers import TIMEOUT


def _call(url: str, method: str = "GET", body: object = None, headers: dict[str, str] | None = None
          ) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            text = resp.read().decode()
            return resp.status, json.loads(text) if resp.headers.get_content_type() == "application/json" else text
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode())


def test_set_list_fire_and_remove_a_fault_over_http(faults_broker):
    b = faults_broker
    api = b.broker.console.url + "api/faults"
    t = b.create_topic(f"faults-h-{uuid.uuid4().hex[:8]}")
    status, fault = _call(api, "POST", {"api": "Produce", "topic": t, "error": "NOT_LEADER_OR_FOLLOWER", "count": 2})
    assert status == 201 and fault["fired"] == 0 and fault["count"] == 2, fault
    fid = fault["id"]
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, retries=5, retry_backoff_ms=20, client_id="http-test")
    try:
        producer.send(t, b"through").get(timeout=TIMEOUT)  # retried past the two errors
    finally:
        producer.close()
    assert b.values(t) == [b"through"]
    status, faults = _call(api)
    assert status == 200 and [(f["id"], f["api"], f["topic"], f["fired"]) for f in faults] == [(fid, "Produce", t, 2)]
    status, one = _call(f"{api}/{fid}?wait_fired=2&timeout=5")
    assert status == 200 and one["fired"] == 2
    status, one = _call(f"{api}/{fid}?wait_fired=3&timeout=0.05")
    assert status == 408 and one["fired"] == 2
    assert _call(f"{api}/{fid}?wait_fired=x")[0] == 400
    status, fired = _call(f"{api}/fired")
    mine = [e for e in fired if e["fault"] == fid]
    assert [(e["on"].split()[0], e["client_id"]) for e in mine] == [("Produce", "http-test")] * 2
    assert _call(f"{api}/{fid}", "DELETE")[0] == 200
    assert _call(api) == (200, [])
    assert _call(f"{api}/{fid}", "DELETE")[0] == 404


def test_component_faults_and_clear_over_http(faults_broker):
    b = faults_broker
    api = b.broker.console.url + "api/faults"
    status, full = _call(api, "POST", {"kind": "disk.full"})
    assert status == 201 and full["count"] is None
    status, slow = _call(api, "POST", {"kind": "disk.slow", "delay_ms": 10, "topic": "nope"})
    assert status == 201
    assert b.call(lambda broker: broker.replica_manager.disk_fault is not None)
    assert _call(api, "DELETE") == (200, {"removed": 2})
    assert b.call(lambda broker: broker.replica_manager.disk_fault is None)


@pytest.mark.parametrize("body", [
    {"api": "Produce"}, {"api": "Produce", "error": "NO_SUCH_ERROR"}, {"api": "Nope", "delay_ms": 5},
    {"api": "Produce", "error": "NONE", "colour": "red"}, {"api": "Produce", "delay_ms": "5"}, [1, 2],
])
def test_bad_faults_are_400(faults_broker, body):
    status, err = _call(faults_broker.broker.console.url + "api/faults", "POST", body)
    assert status == 400, err
    assert _call(faults_broker.broker.console.url + "api/faults") == (200, [])


def test_a_cross_origin_write_is_refused(faults_broker):
    url = faults_broker.broker.console.url
    status, err = _call(url + "api/faults", "POST", {"api": "Metadata", "delay_ms": 5},
                        headers={"Origin": "http://evil.example"})
    assert status == 403 and "cross-origin" in err["error"]
    assert _call(url + "api/faults") == (200, [])


def test_the_faults_page_lists_faults_and_firings(faults_broker):
    b = faults_broker
    with b.faults.inject("Metadata", delay_ms=1, client_id="page-test") as f:
        with urllib.request.urlopen(b.broker.console.url + "faults", timeout=TIMEOUT) as resp:
            page = resp.read().decode()
        assert f"fault {f.id}: delay 1 ms" in page and "page-test" in page


def test_faults_are_off_without_the_flag(tmp_path):
    with BrokerThread(tmp_path / "data", overrides={**TEST_OVERRIDES, "console.port": 0}) as b:
        api = b.broker.console.url + "api/faults"
        for method, body in (("POST", {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"}), ("GET", None),
                             ("DELETE", None)):
            status, err = _call(api, method, body)
            assert status == 403 and "--console-allow-faults" in err["error"], (method, err)
        assert b.faults.all() == []


def test_with_an_authorizer_faults_need_a_user_who_may_alter_the_cluster(tmp_path):
    import base64

    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
    overrides = {**TEST_OVERRIDES, "console.port": 0, "console.allow.faults": True,
                 "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
                 "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:admin"}

    def basic(user: str, password: str) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    body = {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"}
    with BrokerThread(tmp_path / "data", overrides=overrides) as b:
        api = b.broker.console.url + "api/faults"
        assert _call(api, "POST", body)[0] == 401
        assert _call(api, "POST", body, basic("alice", "wrong"))[0] == 401
        status, err = _call(api, "POST", body, basic("alice", "alice-secret"))
        assert status == 403 and err["error"].startswith("CLUSTER_AUTHORIZATION_FAILED: User:alice"), err
        status, fault = _call(api, "POST", body, basic("admin", "admin-secret"))
        assert status == 201
        assert _call(f"{api}/{fault['id']}", "DELETE", None, basic("alice", "alice-secret"))[0] == 403
        assert _call(f"{api}/{fault['id']}", "DELETE", None, basic("admin", "admin-secret"))[0] == 200


def test_a_get_waits_until_the_fault_fired(faults_broker):
    import threading

    from tests.integration.helpers import RawClient

    b = faults_broker
    api = b.broker.console.url + "api/faults"
    status, fault = _call(api, "POST", {"api": "DescribeCluster", "delay_ms": 1, "client_id": "waited-for"})
    assert status == 201
    answers: list[tuple[int, object]] = []
    waiter = threading.Thread(target=lambda: answers.append(_call(f"{api}/{fault['id']}?wait_fired=1&timeout=10")))
    waiter.start()
    try:
        from minibroker_protocol.apis import describe_cluster

        with RawClient(b.bootstrap, client_id="waited-for") as c:
            c.call(describe_cluster.API, 1, describe_cluster.REQUEST())
        waiter.join(TIMEOUT)
        assert [(s, a["fired"]) for s, a in answers] == [(200, 1)]
    finally:
        _call(f"{api}/{fault['id']}", "DELETE")
