"""The docs as one set (issue 31): the README links every doc and the Docker files, its
dependency table names every package pyproject.toml names, and no doc sends the reader to files
that are not in the repository (the seed articles the project started from live outside it:
the facts the docs took from them are stated in the docs themselves)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").glob("*.md")) + sorted(ROOT.glob("examples/*/README.md")) + [ROOT / "README.md"]


def _package(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0]


def test_the_readme_links_every_doc_and_the_docker_files():
    targets = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "docs").glob("*.md"))]
    targets += ["Dockerfile", "docker-compose.yml"]
    missing = [t for t in targets if f"]({t})" not in README]
    assert not missing, f"README.md links none of {missing}"


def test_the_dependency_table_names_every_package_pyproject_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_package(d) for d in project["dependencies"]}
    wanted |= {_package(d) for extra in project["optional-dependencies"].values() for d in extra}
    section = README.split("## Dependencies and why", 1)[1].split("\n## ", 1)[0]
    named = " ".join(line.split("|")[1] for line in section.splitlines() if line.startswith("| "))
    missing = sorted(p for p in wanted if not re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", named))
    assert not missing, f"README.md's dependency table leaves out {missing}"


def test_no_doc_points_at_files_outside_the_repository():
    offenders = [str(p.relative_to(ROOT)) for p in DOCS if "shared/seeds" in p.read_text() or "../shared" in p.read_text()]
    assert not offenders


def test_relative_links_in_the_docs_lead_to_files_that_exist():
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert not broken, broken
