"""Server-rendered HTML of the console's pages, from the dicts minibroker.console.state returns.

Plain HTML with escaped text and inline SVG for the plots; the only script is static/console.js
(the cluster page's charts and the live trace). Numbers a reader (or the browser test) checks
carry stable element ids (`data-field` attributes) so they can be found without parsing prose.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Sequence
from html import escape
from urllib.parse import quote

from minibroker.console.record_page import MAX_PAGE_RECORDS
from minibroker.console.shapes import (
    BatchBytesView,
    ClassicGroupView,
    ClusterView,
    ConsumerGroupView,
    GroupRow,
    GroupView,
    MessagesView,
    PartitionView,
    SchemaDecoded,
    SegmentView,
    ShareGroupView,
    ShownBytes,
    TimelineEvent,
    TopicPartitions,
    TopicRow,
    TopicView,
    TransactionsView,
)

NAV = [("/", "Cluster"), ("/topics", "Topics"), ("/groups", "Groups"), ("/transactions", "Transactions"),
       ("/replication", "Replication"), ("/schema-registry", "Schemas"),
       ("/trace", "Live trace"), ("/faults", "Faults"), ("/metrics", "/metrics")]


def h(v: object) -> str:
    return escape("" if v is None else str(v))


def q(v: object) -> str:
    return quote(str(v), safe="")


def layout(title: str, body: str, *, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    nav = " ".join(f'<a href="{u}">{h(n)}</a>' for u, n in NAV)
    trail = " / ".join(f'<a href="{u}">{h(n)}</a>' if u else h(n) for u, n in crumbs)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{h(title)} · minibroker</title>'
            '<link rel="stylesheet" href="/static/console.css"><script src="/static/console.js" defer></script>'
            f'</head><body><header><b>minibroker</b> {nav}</header><main>'
            f'{f"<p class=crumbs>{trail}</p>" if trail else ""}<h1>{h(title)}</h1>{body}</main></body></html>')


def error_page(status: int, message: str) -> str:
    return layout(f"{status}", f'<p class="error" data-field="error">{h(message)}</p>')


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], *, cls: str = "") -> str:
    head = "".join(f"<th>{h(c)}</th>" for c in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def facts(items: Iterable[tuple[str, str, object]]) -> str:
    """A definition list; each value carries data-field=<key>."""
    return "<dl class=facts>" + "".join(
        f'<dt>{h(label)}</dt><dd data-field="{h(key)}">{h(value)}</dd>' for key, label, value in items) + "</dl>"


def ts(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def size(n: int | None) -> str:
    if n is None:
        return "-"
    if n < 1024:
        return f"{n} B"
    scaled = n / 1024
    for unit in ("KiB", "MiB"):
        if scaled < 1024:
            return f"{scaled:.1f} {unit}"
        scaled /= 1024
    return f"{scaled:.1f} GiB"


# -- pages -------------------------------------------------------------------------------------------
def cluster_page(c: ClusterView) -> str:
    body = facts([("cluster_id", "cluster id", c["cluster_id"]), ("node_id", "node id", c["node_id"]),
                  ("listener", "listener", c["listener"]), ("advertised", "advertised", c["advertised"]),
                  ("uptime", "uptime", f'{c["uptime_ms"] / 1000:.0f} s'), ("data_dir", "data dir", c["data_dir"]),
                  ("data_dir_bytes", "data dir usage", size(c["data_dir_bytes"])),
                  ("topics", "topics", c["topics"]), ("partitions", "partitions", c["partitions"])])
    body += ('<h2>Throughput</h2><div class="charts">'
             '<figure><figcaption>bytes in /s</figcaption><svg class="chart" data-metric='
             '"kafka_server_brokertopicmetrics_bytesin_total"></svg></figure>'
             '<figure><figcaption>bytes out /s</figcaption><svg class="chart" data-metric='
             '"kafka_server_brokertopicmetrics_bytesout_total"></svg></figure>'
             '<figure><figcaption>messages in /s</figcaption><svg class="chart" data-metric='
             '"kafka_server_brokertopicmetrics_messagesin_total"></svg></figure>'
             '<figure><figcaption>requests /s</figcaption><svg class="chart" data-metric='
             '"kafka_network_requestmetrics_requests_total"></svg></figure></div>')
    body += "<h2>Served APIs</h2>" + table(["API", "key", "versions"], (
        (h(a["name"]), str(a["key"]), f'{a["min"]}-{a["max"]}') for a in c["apis"]), cls="apis")
    body += "<h2>Config</h2>" + table(["key", "value", "source", "read-only"], (
        (h(e["name"]), h(e["value"]), h(e["source"]), "yes" if e["read_only"] else "")
        for e in c["config"]), cls="config")
    return layout("Cluster", body)


def done_page(message: str, link: str) -> str:
    return layout("Done", f'<p class="done" data-field="result">{h(message)}</p>'
                          f'<p><a id="next" href="{h(link)}">{h(link)}</a></p>')


def _writes_note() -> str:
    return '<p class="note">Read-only console: start the broker with --console-allow-writes to change things here.</p>'


def topics_page(ts_: list[TopicRow], *, writes: bool = False) -> str:
    rows = ((f'<a href="/topics/{q(t["name"])}">{h(t["name"])}</a>', str(t["partitions"]), str(t["messages"]),
             size(t["size"]), h(t["cleanup_policy"]), "internal" if t["internal"] else "",
             h(", ".join(f"{k}={v}" for k, v in t["overrides"].items())))
            for t in ts_)
    body = table(["topic", "partitions", "messages", "size", "cleanup", "", "overrides"], rows, cls="topics")
    if writes:
        body += ('<h2>Create a topic</h2><form class="action" id="create-topic" method="post" action="/actions/topics">'
                 'name <input name="name" required> partitions <input name="partitions" size="4" placeholder="default"> '
                 'configs <input name="configs" size="40" placeholder="cleanup.policy=compact, retention.ms=60000"> '
                 '<button>create</button></form>')
    else:
        body += _writes_note()
    return layout("Topics", body)


def topic_page(t: TopicView, *, writes: bool = False) -> str:
    name = t["name"]
    rows = ((f'<a href="/topics/{q(name)}/{p["partition"]}">{p["partition"]}</a>', str(p["log_start_offset"]),
             str(p["high_watermark"]), str(p["last_stable_offset"]), str(p["log_end_offset"]),
             str(p["segments"]), size(p["size"])) for p in t["partitions"])
    body = facts([("topic_id", "topic id", t["topic_id"]),
                  ("overrides", "overrides", ", ".join(f"{k}={v}" for k, v in t["overrides"].items()) or "none")])
    body += table(["partition", "log start", "HW", "LSO", "LEO", "segments", "size"], rows, cls="partitions")
    body += "<h2>Effective config</h2>" + table(["key", "value"], (
        (h(k), h(v)) for k, v in t["config"].items()), cls="config")
    if writes and not t["internal"]:
        body += (f'<h2>Delete</h2><form class="action" id="delete-topic" method="post" '
                 f'action="/actions/topics/{q(name)}/delete" '
                 f'onsubmit="return confirm(\'Delete topic {h(name)} and all its data?\')">'
                 '<button>delete this topic</button></form>')
    return layout(f"Topic {name}", body, crumbs=[("/topics", "Topics"), ("", name)])


def partition_page(p: PartitionView, *, writes: bool = False) -> str:
    name, n = p["topic"], p["partition"]
    base = f"/topics/{q(name)}/{n}"
    body = facts([("log_start_offset", "log start offset", p["log_start_offset"]),
                  ("high_watermark", "high watermark", p["high_watermark"]),
                  ("last_stable_offset", "last stable offset", p["last_stable_offset"]),
                  ("log_end_offset", "log end offset", p["log_end_offset"]),
                  ("recovery_point", "recovery point", p["recovery_point"]),
                  ("size", "size (bytes)", p["size"]), ("segments", "segments", p["segments"]),
                  ("index_interval_bytes", "index.interval.bytes", p["index_interval_bytes"]),
                  ("segment_bytes", "segment.bytes", p["segment_bytes"])])
    body += f'<p><a href="{base}/messages">Browse messages</a></p>'
    if writes:
        body += (f'<form class="action" id="produce" method="post" action="/actions{base}/produce">'
                 'Produce a test record: key <input name="key"> <label><input type="checkbox" name="null_key"> '
                 'null key</label> value <input name="value" size="40"> headers <input name="headers" '
                 'placeholder="h1=v1, h2=v2"> <button>produce</button></form>')
    body += "<h2>Segments</h2>" + table(
        ["base offset", "file", "size", "first batch time", "max timestamp", ".index entries", ".timeindex entries"],
        ((f'<a href="{base}/segments/{s["base_offset"]}">{s["base_offset"]}</a>', h(s["file"]), str(s["size"]),
          ts(s["first_batch_max_timestamp"]), ts(s["max_timestamp"]), str(s["index_entries"]),
          str(s["time_index_entries"])) for s in p["segment_list"]), cls="segments")
    body += "<h2>Producers</h2>" + (table(
        ["producer id", "epoch", "last sequence", "last timestamp", "open transaction from"],
        ((str(r["producer_id"]), str(r["epoch"]), str(r["last_sequence"]), ts(r["last_timestamp"]),
          h(r["open_txn_first_offset"])) for r in p["producers"]), cls="producers")
        if p["producers"] else "<p>none</p>")
    return layout(f"{name}-{n}", body, crumbs=[("/topics", "Topics"), (f"/topics/{q(name)}", name), ("", str(n))])


def _scatter(points: list[tuple[float, float]], marks: list[float], *, xlabel: str, ylabel: str, cls: str,
             fmt_x: Callable[[float], str] = str) -> str:
    """An SVG scatter plot (x right, y up); `marks` are faint ticks on the x axis (batch positions)."""
    w, hgt, pad = 640, 260, 40
    if not points:
        return f'<svg class="{cls}" width="{w}" height="60"><text x="10" y="30">no entries</text></svg>'
    xs = [x for x, _ in points] + marks
    ys = [y for _, y in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    sx = (w - 2 * pad) / ((x1 - x0) or 1)
    sy = (hgt - 2 * pad) / ((y1 - y0) or 1)

    def px(x: float) -> float:
        return pad + (x - x0) * sx

    def py(y: float) -> float:
        return hgt - pad - (y - y0) * sy

    ticks = "".join(f'<line class="batch" x1="{px(m):.1f}" x2="{px(m):.1f}" y1="{hgt - pad}" y2="{hgt - pad + 6}"/>'
                    for m in marks[:2000])
    dots = "".join(f'<circle class="entry" cx="{px(x):.1f}" cy="{py(y):.1f}" r="3"><title>{h(fmt_x(x))} → {y:g}'
                   f'</title></circle>' for x, y in points)
    axes = (f'<line class="axis" x1="{pad}" y1="{hgt - pad}" x2="{w - pad}" y2="{hgt - pad}"/>'
            f'<line class="axis" x1="{pad}" y1="{pad}" x2="{pad}" y2="{hgt - pad}"/>'
            f'<text x="{w / 2}" y="{hgt - 6}" text-anchor="middle">{h(xlabel)}: {h(fmt_x(x0))} … {h(fmt_x(x1))}</text>'
            f'<text x="6" y="{pad - 10}">{h(ylabel)}: {y0:g} … {y1:g}</text>')
    return f'<svg class="{cls}" width="{w}" height="{hgt}" data-points="{len(points)}">{axes}{ticks}{dots}</svg>'


def segment_page(s: SegmentView) -> str:
    name, n, base = s["topic"], s["partition"], s["base_offset"]
    body = facts([("base_offset", "base offset", base), ("file", "file", s["file"]), ("size", "size", s["size"]),
                  ("index_entries", ".index entries", s["index_entries"]),
                  ("time_index_entries", ".timeindex entries", s["time_index_entries"]),
                  ("batches", "batches", len(s["batches"])),
                  ("index_interval_bytes", "index.interval.bytes", s["index_interval_bytes"])])
    body += ("<h2>.index: offset → file position</h2><p>One entry per index.interval.bytes of batches (ticks "
             "below the axis are every batch's position): a lookup finds the entry at or below the offset, "
             "then scans forward from that position.</p>")
    body += _scatter([(e["position"], e["offset"]) for e in s["index"]], [b["position"] for b in s["batches"]],
                     xlabel="position", ylabel="offset", cls="index-plot")
    body += "<h2>.timeindex: timestamp → offset</h2>"
    body += _scatter([(e["timestamp"], e["offset"]) for e in s["time_index"]], [], xlabel="timestamp",
                     ylabel="offset", cls="timeindex-plot", fmt_x=lambda x: ts(int(x)))
    link = f"/topics/{q(name)}/{n}"
    body += "<h2>Batches</h2>" + table(["position", "offsets", "size", "max timestamp", ""], (
        (str(b["position"]), f'{b["base_offset"]}-{b["last_offset"]}', str(b["size"]), ts(b["max_timestamp"]),
         f'<a class="batch-link" href="{link}/batch/{b["base_offset"]}">bytes</a> · '
         f'<a href="{link}/messages?offset={b["base_offset"]}">records</a>') for b in s["batches"][:500]),
        cls="batches")
    body += table(["index offset", "position"], ((str(e["offset"]), str(e["position"])) for e in s["index"]),
                  cls="index-entries")
    return layout(f"Segment {base}", body, crumbs=[("/topics", "Topics"), (f"/topics/{q(name)}", name),
                                                  (link, str(n)), ("", f"segment {base}")])


def _value(v: ShownBytes | None) -> str:
    if v is None:
        return '<span class="null">null</span>'
    parts = []
    if "schema" in v:  # framed with a schema id: decoded by the registry (minibroker.console.schema_pages)
        parts.append(_decoded(v["schema"]))
    elif "json" in v:
        # one line when it fits one (a small event reads at a glance), indented when it does not
        text = json.dumps(v["json"])
        parts.append(f'<pre class="json">{h((text if len(text) <= 100 else json.dumps(v["json"], indent=1))[:2000])}</pre>')
    elif v.get("text") is not None:
        parts.append(f'<span class="text">{h(v["text"])}</span>')
    parts.append(f'<details><summary>hex ({v["size"]} B)</summary><code class="hex">{h(v["hex"])}'
                 f'{"…" if v["truncated"] else ""}</code></details>')
    return "".join(parts)


def _decoded(d: SchemaDecoded) -> str:
    """A key or value in Confluent's wire format: its JSON, and the schema version that decoded it."""
    link = "/schema-registry"
    where = (f'<a href="{link}/subjects/{q(d["subject"])}">{h(d["subject"])}</a> '
             f'v<a href="{link}/subjects/{q(d["subject"])}/versions/{d["version"]}">{d["version"]}</a>'
             if d["subject"] is not None and d["version"] is not None else "not in the registry")
    kind = f'{h(d["schema_type"] or "")}{" " + h(d["message_type"]) if d["message_type"] else ""}'
    head = (f'<span class="schema-ref" data-field="schema">schema <a href="{link}/schemas/{d["schema_id"]}">'
            f'id {d["schema_id"]}</a> {kind} {where}</span>')
    if d["error"] is not None:
        return f'<div class="decoded">{head}<p class="error" data-field="decode-error">{h(d["error"])}</p></div>'
    text = json.dumps(d["json"], ensure_ascii=False)
    if len(text) > 100:
        text = json.dumps(d["json"], indent=1, ensure_ascii=False)
    return f'<div class="decoded">{head}<pre class="json" data-field="decoded">{h(text[:4000])}</pre></div>'


