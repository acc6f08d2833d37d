"""The ApiVersions table (tests/reference/api_versions_table.py) over the session's two brokers:
printed (`pytest -s` shows it), and checked: minibroker advertises no API Kafka's broker listener
does not, and none above Kafka's highest version (issue 35: nothing advertised that is not served).
"""

from __future__ import annotations

from tests.reference.api_versions_table import api_versions_table, render
from tests.reference.differential import Differential


def test_api_versions_table(differential: Differential) -> None:
    rows = api_versions_table(differential.kafka, differential.mini)
    print("\n" + render(rows))
    extra = [r for r in rows if r.kafka is None]
    assert not extra, f"minibroker advertises APIs Kafka's broker does not: {extra}"
    above = [r for r in rows if r.mini is not None and r.kafka is not None and r.mini[1] > r.kafka[1]]
    assert not above, f"minibroker advertises versions above Kafka's: {above}"
    # the APIs Kafka 4.4 serves on a broker listener that any client uses are there at all
    served = {r.key for r in rows if r.mini is not None}
    assert {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20} <= served
    assert {88, 89, 93} <= served  # KIP-1071 streams groups (issue 35)
