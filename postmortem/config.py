"""``postmortem.toml``: optional project configuration, searched in the working directory.

Example::

    [defaults]
    db = "postmortem.duckdb"     # POSTMORTEM_DB and --db override it
    tz = "Europe/Berlin"          # zone of zone-less timestamps (--tz overrides)
    host = "dflash-train"         # host for sources that do not name one (--host overrides)
    logs = ["/var/log/postmortem"]
    out = "reports"

    [[sources]]                   # per-file hints, matched by glob on the path
    path = "*/k26-eagle3*.log"
    unit = "k26-eagle3.service"

    [collect]
    server_logs = ["/var/log/llm/*.log"]  # inference-server logs (also read: sglang_logs)
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError, UsageError

CONFIG_NAME = "postmortem.toml"
DEFAULT_DB = "postmortem.duckdb"
DEFAULT_OUT = "reports"
#: [collect] keys naming inference-server log files (``sglang_logs``: its name before engines
#: were plug-ins, still read)
LOG_KEYS = ("server_logs", "sglang_logs")


@dataclass(frozen=True)
class SourceHint:
    pattern: str
    unit: str | None = None
    format: str | None = None
    host: str | None = None
    tz: str | None = None

    def matches(self, path: str) -> bool:
        return fnmatch.fnmatch(path, self.pattern) or fnmatch.fnmatch(os.path.basename(path), self.pattern)


@dataclass
class Config:
    path: Path | None = None
    db: str | None = None
    tz: str | None = None
    host: str | None = None
    logs: list[str] = field(default_factory=list)
    out: str | None = None
    sources: list[SourceHint] = field(default_factory=list)
    collect_logs: list[str] = field(default_factory=list)

    def hint_for(self, path: str) -> SourceHint | None:
        for hint in self.sources:
            if hint.matches(path):
                return hint
        return None

    def db_path(self, cli_value: str | None) -> str:
        return cli_value or os.environ.get("POSTMORTEM_DB") or self.db or DEFAULT_DB

    def log_paths(self, cli_values: list[str] | None) -> list[str]:
        if cli_values:
            return list(cli_values)
        if self.logs:
            return list(self.logs)
        # never a guess (a repository's sample_logs/ read on a real host made a report of a
        # night that never happened); checked before the store is opened, so none is left behind
        raise UsageError(
            "no logs to read: pass --logs DIR (or [defaults] logs in postmortem.toml); "
            "--no-ingest renders the reports from what the store holds"
        )


def _str(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{where}: '{key}' must be a string")
    return value


def _known(table: dict[str, Any], keys: tuple[str, ...], place: str, where: str) -> None:
    """A mistyped key (``timezone =`` for ``tz =``) was ignored without a word: it is an error."""
    for key in table:
        if key not in keys:
            raise UsageError(f"{where}: unknown key '{key}' {place} (known: {', '.join(keys)})")


def _check_owner(path: Path) -> None:
    """Run as root, take no orders from another user: a ``postmortem.toml`` left in a shared
    directory names the files ``collect`` copies and the paths ``build`` writes. It must be
    owned by root or by the user who ran sudo, and writable by its owner only."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    st = path.stat()
    trusted = {0}
    with contextlib.suppress(ValueError):
        trusted.add(int(os.environ.get("SUDO_UID", "")))
    if st.st_uid not in trusted:
        raise InputError(
            f"{path}: owned by uid {st.st_uid}, not by root or the user who ran sudo: refusing it "
            "when run as root (chown it, or run from another directory)"
        )
    if st.st_mode & 0o022:
        raise InputError(f"{path}: writable by other users: refusing it when run as root (chmod go-w)")


def load_config(directory: Path | None = None) -> Config:
    """Read ``postmortem.toml`` from ``directory`` (default: the working directory)."""
    path = (directory or Path.cwd()) / CONFIG_NAME
    if not path.is_file():
        return Config()
    _check_owner(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from exc
    where = str(path)
    _known(data, ("defaults", "sources", "collect"), "at the top level", where)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise UsageError(f"{where}: [defaults] must be a table")
    logs = _default_logs(defaults, where)
    base = path.parent
    return Config(
        path=path,
        db=_str(defaults, "db", where),
        tz=_str(defaults, "tz", where),
        host=_str(defaults, "host", where),
        logs=[str(base / p) if not os.path.isabs(p) else p for p in logs],
        out=_str(defaults, "out", where),
        sources=_sources(data, where),
        collect_logs=_collect_logs(data, where),
    )


def _default_logs(defaults: dict[str, Any], where: str) -> list[str]:
    """``[defaults]``'s keys checked; its ``logs`` as a list."""
    _known(defaults, ("db", "tz", "host", "logs", "out"), "in [defaults]", where)
    logs = defaults.get("logs", [])
    if isinstance(logs, str):
        logs = [logs]
    if not isinstance(logs, list) or not all(isinstance(x, str) for x in logs):
        raise UsageError(f"{where}: 'logs' must be a list of paths")
    if "logs" in defaults and not any(x.strip() for x in logs):
        # an empty list is a mistake, not "no logs": say so instead of reading nothing
        raise UsageError(f"{where}: 'logs' is empty; list the log paths, or remove the key and pass --logs")
    if "out" in defaults and not str(defaults["out"]).strip():
        raise UsageError(f"{where}: 'out' is empty; name the reports' directory, or remove the key")
    return logs


def _sources(data: dict[str, Any], where: str) -> list[SourceHint]:
    """The ``[[sources]]`` hints."""
    entries = data.get("sources", [])
    if not isinstance(entries, list):
        raise UsageError(f"{where}: 'sources' must be [[sources]] tables")
    hints = []
    for i, item in enumerate(entries):
        if not isinstance(item, dict) or "path" not in item:
            raise UsageError(f"{where}: [[sources]] entry {i + 1} needs a 'path'")
        _known(item, ("path", "unit", "format", "host", "tz"), f"in [[sources]] entry {i + 1}", where)
        hints.append(
            SourceHint(
                pattern=str(item["path"]),
                unit=_str(item, "unit", where),
                format=_str(item, "format", where),
                host=_str(item, "host", where),
                tz=_str(item, "tz", where),
            )
        )
    return hints


def _collect_logs(data: dict[str, Any], where: str) -> list[str]:
    """``[collect]``'s log paths and globs, each once."""
    collect = data.get("collect", {})
    if not isinstance(collect, dict):
        raise UsageError(f"{where}: [collect] must be a table")
    _known(collect, LOG_KEYS, "in [collect]", where)
    collect_logs: list[str] = []
    for key in LOG_KEYS:
        value = collect.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise UsageError(f"{where}: '{key}' in [collect] must be a list of paths or globs")
        collect_logs.extend(v for v in value if v not in collect_logs)
    return collect_logs
