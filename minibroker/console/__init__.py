"""The web console and /metrics, served by the broker itself (issue 21).

`Console` is an HTTP server on the broker's own event loop: pages that show the broker's live
state (cluster, topics, partitions with their segments and indexes, a message browser with a byte
view of each batch, groups with lag, transactions and producers), JSON endpoints with the same
data under /api, a live protocol trace streamed as Server-Sent Events, and /metrics in
Prometheus' text format. It reads the components directly (BrokerServices), never through a
Kafka client; everything it serves ships in this package (static/), no CDN and no build step.

Why aiohttp: it runs on the loop the broker already runs (asyncio or uvloop) with no thread and
no second loop, so a page reads partition state between two requests exactly as a handler does,
with no locking; it streams responses (SSE for the live trace) natively; it is one mature, widely
packaged dependency with its own C-accelerated HTTP parser. The standard library's http.server is
threaded and blocking (it would need locks around every read of broker state); Starlette/FastAPI
need an ASGI server (uvicorn) that wants to own the loop; a hand-written HTTP/1.1 parser on
asyncio streams would be more code to get right than the console itself.

Off unless `--console-port` / `console.port` asks for it; binds `console.host` (loopback by
default: its pages are not authenticated). Writes (`--console-allow-writes`) are refused with 403
otherwise; on a broker with an authorizer a write also logs in as a SASL user and passes the ACL
check of the protocol API it imitates (minibroker.console.auth).
"""

from minibroker.console.app import Console

__all__ = ["Console"]
