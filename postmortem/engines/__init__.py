"""Inference engines as plug-ins.

An engine (SGLang and vLLM today; TGI, TensorRT-LLM, Ollama later) is one package under
``postmortem/engines/<name>/`` that owns everything the rest of the tree must not know about
it: its log parser(s), how its lines are recognised inside journal, docker and CRI captures,
its settings (their flags and the ``server_configs`` column holding each value), the labels of
its event kinds, and the names its processes and units go by.

The rest of postmortem speaks engine-neutral terms: the tables ``server_configs``,
``server_events``, ``server_stats``, ``http_requests`` and ``cuda_ooms`` carry an ``engine``
column with :attr:`Engine.name`, and the analysis asks an engine for its words through
:func:`get_engine` (a setting's flag, an event kind's label) instead of naming it.

Adding an engine = one package + one line in :data:`ENGINE_MODULES` (see
``docs/dev/adding-an-engine.md``).

>>> sg = get_engine("sglang")
>>> sg.label, sg.setting("max_queued_requests").flag
('SGLang', '--max-queued-requests')
>>> sorted(engines())[:1]
['sglang']
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from ..parsers.base import Output, ParseContext

#: packages that register an engine, in load order (the registry line to add for a new engine)
ENGINE_MODULES: tuple[str, ...] = ("sglang", "vllm")


@dataclass(frozen=True, slots=True)
class Setting:
    """One of an engine's settings, under an engine-neutral key.

    ``key`` names the concept (``gpu_memory_fraction``, ``max_running_requests``…) the analysis
    and the rule templates speak of; ``flag`` is the engine's own command-line flag (``None``
    when the engine has no such setting); ``column`` the ``server_configs`` column holding the
    configured value (``None`` when only the raw arguments have it); ``arg`` the key in the
    engine's own printed configuration.
    """

    key: str
    flag: str | None
    column: str | None = None
    arg: str | None = None


def setting(key: str, flag: str | None, column: str | None = None, arg: str | None = None) -> Setting:
    """A :class:`Setting` whose printed-configuration name is its column's unless given."""
    return Setting(key, flag, column, arg or column)


class EngineStream(Protocol):
    """An engine's message-level parser: one per process (or unit) of a capture that carries
    the engine's lines inside another format (journal, docker, CRI). It yields records and
    warnings and never counts lines (the wrapping parser does)."""

    #: the :attr:`Engine.name` of the engine it parses
    engine: ClassVar[str]
    #: the unit its lines belong to (given, or learnt from the capture)
    unit: str | None
    pid: int | None

    def feed(
        self,
        line_no: int,
        message: str,
        *,
        ts: datetime | None = None,
        ts_raw: str | None = None,
        ts_inferred: str | None = None,
        host: str | None = None,
        unit: str | None = None,
        pid: int | None = None,
    ) -> Iterator[Output]: ...

    def close(self) -> Iterator[Output]: ...