def messages_page(m: MessagesView) -> str:
    name, n = m["topic"], m["partition"]
    link = f"/topics/{q(name)}/{n}"
    form = (f'<form method="get" action="{link}/messages">offset <input name="offset" value="{m["start"]}"> '
            '<button>go</button></form>'
            f'<form method="get" action="{link}/messages">timestamp (ms) <input name="timestamp"> '
            '<button>go</button></form>')
    body = form + facts([("log_start_offset", "log start", m["log_start_offset"]),
                         ("high_watermark", "HW", m["high_watermark"]),
                         ("last_stable_offset", "LSO", m["last_stable_offset"]),
                         ("log_end_offset", "LEO", m["log_end_offset"])])
    for b in m["batches"]:
        if "records" not in b:
            body += f'<section class="batch"><p class="error">{h(b["error"])}</p></section>'
            continue
        flags = [f for f, on in (("transactional", b["transactional"]), ("control", b["control"]),
                                 ("aborted", b["aborted"]), ("above HW", b["above_high_watermark"]),
                                 ("above LSO", b["above_last_stable_offset"])) if on]
        cls = " ".join(["batch"] + [f.replace(" ", "-") for f in flags])
        header = facts([("base_offset", "base offset", b["base_offset"]), ("batch_length", "length", b["batch_length"]),
                        ("partition_leader_epoch", "leader epoch", b["partition_leader_epoch"]),
                        ("magic", "magic", b["magic"]),
                        ("crc", "CRC", f'{b["crc"]} ({"valid" if b["crc_valid"] else "INVALID"})'),
                        ("attributes", "attributes",
                         f'{b["attributes"]}: codec {b["codec"]}, {b["timestamp_type"]}'
                         f'{", transactional" if b["transactional"] else ""}{", control" if b["control"] else ""}'),
                        ("producer", "producer id/epoch/seq",
                         f'{b["producer_id"]} / {b["producer_epoch"]} / {b["base_sequence"]}'),
                        ("record_count", "records", b["record_count"]),
                        ("base_timestamp", "base timestamp", ts(b["base_timestamp"])),
                        ("position", "file position", b["position"])])
        recs = table(["offset", "Δoffset", "timestamp", "Δts", "key", "value", "headers"], (
            (str(r["offset"]), str(r["offset_delta"]), ts(r["timestamp"]), h(r["timestamp_delta"]),
             _value(r["key"]) if "control" not in r else f'<b class="control">{h(r["control"]["type"])}</b>',
             _value(r["value"]) if "control" not in r else f'coordinator epoch {h(r["control"]["coordinator_epoch"])}',
             "".join(f'{h(x["key"])}: {_value(x["value"])}' for x in r["headers"]))
            for r in b["records"]), cls="records")
        if b.get("records_truncated"):
            recs += (f'<p class="truncated">{len(b["records"])} of {b["record_count"]} records shown (a page '
                     f'decodes at most {MAX_PAGE_RECORDS}){": " + h(b["error"]) if b["error"] else ""}</p>')
        tags = "".join(f'<span class="tag {h(f.replace(" ", "-"))}">{h(f)}</span>' for f in flags)
        body += (f'<section class="{cls}" data-base-offset="{b["base_offset"]}"><h3>batch {b["base_offset"]}'
                 f'-{b["last_offset"]} {tags} <a href="{link}/batch/{b["base_offset"]}">byte view</a></h3>'
                 f'{header}{recs}</section>')
    if m["batches"]:
        last = m["batches"][-1]
        nxt = (last["last_offset"] if "last_offset" in last else m["start"]) + 1
        body += f'<p><a class="next" href="{link}/messages?offset={nxt}">next batches from {nxt}</a></p>'
    else:
        body += "<p>no batches from here</p>"
    return layout(f"Messages {name}-{n}", body, crumbs=[("/topics", "Topics"), (f"/topics/{q(name)}", name),
                                                        (link, str(n)), ("", "messages")])


