"""KIP-848 consumer groups: the same scenarios against Apache Kafka 4.4 and minibroker.

confluent-kafka (librdkafka 2.16) with group.protocol=consumer. Exact partition choices may
differ where Kafka's uniform assignor breaks ties its own way; what must match is what a client
can rely on: the counts, that nothing is read twice or missed, that a leave moves only the
leaver's partitions, and that a regex subscription picks up a topic created later.
"""

from __future__ import annotations

import concurrent.futures

from tests.integration import kip848_helpers as k848


def both(fn, kafka_reference, minibroker_ref):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        a = pool.submit(fn, kafka_reference.bootstrap)
        b = pool.submit(fn, minibroker_ref.bootstrap)
        return a.result(), b.result()


def test_three_members_join_and_leave_as_kafka(kafka_reference, minibroker_ref):
    kafka, mini = both(k848.three_members_join_and_leave, kafka_reference, minibroker_ref)
    assert kafka == mini == {"one": [6], "three": [2, 2, 2], "two": [3, 3], "sticky": True, "read": (60, 60)}


def test_regex_subscription_picks_up_a_new_topic_as_kafka(kafka_reference, minibroker_ref):
    kafka, mini = both(k848.regex_picks_up_new_topic, kafka_reference, minibroker_ref)
    assert kafka == mini == {"first": [0, 1], "then": ["a", "b"], "read": 10}
