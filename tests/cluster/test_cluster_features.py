"""Feature levels on a cluster (KIP-584): a KRaft broker reports the levels it registered with the
controller and the metadata log's finalized ones, and the controller refuses a level a registered
software does not support, as Kafka's FeatureControlManager does. Share groups run on a cluster
(their state sent to the share coordinator), so a KRaft broker supports share.version 0-2, the
cluster finalizes 2 (Kafka 4.4's default) and the share-group APIs are in ApiVersions
(docs/differences.md#kraft-share-groups); streams.version 0-1, finalized at 1, as Kafka 4.4
(docs/differences.md#mixed-features)."""

from __future__ import annotations

import pytest

from minibroker.testing import Cluster
from minibroker_protocol.apis import api_versions, share_group_heartbeat
from reference import kafka_reference as kr
from tests.integration.helpers import RawClient

pytestmark = pytest.mark.minibroker_cluster(brokers=2)


def test_brokers_report_the_logs_levels_and_serve_share_groups(kafka_cluster: Cluster) -> None:
    for b in kafka_cluster.brokers.values():
        with RawClient(f"{b.host}:{b.port}") as raw:
            resp = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                      client_software_version="1"))
        assert resp.error_code == 0
        assert share_group_heartbeat.API.key in {k.api_key for k in resp.api_keys}
        supported = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}
        finalized = {f.name: f.max_version_level for f in resp.finalized_features}
        assert supported["share.version"] == (0, 2)
        assert finalized["share.version"] == 2
        assert finalized["transaction.version"] == 2 and finalized["group.version"] == 1
        # KIP-1071 streams groups: Kafka 4.4's StreamsVersion SV_0-SV_1, SV_1 finalized at format
        assert (supported["streams.version"], finalized["streams.version"]) == ((0, 1), 1)
        assert supported["kraft.version"] == (0, 0) and "kraft.version" not in finalized  # static voters
        assert resp.finalized_features_epoch > 0  # the metadata log's offset, not a constant


def test_a_level_no_broker_supports_is_refused(kafka_cluster: Cluster) -> None:
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    b = kafka_cluster.brokers[1]
    r = kr.run_tool("kafka-features", ["--bootstrap-server", f"{b.host}:{b.port}", "upgrade", "--feature",
                                       "share.version=3"], timeout=120)
    assert r.returncode != 0
    assert "Invalid update version 3 for feature share.version." in r.stdout + r.stderr
    assert "only supports versions 0-2" in r.stdout + r.stderr