class Engine:
    """What an engine tells the rest of postmortem about itself.

    Subclasses set the class attributes and implement :meth:`looks_like` and
    :meth:`new_stream`; callers never import an engine by name.
    """

    #: the ``engine`` column's value and the registry key ("sglang")
    name: ClassVar[str] = ""
    #: how reports name it ("SGLang")
    label: ClassVar[str] = ""
    #: engine-neutral setting key → the engine's setting
    settings: ClassVar[Mapping[str, Setting]] = {}
    #: event kind → the short label a timeline shows for it
    event_labels: ClassVar[Mapping[str, str]] = {}
    #: the engine's own words for what a rule's advice names (``watchdog``: the setting of its
    #: watchdog; ``busy_gpu_error``: the error a start beside a busy GPU fails with; ``issues``:
    #: where its known bugs are tracked) — a rule template omits a phrase an engine lacks
    phrases: ClassVar[Mapping[str, str]] = {}
    #: event kinds a report's timeline leaves out (bookkeeping lines of a normal start)
    quiet_kinds: ClassVar[frozenset[str]] = frozenset()
    #: lower-case fragments of unit names, container images and identifiers that name it
    name_hints: ClassVar[tuple[str, ...]] = ()
    #: lower-case prefixes of its processes' names (the kernel's 15-byte ``comm``)
    process_prefixes: ClassVar[tuple[str, ...]] = ()
    #: substrings one of which every message that can start a stream of the engine contains
    #: (a cheap, vectorisable pre-filter of :meth:`looks_like`; empty: no pre-filter)
    start_markers: ClassVar[tuple[str, ...]] = ()
    #: what a report calls the engine's printed configuration (Markdown: ``SGLang `server_args```)
    config_name: ClassVar[str] = "configuration"
    #: what a timeline calls the engine's own lines (``Source`` column)
    origin: ClassVar[str] = ""
    #: modules of the engine's package that register file parsers (``parser`` →
    #: ``postmortem.engines.<name>.parser``), loaded by the parser registry
    parser_modules: ClassVar[tuple[str, ...]] = ()

    def looks_like(self, message: str) -> bool:
        """Whether ``message`` (a line inside another capture, wrappers and all) is the
        engine's own: cheap, called on every unclaimed line of a journal up to a budget."""
        return False

    def claims(self, message: str, unit: str | None, ident: str | None) -> bool:
        """Whether a capture's process (its unit or identifier, and this first line) is a
        server of this engine: it is named after the engine, or the line is the engine's."""
        return self.names(unit) or self.names(ident) or self.looks_like(message)

    def new_stream(
        self, ctx: ParseContext, *, host: str | None, unit: str | None, pid: int | None
    ) -> EngineStream:
        """A message-level parser for one process's (or unit's) lines."""
        raise NotImplementedError(f"engine {self.name!r} parses no embedded lines")

    def fast_messages(self) -> Any:
        """The engine's vectorised path for embedded lines (a module with ``Given`` and
        ``fast_messages``), or ``None``: then every line goes through :meth:`new_stream`'s."""
        return None

    def setting(self, key: str) -> Setting:
        """The engine's setting for ``key`` (an unknown key is a setting with no flag)."""
        return self.settings.get(key) or Setting(key, None)

    def names(self, text: str | None) -> bool:
        """Whether a unit, identifier or image name names this engine.

        >>> get_engine("sglang").names("sglang-k26.service"), get_engine("sglang").names("vllm")
        (True, False)
        """
        low = (text or "").lower()
        return any(h in low for h in self.name_hints)

    def parse_args(self, raw: str) -> tuple[dict[str, str], str] | None:
        """The engine's printed configuration (``server_configs.raw``) → (argument → value text,
        format name), or ``None`` when it cannot be read. Values are the text as printed."""
        return None

    def owns_process(self, comm: str | None) -> bool:
        """Whether a process name is one of the engine's processes."""
        low = (comm or "").lower()
        return low.startswith(self.process_prefixes) if self.process_prefixes else False


_REGISTRY: dict[str, Engine] = {}
_loaded = False


class DuplicateEngineError(RuntimeError):
    pass


def register_engine(cls: type[Engine]) -> type[Engine]:
    """Class decorator: register an engine under ``cls.name``; a second use of a name fails."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY:
        raise DuplicateEngineError(f"engine name {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in ENGINE_MODULES:
        importlib.import_module(f"{__name__}.{module}")


def engines() -> dict[str, Engine]:
    """Every registered engine, by name, in :data:`ENGINE_MODULES` order (others after, as
    registered) — whichever module was imported first: the first is the default whose words the
    advice uses when nothing names the server's engine."""
    _load()
    rank = {name: i for i, name in enumerate(ENGINE_MODULES)}
    order = sorted(_REGISTRY, key=lambda name: rank.get(name, len(rank)))
    return {name: _REGISTRY[name] for name in order}


def engine_formats() -> list[str]:
    """The names of the file parsers the engines register (the ``sources.format`` of their logs).

    >>> "sglang" in engine_formats()
    True
    """
    from ..parsers import all_parsers

    return sorted(
        name for name, parser in all_parsers().items() if type(parser).__module__.startswith(__name__ + ".")
    )


def engine_labels() -> str:
    """The registered engines as a reader names them: ``SGLang`` (``, `` between several)."""
    return ", ".join(e.label for e in engines().values())


def is_engine(name: str | None) -> bool:
    """Whether ``name`` is a registered engine (a timeline origin, an ``engine`` value).

    >>> is_engine("sglang"), is_engine("systemd"), is_engine(None)
    (True, False, False)
    """
    _load()
    return name is not None and name in _REGISTRY


def get_engine(name: str | None) -> Engine:
    """The engine called ``name``; :class:`UnknownEngine` (no settings, no labels) otherwise."""
    _load()
    if name and name in _REGISTRY:
        return _REGISTRY[name]
    return UnknownEngine()


class UnknownEngine(Engine):
    """The engine of a server no plug-in recognised (label "server")."""

    name = "unknown"
    label = "the server"