def batch_page(b: BatchBytesView) -> str:
    name, n = b["topic"], b["partition"]
    raw = bytes.fromhex(b["hex"])
    rows = []
    for s in b["spans"]:
        chunk = raw[s["start"]:s["end"]]
        shown = chunk[:24].hex(" ") + (f" … (+{len(chunk) - 24} B)" if len(chunk) > 24 else "")
        rows.append((f'{s["start"]:04x}', str(s["end"] - s["start"]), f"<code>{h(shown)}</code>", h(s["label"])))
    link = f"/topics/{q(name)}/{n}"
    body = facts([("base_offset", "base offset", b["base_offset"]), ("position", "file position", b["position"]),
                  ("size", "bytes", b["size"]), ("magic", "magic", b["magic"]), ("codec", "codec", b["codec"])])
    body += table(["at", "bytes", "hex", "field"], rows, cls="bytes")
    return layout(f"Batch {b['base_offset']} bytes", body, crumbs=[
        ("/topics", "Topics"), (f"/topics/{q(name)}", name), (link, str(n)),
        (f"{link}/segments/{b['segment']}", f"segment {b['segment']}"), ("", f"batch {b['base_offset']}")])


def groups_page(gs: list[GroupRow]) -> str:
    return layout("Groups", table(["group", "type", "state", "protocol type", "members", "generation / epoch", "lag"], (
        (f'<a href="/groups/{q(g["group_id"])}">{h(g["group_id"])}</a>', h(g["type"]), h(g["state"]),
         h(g["protocol_type"]), str(g["members"]), h(g["epoch"]), _lag(g)) for g in gs), cls="groups"))


