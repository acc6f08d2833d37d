"""The console's schema registry pages (issue 36): subjects with their compatibility levels and
modes, a subject's versions, a version's schema text with its references, and the message
browser's keys and values decoded by their schema ids.

The data comes from the registry the broker runs (minibroker.schema_registry.browse, through a
callable: the registry starts after the console, and a broker may run without it); this module
imports nothing of the registry at run time, so a console without the registry loads none of the
schema libraries. A record framed as Confluent's serializers frame it (magic byte 0, a 4-byte schema
id) is decoded by the version holding that id, the topic's own subject first (TopicNameStrategy:
`<topic>-value`, `<topic>-key`), and shown as JSON with the subject and version that decoded it;
a value longer than the page shows (MAX_SHOWN_VALUE) is not decoded.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, cast

from aiohttp import web

from minibroker.console.pages import facts, h, layout, q, table
from minibroker.console.shapes import MessagesView, SchemaDecoded, ShownBytes
from minibroker.console.state import NotFound, parse_int
from minibroker.tools.json_value import JsonValue

if TYPE_CHECKING:
    from minibroker.schema_registry.browse import (
        ReferenceRow,
        RegistryBrowser,
        RegistryOverview,
        SubjectView,
        VersionView,
    )

Browser = Callable[[], "RegistryBrowser | None"]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ROOT = "/schema-registry"


class Routes:
    """The pages and their JSON twins under /api (the console's convention)."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser

    def running(self) -> RegistryBrowser:
        b = self.browser()
        if b is None:
            raise NotFound("the schema registry is off: start the broker with --schema-registry-port "
                           "(schema.registry.port) to see its subjects here")
        return b

    def _call(self, get: Callable[[], object]) -> object:
        try:
            return get()
        except LookupError as e:  # browse.NotInRegistry: an unknown subject, version or id
            raise NotFound(str(e.args[0] if e.args else e)) from None

    def overview(self, request: web.Request) -> RegistryOverview:
        return cast("RegistryOverview", self._call(self.running().overview))

    def subject(self, request: web.Request) -> SubjectView:
        b = self.running()
        return cast("SubjectView", self._call(lambda: b.subject(request.match_info["subject"])))

    def version(self, request: web.Request) -> VersionView:
        b, m = self.running(), request.match_info
        return cast("VersionView", self._call(lambda: b.version(m["subject"], m["version"])))

    def schema(self, request: web.Request) -> VersionView:
        b = self.running()
        schema_id = parse_int(request.match_info["id"], "schema id", lo=0)
        return cast("VersionView", self._call(lambda: b.schema(schema_id)))


def add_routes(r: web.UrlDispatcher, routes: Routes, page: Callable[[Callable[[web.Request], str]], Handler],
               api: Callable[[Callable[[web.Request], object]], Handler]) -> None:
    """Register the pages (`page`, `api`: the console's HTML and JSON handler makers)."""
    pairs: list[tuple[str, Callable[[web.Request], object], Callable[[web.Request], str]]] = [
        ("", routes.overview, lambda q_: overview_page(routes.overview(q_))),
        ("/subjects/{subject}", routes.subject, lambda q_: subject_page(routes.subject(q_))),
        ("/subjects/{subject}/versions/{version}", routes.version, lambda q_: version_page(routes.version(q_))),
        ("/schemas/{id}", routes.schema, lambda q_: version_page(routes.schema(q_))),
    ]
    for path, data, render in pairs:
        r.add_get(ROOT + path, page(render))
        r.add_get("/api" + ROOT + path, api(data))


# -- the message browser -----------------------------------------------------------------------------
def annotate(view: MessagesView, browser: RegistryBrowser | None) -> MessagesView:
    """Each framed key and value of `view` gets its decoding by the registry (`schema`)."""
    if browser is None:
        return view
    topic = view["topic"]
    for batch in view["batches"]:
        if "records" not in batch:  # an OversizedBatch
            continue
        for record in batch["records"]:
            if "control" in record:
                continue
            for field, value in (("key", record["key"]), ("value", record["value"])):
                if value is not None and not value["truncated"] and value["size"] >= 5:
                    decoded = _decode(browser, value, f"{topic}-{field}")
                    if decoded is not None:
                        value["schema"] = decoded
    return view


def _decode(browser: RegistryBrowser, value: ShownBytes, subject: str) -> SchemaDecoded | None:
    d = browser.decode(bytes.fromhex(value["hex"]), subject)
    if d is None:
        return None
    first = d.versions[0] if d.versions else (None, None)
    return {"schema_id": d.schema_id, "schema_type": d.schema_type, "subject": first[0], "version": first[1],
            "message_type": d.message_type, "json": cast(JsonValue, d.json), "error": d.error}


# -- pages -------------------------------------------------------------------------------------------
def _subject_link(subject: str) -> str:
    return f'<a href="{ROOT}/subjects/{q(subject)}">{h(subject)}</a>'


def _version_link(subject: str, version: int) -> str:
    return f'<a href="{ROOT}/subjects/{q(subject)}/versions/{version}">{version}</a>'


def overview_page(v: RegistryOverview) -> str:
    rows = (
        (f'<span data-subject="{h(s["subject"])}" data-field="subject">{_subject_link(s["subject"])}</span>',
         f'<span data-subject="{h(s["subject"])}" data-field="versions">{s["versions"]}</span>',
         f'<span data-subject="{h(s["subject"])}" data-field="latest">'
         f'{_version_link(s["subject"], s["latest_version"]) if s["latest_version"] is not None else "-"}</span>',
         f'<span data-subject="{h(s["subject"])}" data-field="id">{h(s["latest_id"] if s["latest_id"] is not None else "-")}</span>',
         f'<span data-subject="{h(s["subject"])}" data-field="type">{h(s["schema_type"] or "-")}</span>',
         f'<span data-subject="{h(s["subject"])}" data-field="compatibility">{h(s["compatibility"])}'
         f'{"" if s["compatibility_set"] else " (global)"}</span>',
         f'<span data-subject="{h(s["subject"])}" data-field="mode">{h(s["mode"])}</span>'
         + (' <span class="tag deleted">soft-deleted</span>' if s["deleted"] else ""))
        for s in v["subjects"])
    body = (facts([("url", "REST API (Confluent's)", v["url"]), ("compatibility", "global compatibility", v["compatibility"]),
                   ("mode", "global mode", v["mode"]), ("schemas", "schema ids", v["schemas"]),
                   ("max_id", "largest id", v["max_id"]), ("position", "_schemas read up to offset", v["position"])])
            + '<h2>Subjects</h2>'
            + (table(["subject", "versions", "latest", "id", "type", "compatibility", "mode"], rows, cls="subjects")
               if v["subjects"] else '<p class="note">no subjects yet</p>'))
    return layout("Schema registry", body, crumbs=[("", "Schema registry")])


def _refs(refs: list[ReferenceRow]) -> str:
    out = []
    for ref in refs:
        subject, version = ref["subject"], ref["version"]
        out.append(f'{h(ref["name"])} → {_subject_link(subject)} v{_version_link(subject, version)}')
    return "<br>".join(out)


def subject_page(v: SubjectView) -> str:
    s = v["subject"]
    rows = (
        (f'<span data-version="{r["version"]}" data-field="version">{_version_link(s, r["version"])}</span>',
         f'<span data-version="{r["version"]}" data-field="id"><a href="{ROOT}/schemas/{r["id"]}">{r["id"]}</a></span>',
         h(r["schema_type"]), _refs(r["references"]),
         f'<span data-version="{r["version"]}" data-field="deleted">{"soft-deleted" if r["deleted"] else "live"}</span>')
        for r in v["versions"])
    body = (facts([("compatibility", "compatibility",
                    v["compatibility"] + ("" if v["compatibility_set"] else " (the global level)")),
                   ("mode", "mode", v["mode"] + ("" if v["mode_set"] else " (the global mode)"))])
            + table(["version", "id", "type", "references", "state"], rows, cls="versions"))
    return layout(f"Subject {s}", body, crumbs=[(ROOT, "Schema registry"), ("", s)])


def version_page(v: VersionView) -> str:
    s = v["subject"]
    others = ", ".join(f'{_subject_link(o["subject"])} v{_version_link(o["subject"], o["version"])}' for o in v["also_in"])
    nav = " ".join(_version_link(s, n) if n != v["version"] else f"<b>{n}</b>" for n in v["versions"])
    body = (facts([("id", "schema id", v["id"]), ("type", "type", v["schema_type"]),
                   ("state", "state", "soft-deleted" if v["deleted"] else "live"),
                   ("referenced_by", "referenced by ids", ", ".join(map(str, v["referenced_by"])) or "-")])
            + f'<p>versions: {nav}</p>'
            + (f'<p>references:<br>{_refs(v["references"])}</p>' if v["references"] else "")
            + (f'<p>the same schema (id {v["id"]}) is also {others}</p>' if others else "")
            + f'<h2>Schema</h2><pre class="schema" data-field="schema">{h(v["pretty"])}</pre>'
            + "".join(f'<h2>{title}</h2><pre class="schema" data-field="{key}">{h(json.dumps(value, indent=2))}</pre>'
                      for key, title, value in (("metadata", "Metadata", v["metadata"]),
                                                ("rule_set", "Rule set", v["rule_set"])) if value is not None))
    return layout(f"{s} version {v['version']}", body,
                  crumbs=[(ROOT, "Schema registry"), (f"{ROOT}/subjects/{q(s)}", s), ("", f"version {v['version']}")])
