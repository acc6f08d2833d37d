"""Client quota sensors unused for an hour are dropped, as Kafka's inactive sensor expiry does
(ClientQuotaManager.InactiveSensorExpirationTimeSeconds = 3600, checked every 30 s): a fake clock,
no sleeping."""

from __future__ import annotations

from pathlib import Path

from minibroker.quotas.manager import EXPIRY_CHECK_INTERVAL_MS, INACTIVE_SENSOR_EXPIRY_MS, ClientQuotaManager
from minibroker.quotas.store import CLIENT_ID, PRODUCER_BYTE_RATE, QuotaStore


class FakeClock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


def test_inactive_sensors_expire_after_an_hour(tmp_path: Path) -> None:
    store = QuotaStore(tmp_path)
    store.apply([(((CLIENT_ID, None),), {PRODUCER_BYTE_RATE: 1000.0})])  # every client id: 1 kB/s
    clock = FakeClock()
    q = ClientQuotaManager(store, window_num=11, window_size_s=1, clock=clock)
    for i in range(50):  # 50 client ids that come once and go (a tool run each)
        q.record(PRODUCER_BYTE_RATE, "ANONYMOUS", f"run-{i}", 100)
    # one that keeps producing, and is throttled: its sensor must survive with its history
    assert q.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "steady", 50_000) > 0
    assert q.sensor_count == 51
    for _ in range(int(INACTIVE_SENSOR_EXPIRY_MS // EXPIRY_CHECK_INTERVAL_MS) - 1):
        clock.ms += EXPIRY_CHECK_INTERVAL_MS
        q.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "steady", 1)
    assert q.sensor_count == 51  # not yet an hour
    clock.ms += 2 * EXPIRY_CHECK_INTERVAL_MS
    q.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "steady", 1)
    assert q.sensor_count == 1  # the 50 quiet ones are gone, "steady" is kept
    # a client coming back after its sensor expired starts afresh, within its burst again
    assert q.record(PRODUCER_BYTE_RATE, "ANONYMOUS", "run-0", 100) == 0
    assert q.sensor_count == 2