def _dash(v: int | None) -> str:
    """A number, or `-` where Kafka's kafka-consumer-groups prints one (no commit, so no lag)."""
    return "-" if v is None else str(v)


def _lag(g: GroupRow) -> str:
    n = g["uncommitted"]
    return str(g["lag"]) + (f" (+ {n} assigned partition{'s' if n != 1 else ''} without a commit)" if n else "")


def _parts(a: list[TopicPartitions] | None) -> str:
    return h("; ".join(f'{x["topic"]}: {x["partitions"]}' for x in (a or []))) or "-"


def _offsets_table(g: ClassicGroupView | ConsumerGroupView) -> str:
    return "<h2>Committed offsets and lag</h2>" + table(
        ["topic", "partition", "committed", "high watermark", "lag", "committed at"], (
            (h(o["topic"]), str(o["partition"]), _dash(o["committed"]), h(o["log_end_offset"]),
             f'<span data-lag="{h(o["topic"])}-{o["partition"]}">{_dash(o["lag"])}</span>', ts(o["commit_timestamp"]))
            for o in g["offsets"]), cls="offsets")


def _timeline(events: list[TimelineEvent], what: str) -> str:
    """The coordinator's events for this group, oldest first, since the console started."""
    if not events:
        return "<h2>Rebalance timeline</h2><p>no events since the console started</p>"
    t0 = events[0]["at_ms"]
    rows = (f'<tr class="event" data-event="{h(e["event"])}"><td>{ts(e["at_ms"])}</td><td>+{e["at_ms"] - t0} ms</td>'
            f'<td>{h(e["generation"])}</td><td><b>{h(e["event"])}</b></td><td>{h(e["detail"])}</td></tr>'
            for e in events)
    return (f'<h2>Rebalance timeline</h2><table class="timeline"><thead><tr><th>time</th><th>since first</th>'
            f'<th>{h(what)}</th><th>event</th><th>detail</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def group_page(g: GroupView, *, writes: bool = False) -> str:
    if g["type"] == "consumer":
        return _consumer_group_page(g, writes=writes)
    if g["type"] == "share":
        return _share_group_page(g)
    body = facts([("type", "type", "classic"), ("state", "state", g["state"]),
                  ("protocol_type", "protocol type", g["protocol_type"]),
                  ("protocol", "protocol", g["protocol"]), ("generation", "generation", g["generation"]),
                  ("leader", "leader", g["leader"]), ("state_since", "in this state since", ts(g["state_since"])),
                  ("previous_state", "previous state", g["previous_state"])])
    body += "<h2>Members</h2>" + table(["member", "instance id", "client", "host", "assignment"], (
        (h(m["member_id"]), h(m["group_instance_id"]), h(m["client_id"]), h(m["client_host"]), _parts(m["assignment"]))
        for m in g["members"]), cls="members")
    body += _offsets_table(g) + _timeline(g["timeline"], "generation")
    if writes:
        body += _reset_form(g["group_id"])
    return layout(f"Group {g['group_id']}", body, crumbs=[("/groups", "Groups"), ("", g["group_id"])])


def _consumer_group_page(g: ConsumerGroupView, *, writes: bool) -> str:
    """A KIP-848 group: the group epoch, the target assignment's epoch, and per member its epoch and
    current assignment beside its target (they differ while the member reconciles)."""
    body = facts([("type", "type", "consumer (KIP-848)"), ("state", "state", g["state"]),
                  ("group_epoch", "group epoch", g["group_epoch"]),
                  ("assignment_epoch", "target assignment epoch", g["assignment_epoch"]),
                  ("assignor", "assignor", g["assignor"])])
    body += "<h2>Members</h2>" + table(
        ["member", "instance id", "client", "host", "epoch", "state", "subscription", "current assignment",
         "revoking", "target assignment"],
        ((h(m["member_id"]), h(m["group_instance_id"]), h(m["client_id"]), h(m["client_host"]),
          f'<span data-member-epoch="{h(m["member_id"])}">{m["member_epoch"]}</span>', h(m["state"]),
          h(", ".join(m["subscribed_topics"]) or m["subscribed_regex"]),
          f'<span data-current="{h(m["member_id"])}">{_parts(m["assignment"])}</span>', _parts(m["pending_revocation"]),
          f'<span data-target="{h(m["member_id"])}" class="{"" if m["converged"] else "reconciling"}">'
          f'{_parts(m["target"])}</span>') for m in g["members"]), cls="members")
    body += _offsets_table(g) + _timeline(g["timeline"], "group epoch")
    if writes:
        body += _reset_form(g["group_id"])
    return layout(f"Group {g['group_id']}", body, crumbs=[("/groups", "Groups"), ("", g["group_id"])])


_STATES = ("AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED")


def _share_group_page(g: ShareGroupView) -> str:
    """A KIP-932 share group: members (every member subscribed to a topic is assigned all its
    partitions) and per share partition its window of in-flight records: the start offset (every
    offset below it is done), the end offset (the next never fetched), each record's state, delivery
    count and acquisition lock."""
    body = facts([("type", "type", "share (KIP-932)"), ("state", "state", g["state"]),
                  ("group_epoch", "group epoch", g["group_epoch"]),
                  ("assignment_epoch", "assignment epoch", g["assignment_epoch"])])
    body += "<h2>Members</h2>" + table(
        ["member", "client", "host", "epoch", "subscription", "assignment"],
        ((h(m["member_id"]), h(m["client_id"]), h(m["client_host"]),
          f'<span data-member-epoch="{h(m["member_id"])}">{m["member_epoch"]}</span>',
          h(", ".join(m["subscribed_topics"])), _parts(m["assignment"])) for m in g["members"]), cls="members")
    body += ("<h2>Share partitions</h2><p>The start offset is what DescribeShareGroupOffsets reports "
             "(kafka-share-groups.sh --describe); lag counts the records up to the high watermark not yet "
             "acknowledged or archived.</p>")
    body += table(["partition", "start offset", "end offset", "high watermark", "lag", *(s.lower() for s in _STATES),
                   "records by delivery count", "next lock expiry"],
                  ((f'<span data-share-partition="{h(sp["topic"])}-{sp["partition"]}">{h(sp["topic"])}-'
                    f'{sp["partition"]}</span>',
                    f'<span data-start="{h(sp["topic"])}-{sp["partition"]}">{sp["start_offset"]}</span>',
                    f'<span data-end="{h(sp["topic"])}-{sp["partition"]}">{sp["end_offset"]}</span>',
                    h(sp["high_watermark"]), f'<span data-lag="{h(sp["topic"])}-{sp["partition"]}">{sp["lag"]}</span>',
                    *(f'<span data-state="{h(sp["topic"])}-{sp["partition"]}-{s.lower()}">{sp["in_flight"][s]}</span>'
                      for s in _STATES),
                    h(", ".join(f"{k}: {v}" for k, v in sp["delivery_counts"].items()) or "-"),
                    f'{ts(sp["next_lock_expiry_ms"])} (in {sp["next_lock_expiry_in_ms"]} ms)'
                    if sp["next_lock_expiry_ms"] is not None else "-")
                   for sp in g["share_partitions"]), cls="share-partitions")
    for sp in g["share_partitions"]:
        if not sp["records"]:
            continue
        more = (f' (the first {sp["records_shown"]} of {sp["records_total"]})'
                if sp["records_total"] > sp["records_shown"] else "")
        body += f'<h3>In-flight records of {h(sp["topic"])}-{sp["partition"]}{more}</h3>' + table(
            ["offset", "state", "delivery count", "held by", "lock expires"],
            ((str(r["offset"]), f'<span class="rs {h(r["state"].lower())}">{h(r["state"])}</span>',
              str(r["delivery_count"]), h(r["member_id"]), ts(r["lock_expires_ms"])) for r in sp["records"]),
            cls="in-flight")
    body += "<h2>Group configs</h2>" + table(["key", "value"], ((h(k), h(v)) for k, v in g["configs"].items()),
                                             cls="config")
    return layout(f"Group {g['group_id']}", body, crumbs=[("/groups", "Groups"), ("", g["group_id"])])


def _reset_form(gid: str) -> str:
    return ('<h2>Reset offsets</h2><p>As kafka-consumer-groups.sh --reset-offsets: only while the group has no '
            f'members.</p><form class="action" id="reset-offsets" method="post" action="/actions/groups/{q(gid)}/'
            'reset-offsets">topic <input name="topic" required> partition <input name="partition" size="4" '
            'placeholder="all"> to <input name="to" value="earliest" size="10" title="earliest, latest or an '
            'offset"> <button>reset</button></form>')


def transactions_page(t: TransactionsView) -> str:
    body = "<h2>Transactional ids</h2>" + table(
        ["transactional id", "producer id", "epoch", "state", "timeout", "partitions", "open for"], (
            (h(x["transactional_id"]), str(x["producer_id"]), str(x["epoch"]), h(x["state"]), str(x["timeout_ms"]),
             h(", ".join(x["partitions"])), f'{x["open_ms"]} ms' if x["open_ms"] is not None else "-")
            for x in t["transactions"]), cls="txns")
    body += "<h2>Partitions whose LSO holds read_committed back</h2>" + (table(
        ["partition", "LSO", "HW", "held back"], ((f'{h(x["topic"])}-{x["partition"]}', str(x["last_stable_offset"]),
                                                   str(x["high_watermark"]), str(x["held_back"]))
                                                  for x in t["lso_held"]), cls="lso") if t["lso_held"] else "<p>none</p>")
    body += "<h2>Producers</h2>" + table(["partition", "producer id", "epoch", "last sequence", "open txn from"], (
        (f'{h(x["topic"])}-{x["partition"]}', str(x["producer_id"]), str(x["epoch"]), str(x["last_sequence"]),
         h(x["open_txn_first_offset"])) for x in t["producers"]), cls="producers")
    return layout("Transactions and producers", body)


def trace_page() -> str:
    body = ('<form id="trace-filter">client id <input name="client_id"> API <input name="api"> '
            '<button>filter</button> <span id="trace-status">connecting…</span></form>'
            '<table class="trace"><thead><tr><th>#</th><th>API</th><th>v</th><th>client</th><th>corr</th>'
            '<th>req B</th><th>resp B</th><th>ms</th></tr></thead><tbody id="trace-rows"></tbody></table>')
    return layout("Live protocol trace", body)
