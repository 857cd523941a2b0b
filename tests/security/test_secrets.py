"""#29 item 2: secrets past the default redaction reach the Markdown, the JSON, the ``--bundle``
tarball and the ``timeline`` command; ``query`` and the Parquet export show them raw.

One journal carries every token format of the issue, each in a command an operator ran (sudo's
line: the report's timeline shows it as "operator ran `…`") or in SGLang's ``server_args`` line,
next to a marker that proves the carrier reached the output. Each format is its own test: the
marker is in the outputs, the secret in none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hostile import files_holding, journal, output_blobs, run, write_logs


@dataclass(frozen=True)
class Leak:
    case: str
    carrier: str  # an operator's command, or ", k='v'" appended to server_args
    secret: str
    marker: str = ""  # text of the carrier that must reach the outputs (default: the case name)
    server_args: bool = False

    @property
    def shown(self) -> str:
        return self.marker or f"case={self.case}"


def _v(n: int) -> str:
    """A secret value nobody else prints."""
    return f"Qx{n:02d}vT2mN9pL4wR8sJ5hK3"


_DOCKER = "/usr/bin/docker run --label case={case} "
LEAKS = [
    Leak("api-key-space", _DOCKER + "img python3 -m sglang.launch_server --api-key {s}", _v(1)),
    Leak("password-eq", _DOCKER + "img python3 serve.py --password={s}", _v(2)),
    Leak("docker-e-openai-api-key", _DOCKER + "-e OPENAI_API_KEY={s} img", _v(3)),
    Leak("docker-e-db-password", _DOCKER + "-e DB_PASSWORD={s} img", _v(4)),
    Leak(
        "docker-login-p",
        "/usr/bin/docker login --username bob-case={case} -p {s} registry.example",
        _v(5),
    ),
    Leak(
        "github-pat",
        _DOCKER + "-e GH={s} img",
        "github_pat_11ABCDEFG0"
        + "123456789aB_"
        + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456",
    ),
    Leak(
        "slack-webhook",
        _DOCKER + "img curl -X POST https://hooks.slack.com/services/T0123ABCD/B0456EFGH/{s}",
        "Zq7vX2mN9pL4kR8sQw3eRt5y",
    ),
    Leak("pgpassword", "/usr/bin/systemctl set-environment case={case} PGPASSWORD={s}", _v(8)),
    Leak("wandb-api-key", "/usr/bin/systemctl set-environment case={case} WANDB_API_KEY={s}", _v(9)),
    Leak("redis-url-password", _DOCKER + "-e CACHE=redis://:{s}@cache.internal:6379/0 img", _v(12)),
    Leak("token-eq", _DOCKER + "img python3 serve.py --token={s}", _v(13)),
    Leak("secret-eq", _DOCKER + "img python3 serve.py --secret={s}", _v(14)),
    Leak(
        "pem-private-key",
        _DOCKER + "-e TLS_KEY='-----BEGIN PRIVATE KEY-----{s}-----END PRIVATE KEY-----' img",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + _v(15),
    ),
    Leak("cookie-header", _DOCKER + "img curl -H 'Cookie: session={s}' http://127.0.0.1:30000/", _v(16)),
    Leak(
        "set-cookie-header",
        _DOCKER + "img curl -H 'Set-Cookie: session={s}; HttpOnly' http://127.0.0.1:30000/",
        _v(17),
    ),
    Leak("gitlab-glpat", _DOCKER + "-e GL={s} img", "glpat-" + "Zq7vX2mN9pL4kR8sQw3e"),
    Leak("stripe-sk-live", _DOCKER + "-e PAY={s} img", "sk_live_" + "51Zq7vX2mN9pL4kR8sQw3eRt5y"),
    Leak("google-aiza", _DOCKER + "-e MAPS={s} img", "AIza" + "SyZq7vX2mN9pL4kR8sQw3eRt5yUi8oP1aS"),
]

#: formats the report's redaction already catches (regression tests for the reports)
REDACTED_TODAY = [
    Leak("bearer-header", _DOCKER + "img curl -H 'Authorization: Bearer {s}' http://x/", "hf_" + _v(40)),
    Leak("url-user-password", _DOCKER + "-e DB=https://ops:{s}@10.20.0.15/x img", _v(41)),
]

#: secrets in SGLang's server_args line (``ServerArgs(..., k='v')``): the reports show none of
#: these settings, but ``timeline``, ``query`` and the export print the line as it was logged
SERVER_ARGS = [
    Leak("server-args-api-key", ", api_key='{s}'", "sk-proj-" + _v(42), marker="api_key", server_args=True),
    Leak("admin-api-key", ", admin_api_key='{s}'", _v(10), marker="admin_api_key", server_args=True),
    Leak(
        "ssl-keyfile-password",
        ", ssl_keyfile_password='{s}'",
        _v(11),
        marker="ssl_keyfile_password",
        server_args=True,
    ),
]


def _journal(leaks: list[Leak]) -> str:
    ops = tuple(lk.carrier.format(case=lk.case, s=lk.secret) for lk in leaks if not lk.server_args)
    args = "".join(lk.carrier.format(s=lk.secret) for lk in leaks if lk.server_args)
    return journal(operator=ops, server_args=args)


@dataclass
class Outputs:
    reports: Path  # Markdown reports, index and --bundle tarballs
    json_reports: Path  # build --format json
    timeline: str  # 'postmortem timeline 1', table and --format json
    db: Path

    def holding(self, needle: str) -> list[str]:
        """The report files (Markdown, JSON, bundle members) holding ``needle``."""
        return files_holding(self.reports, needle) + files_holding(self.json_reports, needle)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    tmp = tmp_path_factory.mktemp("secrets")
    logs = write_logs(tmp, journal__txt=_journal([*LEAKS, *REDACTED_TODAY, *SERVER_ARGS]))
    db = tmp / "pm.duckdb"
    md = run("build", "--logs", logs, "--db", db, "--out", tmp / "md", "--tz", "UTC", "--bundle")
    assert md.code == 0 and "1 incident(s)" in md.out, md
    js = run("build", "--no-ingest", "--db", db, "--out", tmp / "json", "--tz", "UTC", "--format", "json")
    assert js.code == 0, js
    table = run("timeline", "1", "--db", db)
    as_json = run("timeline", "1", "--db", db, "--format", "json")
    assert table.code == 0 and as_json.code == 0, (table, as_json)
    return Outputs(tmp / "md", tmp / "json", table.out + as_json.out, db)


def test_the_outputs_are_all_there(outputs: Outputs) -> None:
    names = [name for name, _ in output_blobs(outputs.reports)]
    assert any(".tar.gz/" in n and n.endswith(".md") for n in names), names  # a bundle's report
    assert any(p.suffix == ".json" for p in outputs.json_reports.iterdir())


@pytest.mark.parametrize("leak", LEAKS, ids=lambda lk: lk.case)
def test_secret_is_redacted_in_reports_json_and_bundle(outputs: Outputs, leak: Leak) -> None:
    assert outputs.holding(leak.shown), f"{leak.shown!r} reached no report: the carrier is not shown"
    assert outputs.holding(leak.secret) == []


@pytest.mark.parametrize("leak", REDACTED_TODAY, ids=lambda lk: lk.case)
def test_secret_already_redacted_stays_redacted(outputs: Outputs, leak: Leak) -> None:
    assert outputs.holding(leak.shown)
    assert outputs.holding(leak.secret) == []


@pytest.mark.parametrize("leak", SERVER_ARGS, ids=lambda lk: lk.case)
def test_server_args_secrets_stay_out_of_the_reports(outputs: Outputs, leak: Leak) -> None:
    assert outputs.holding(leak.secret) == []


@pytest.mark.parametrize("leak", [*SERVER_ARGS, *REDACTED_TODAY], ids=lambda lk: lk.case)
def test_timeline_command_redacts_secrets(outputs: Outputs, leak: Leak) -> None:
    assert leak.shown in outputs.timeline
    assert leak.secret not in outputs.timeline


# ----------------------------------------------------------------------------- raw views

API_KEY = SERVER_ARGS[0].secret


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_query_redacts_server_args_secrets_by_default(outputs: Outputs, fmt: str) -> None:
    # the setting as the stored line has it (a table cuts its cells at 60 characters)
    sql = "SELECT regexp_extract(raw, 'api_key=''[^'']*''') AS setting FROM server_configs"
    ran = run("query", sql, "--db", outputs.db, "--format", fmt)
    assert ran.code == 0, ran
    assert "api_key=" in ran.out
    assert API_KEY not in ran.out


def test_query_documents_how_secrets_are_shown() -> None:
    ran = run("query", "--help")
    assert ran.code == 0, ran
    assert "redact" in ran.out.lower()


def test_parquet_export_redacts_server_args_secrets(outputs: Outputs, tmp_path: Path) -> None:
    ran = run("export", "--parquet", tmp_path / "export", "--db", outputs.db)
    assert ran.code == 0, ran
    texts = []
    for f in sorted((tmp_path / "export").rglob("*.parquet")):
        for row in pq.read_table(f).to_pylist():
            texts += [v for v in row.values() if isinstance(v, str)]
    assert any("api_key=" in t for t in texts)
    assert not [t for t in texts if API_KEY in t]
