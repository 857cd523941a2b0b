"""The cache of compiled templates (``postmortem.text.templates._bytecode_cache``): a template
renders the same from it, an edited template is compiled again, the two environments keep
their entries apart, and a cache that cannot be used is no cache."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest

from postmortem.text import templates


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary directory of its own for the cache, and no environment kept from before."""
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("POSTMORTEM_TEMPLATE_CACHE", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)
    templates._bytecode_cache.cache_clear()
    templates.cached_environment.cache_clear()
    yield tmp_path / f"_jinja2-cache-{os.getuid()}"
    templates._bytecode_cache.cache_clear()
    templates.cached_environment.cache_clear()


def _render(d: Path, prose: bool) -> str:
    env = templates.environment([d], prose=prose)
    return env.get_template("t.md.j2").render(x=3)


def test_a_template_renders_the_same_from_the_cache_and_an_edit_compiles_again(
    fresh: Path, tmp_path: Path
) -> None:
    d = tmp_path / "tpl"
    d.mkdir()
    (d / "t.md.j2").write_text("{% if x %}\n  value {{ x }}\n{% endif %}\n")
    first = _render(d, prose=False)
    assert first == "  value 3\n"
    entries = sorted(p.name for p in fresh.iterdir())
    assert len(entries) == 1 and entries[0].startswith(f"postmortem-jinja{jinja2.__version__}-trim-")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    assert _render(d, prose=False) == first  # from the cache
    # the other environment compiles the same file otherwise, into an entry of its own
    assert _render(d, prose=True) == "\n  value 3\n\n"
    assert len(list(fresh.iterdir())) == 2
    (d / "t.md.j2").write_text("{% if x %}\n  now {{ x * 2 }}\n{% endif %}\n")
    assert _render(d, prose=False) == "  now 6\n"


def test_a_cache_that_cannot_be_written_is_no_cache(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "tpl"
    d.mkdir()
    (d / "t.md.j2").write_text("v{{ x }}")

    def full(self: object, bucket: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jinja2.FileSystemBytecodeCache, "dump_bytecode", full)
    assert _render(d, prose=False) == "v3"
    assert not any(fresh.iterdir())


def test_the_cache_can_be_turned_off(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTMORTEM_TEMPLATE_CACHE", "0")
    assert templates._bytecode_cache(False) is None
    env = templates.environment()
    assert env.bytecode_cache is None


def test_an_unsafe_cache_directory_is_not_used(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Code is loaded from the cache: a directory Jinja cannot make the user's own (here: a
    file in its place) means no cache, not an error."""
    fresh.write_text("not a directory")
    assert templates._bytecode_cache(False) is None
    assert isinstance(templates.environment(), jinja2.Environment)


def test_a_link_in_the_cache_directory_s_place_changes_nothing(fresh: Path, tmp_path: Path) -> None:
    """Whoever can write the temporary directory can put a link where the cache directory goes:
    it is no cache, and the directory it points to (the user's own) keeps its mode (Jinja's own
    check changed the mode of the link's target to 0700 before refusing the link)."""
    target = tmp_path / "shared"
    target.mkdir()
    target.chmod(0o755)
    fresh.symlink_to(target)
    assert templates._bytecode_cache(False) is None
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert isinstance(templates.environment(), jinja2.Environment)


def test_a_cache_directory_others_could_write_is_not_used(fresh: Path) -> None:
    """An entry is code: a directory of the user's that others could have written to is no
    cache (making it 0700 would keep what they put there)."""
    fresh.mkdir(mode=0o700)
    fresh.chmod(0o777)
    assert templates._bytecode_cache(False) is None
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o777


@pytest.mark.parametrize("tail", [b"", b"\x80\x04", b"\xffnot a pickle"])
def test_a_corrupt_entry_is_compiled_again(fresh: Path, tmp_path: Path, tail: bytes) -> None:
    """An entry cut short or damaged (a full disk under another writer, a crash) is compiled
    again and rewritten: Jinja reads its checksum with pickle, whose errors it lets through,
    and every build would fail until the file were removed."""
    d = tmp_path / "tpl"
    d.mkdir()
    (d / "t.md.j2").write_text("v{{ x }}")
    assert _render(d, prose=False) == "v3"
    (entry,) = fresh.iterdir()
    entry.write_bytes(jinja2.bccache.bc_magic + tail)
    templates.cached_environment.cache_clear()
    assert _render(d, prose=False) == "v3"
    assert entry.stat().st_size > len(jinja2.bccache.bc_magic) + len(tail)
    assert _render(d, prose=False) == "v3"  # from the rewritten entry
