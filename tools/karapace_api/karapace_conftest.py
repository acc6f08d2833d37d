"""minibroker: Karapace's integration fixtures replaced by ones that point Karapace's HTTP client at
minibroker's schema registry (MB_REGISTRY_URL), and its Kafka fixtures at minibroker (MB_BOOTSTRAP)."""
import os

import pytest
from karapace.core.client import Client
from karapace.core.kafka.producer import KafkaProducer
from tests.integration.utils.cluster import RegistryDescription, RegistryEndpoint
from tests.integration.utils.kafka_server import KafkaServers

URL = os.environ["MB_REGISTRY_URL"]
BOOTSTRAP = os.environ["MB_BOOTSTRAP"]


@pytest.fixture
async def registry_async_client():
    client = Client(server_uri=URL)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def registry_cluster():
    host, port = URL.removeprefix("http://").split(":")
    return RegistryDescription(RegistryEndpoint("http", host, int(port)), "_schemas")


@pytest.fixture
def kafka_servers():
    return KafkaServers([BOOTSTRAP])


@pytest.fixture
async def producer():
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP)
    yield p
