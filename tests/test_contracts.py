"""Contracts: registry, records vs tables, documented schema vs real schema, report contexts vs
their documentation, templates vs contexts."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from conftest import DATA, REPO

from postmortem.engines import DuplicateEngineError, Engine, engines, register_engine
from postmortem.parsers import PARSER_MODULES, DuplicateParserError, all_parsers, register
from postmortem.parsers.base import Parser
from postmortem.records import RECORD_TYPES, field_names
from postmortem.store.db import Store


def test_registry_is_complete_and_unique() -> None:
    parsers = all_parsers()
    modules = {".".join(type(p).__module__.split(".")[1:3]) for p in parsers.values()}
    expected = {f"parsers.{m}" for m in PARSER_MODULES} | {f"engines.{name}" for name in engines()}
    assert modules == expected, "every parser module and every engine registers at least one parser"
    tables = {r.TABLE for r in RECORD_TYPES}
    for name, p in parsers.items():
        assert re.fullmatch(r"[a-z][a-z0-9-]*", name)
        assert p.description and set(p.tables) <= tables, name


def test_registry_rejects_duplicates() -> None:
    existing = next(iter(all_parsers().values()))

    class Dup(Parser):
        name = existing.name
        description = "x"
        tables = ()

        def sniff(self, head):  # type: ignore[no-untyped-def]
            return 0

        def parse(self, chunks, ctx):  # type: ignore[no-untyped-def]
            return iter(())

    with pytest.raises(DuplicateParserError):
        register(Dup)


def test_engine_registry_rejects_duplicates_and_nameless_engines() -> None:
    class Dup(Engine):
        name = "sglang"

    with pytest.raises(DuplicateEngineError):
        register_engine(Dup)

    class Nameless(Engine):
        pass

    with pytest.raises(ValueError, match="no name"):
        register_engine(Nameless)


def test_every_engine_describes_itself() -> None:
    """An engine has a label, names that recognise its units, an origin for the timeline, a
    parser, and a stream for lines embedded in other captures."""
    from postmortem.parsers.base import ParseContext

    for name, engine in engines().items():
        assert engine.label and engine.origin and engine.name_hints and engine.parser_modules, name
        assert engine.names(f"{engine.name_hints[0]}-x.service"), name
        stream = engine.new_stream(ParseContext(), host=None, unit="u.service", pid=1)
        assert stream.engine == name and stream.unit == "u.service"


def test_every_parser_has_golden_cases() -> None:
    missing = [n for n in all_parsers() if not any((DATA / n.replace("-", "_")).glob("*.expected.jsonl"))]
    assert missing == []


def test_records_match_tables() -> None:
    store = Store.memory()
    for rt in RECORD_TYPES:
        cols = [c for c, _ in store.columns(rt.TABLE)]
        assert cols[0] == "source_id"
        assert sorted(field_names(rt)) == sorted(cols[1:]), rt.TABLE


def test_the_host_and_span_queries_read_every_ingested_table_with_a_host_or_time() -> None:
    """``store_hosts`` decides whether a store names exactly one host (the host of its rows
    that name none, in ``build`` and ``export``), ``source_hosts`` which files are an incident's
    host's, ``source_records_between`` whether a file has a line near a kill: a table one of
    them missed could hold a second host, a file's only line near the kill."""
    from postmortem.query import named_sql

    store = Store.memory()
    ingested = ["sources", "parse_issues", *(rt.TABLE for rt in RECORD_TYPES)]
    with_host = {t for t in ingested if "host" in {c for c, _ in store.columns(t)}}
    assert set(re.findall(r"SELECT host FROM (\w+)", named_sql("store_hosts"))) == with_host
    # and the hosts of each source, for a fleet store's reports
    assert set(re.findall(r"SELECT source_id, host FROM (\w+)", named_sql("source_hosts"))) == with_host
    # a file's lines near a kill are looked for where its span (sources.first_ts/last_ts) comes from
    timed = {t for t in ingested if t != "sources" and "ts" in {c for c, _ in store.columns(t)}}
    assert set(re.findall(r"SELECT source_id FROM (\w+)", named_sql("source_records_between"))) == timed


