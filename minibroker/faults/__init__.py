"""Faults on demand, for integration tests (issue 32): errors, delays, dropped answers and closed
connections by request; a slow or full disk and a paused broker by component.

One model (minibroker.faults.model.Fault, held by a FaultRegistry, `BrokerServer.faults`), three
ways in: the Python API of the test fixtures (minibroker.faults.client: `b.faults.inject(...)`, a
context manager that removes the fault, `wait_fired`), the pytest plugin
(`@pytest.mark.minibroker(faults=[...])`, the `kafka_faults` fixture), and HTTP on the console's
server (`POST/GET/DELETE /api/faults`, with `--console-allow-faults`: minibroker.console.faults).
In a cluster, each broker serves its registry to the others on a loopback control endpoint
(minibroker.faults.control), so a fault with a `node` acts in that broker's process; the network
kinds (minibroker.faults.network_kinds) cut a follower off from its leader or a broker from the
controller. docs/testing.md has a recipe per failure.
"""

from minibroker.faults.components import KINDS, register_kind
from minibroker.faults.model import Fault, FaultError
from minibroker.faults.registry import FaultRegistry

__all__ = ["KINDS", "Fault", "FaultError", "FaultRegistry", "register_kind"]