def _documented(path: Path) -> dict[str, list[str]]:
    """Columns documented per table: the first cell of each row of a `| column | type | …` table
    under a heading naming the table (a cell may list several columns)."""
    out: dict[str, list[str]] = {}
    table = None
    in_columns = False
    for line in path.read_text().splitlines():
        m = re.match(r"^#{2,4} `(\w+)`", line)
        if m:
            table, in_columns = m.group(1), False
            continue
        if re.match(r"^#{1,4} ", line):
            table, in_columns = None, False
            continue
        if not line.startswith("|"):
            in_columns = False
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == "column":
            in_columns = table is not None
            continue
        if in_columns and table is not None:
            for name in re.findall(r"`(\w+)`", cells[0]):
                cols = out.setdefault(table, [])
                if name not in cols:
                    cols.append(name)
    return out


def test_schema_doc_matches_the_database() -> None:
    doc = _documented(REPO / "docs" / "schema.md")
    store = Store.memory()
    real = {t: [c for c, _ in store.columns(t)] for t in store.table_names()}
    assert sorted(doc) == sorted(real)
    for t, cols in real.items():
        assert sorted(doc[t]) == sorted(cols), (t, set(cols) ^ set(doc[t]))


def test_schema_doc_is_assembled_from_its_parts() -> None:
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_schema_doc.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def _context_doc() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    cls = None
    for line in (REPO / "docs" / "report-context.md").read_text().splitlines():
        m = re.match(r"^### (\w+)$", line)
        if m:
            cls = m.group(1)
            out[cls] = []
            continue
        m = re.match(r"^\| `(\w+)` \|", line)
        if cls and m:
            out[cls].append(m.group(1))
    return out


def test_report_contexts_match_their_documentation() -> None:
    import postmortem.report.context.types as context
    import postmortem.report.trends as trends

    classes = {
        name: obj
        for mod in (context, trends)
        for name, obj in vars(mod).items()
        if dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__
    }
    doc = _context_doc()
    assert sorted(doc) == sorted(classes)
    for name, cls in classes.items():
        assert doc[name] == [f.name for f in dataclasses.fields(cls)], name


def test_templates_use_only_documented_fields() -> None:
    doc = _context_doc()
    fields = {f for fs in doc.values() for f in fs}
    # the report's templates and partials; `st` and `imp` are the incident template's names for
    # ctx.story and ctx.impact
    for tpl in [*(REPO / "templates").glob("*.j2"), *(REPO / "templates" / "partials").glob("story*.j2")]:
        text = tpl.read_text()
        used = set(re.findall(r"\b(?:ctx|[a-z])\.([a-z_]+)\b", text))
        unknown = used - fields - {"items", "format"}
        assert not unknown, (tpl.name, unknown)
        for alias, cls in (("st", "Story"), ("imp", "Impact")):
            used = set(re.findall(rf"\b{alias}\.([a-z_]+)\b", text))
            assert used <= set(doc[cls]), (tpl.name, alias, used - set(doc[cls]))


def test_every_rule_has_a_template_a_data_test_and_a_doc_line() -> None:
    """insights-core's contract for rules: each registered rule has its words in a template
    (title and text blocks), a test in tests/test_rules.py asserting on its finding's data, and
    a line in docs/dev/adding-a-rule.md."""
    from postmortem.analysis.rules import RULE_MODULES, rules
    from postmortem.text.templates import default_template_dir

    registered = rules()
    assert list(registered) == list(RULE_MODULES), "one module per rule, named after it"
    tests = (REPO / "tests" / "test_rules.py").read_text()
    doc = (REPO / "docs" / "dev" / "adding-a-rule.md").read_text()
    for name, sp in registered.items():
        tpl = default_template_dir() / "rules" / f"{name}.md.j2"
        assert tpl.is_file(), name
        text = tpl.read_text()
        assert "{% block title %}" in text and "{% block text %}" in text, name
        assert re.search(rf"^def test_rule_{name}\w*\(", tests, re.M), f"no data test for {name}"
        assert re.search(rf"^\| `{name}` \|", doc, re.M), f"{name} is not listed in adding-a-rule.md"
        assert sp.doc, f"{name} has no docstring"
    listed = set(re.findall(r"^\| `(\w+)` \|", doc, re.M))
    assert listed == set(registered), listed ^ set(registered)


def test_rule_templates_use_only_their_rules_data() -> None:
    """A rule template's variables are the common ones (postmortem.analysis.rules.words) or keys
    its rule's findings carry — checked by rendering every rule against facts that fire it in the
    rule tests is the words' job; here: the template documents its data in its first comment."""
    from postmortem.analysis.rules import rules
    from postmortem.text.templates import default_template_dir

    for name in rules():
        head = (default_template_dir() / "rules" / f"{name}.md.j2").read_text().split("-#}", 1)[0]
        assert head.startswith("{#- " + name + " — data:"), name
