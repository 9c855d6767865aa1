"""Reading YAML while keeping the line of every key and list item, so errors can say ``FILE:LINE``.

:class:`LineRecordingLoader` is a safe loader on libyaml's parser (``yaml.CSafeLoader``, about ten times faster
than PyYAML's pure-Python one, which it falls back to where PyYAML was built without libyaml): it composes the
node graph as usual and then builds plain Python values itself, recording the 1-based line of each node under
its field path (``("propositions", 2, "weight")``). Anything wrong with the text itself (syntax, tabs, bad tags,
duplicate or non-string keys, recursive aliases, excessive nesting or alias expansion) becomes a
:class:`FileIssue`; reading never raises.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import yaml
from pydantic import BeforeValidator

from engine.errors import ConfigurationError, FileIssue

#: A location inside a document: mapping keys and list indexes from the root.
FieldPath = tuple[str | int, ...]

#: Deeper documents are rejected (proposition files are three levels deep).
MAX_DEPTH = 50
#: At most this many nodes are built; guards against alias "billion laughs" expansion.
MAX_NODES = 100_000
#: Larger YAML files are refused before parsing (the bundled files are a few KiB; parsing 50 MB takes a minute
#: and close to 1 GB of memory).
MAX_FILE_BYTES = 1024 * 1024


def dotted(path: FieldPath) -> str:
    """``("propositions", 2, "weight")`` -> ``"propositions.2.weight"``."""
    return ".".join(str(part) for part in path)


def yaml_text(value: Any) -> Any:
    """A scalar as the text its author wrote: YAML 1.1 reads a bare ``Yes`` / ``No`` as a boolean."""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return [yaml_text(item) for item in value]
    return value


#: A name, reply or compared value, read as text even when YAML made it a boolean or a number.
Text = Annotated[str, BeforeValidator(yaml_text)]
Texts = Annotated[list[str], BeforeValidator(yaml_text)]


@dataclass(frozen=True)
class Document:
    """A parsed YAML file: its data, the line of every field path, and the problems found while reading."""

    file: str
    data: Any
    lines: Mapping[FieldPath, int] = field(default_factory=dict)
    issues: tuple[FileIssue, ...] = ()

    def line_of(self, path: FieldPath) -> int:
        """The line of ``path``, or of its closest recorded ancestor (the parent mapping of a missing key)."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return 1

    def issue(self, path: FieldPath, message: str) -> FileIssue:
        return FileIssue(self.file, self.line_of(path), dotted(path), message)


class _TooLarge(Exception):
    """Raised internally when a document expands to more than MAX_NODES nodes."""


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:  # the same nodes, marks and constructors; libyaml composes them
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: libyaml reports positions as byte offsets into the UTF-8 text, PyYAML as character offsets.
_BYTE_OFFSETS = _SafeLoader is not yaml.SafeLoader


#: The only tags a list or a mapping may carry (``!!set``, ``!!omap`` and any ``!!python/...`` are refused; a
#: scalar's tag goes through the safe constructor, which refuses what it does not know).
_PLAIN_COLLECTIONS = frozenset({"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"})


class LineRecordingLoader(_SafeLoader):
    """A safe loader that builds values node by node and remembers where each one came from."""

    def __init__(self, stream: str, file: str) -> None:
        super().__init__(stream)
        self.file = file
        self.lines: dict[FieldPath, int] = {}
        self.problems: list[FileIssue] = []
        self._budget = MAX_NODES
        self._merged: dict[int, int] = {}

    def load_document(self) -> Any:
        """Compose the single document and build it; None for an empty document."""
        node = self.get_single_node()
        if node is None:
            return None
        self.lines[()] = node.start_mark.line + 1
        return self._build(node, (), frozenset())

    def _problem(self, node: yaml.Node, path: FieldPath, message: str) -> None:
        self.problems.append(FileIssue(self.file, node.start_mark.line + 1, dotted(path), message))

    def _build(self, node: yaml.Node, path: FieldPath, active: frozenset[int]) -> Any:
        self._budget -= 1
        if self._budget < 0:
            raise _TooLarge
        if id(node) in active:
            self._problem(node, path, "an alias refers to the structure that contains it (recursive alias)")
            return None
        if len(path) > MAX_DEPTH:
            self._problem(node, path, f"nested more than {MAX_DEPTH} levels deep")
            return None
        if isinstance(node, yaml.CollectionNode) and node.tag not in _PLAIN_COLLECTIONS:
            self._problem(node, path, f"cannot read this value: unsupported tag {node.tag!r}")
            return None
        if isinstance(node, yaml.SequenceNode):
            return self._build_sequence(node, path, active | {id(node)})
        if isinstance(node, yaml.MappingNode):
            return self._build_mapping(node, path, active | {id(node)})
        return self._build_scalar(node, path)

    def _build_scalar(self, node: yaml.Node, path: FieldPath) -> Any:
        try:
            return self.construct_object(node)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            self._problem(node, path, f"cannot read this value: {_first_line(exc)}")
            return None

    def _build_sequence(self, node: yaml.SequenceNode, path: FieldPath, active: frozenset[int]) -> list[Any]:
        items: list[Any] = []
        for index, child in enumerate(node.value):
            self.lines[(*path, index)] = child.start_mark.line + 1
            items.append(self._build(child, (*path, index), active))
        return items

    def _build_mapping(self, node: yaml.MappingNode, path: FieldPath, active: frozenset[int]) -> dict[str, Any]:
        merged = self._merge_keys(node)
        out: dict[str, Any] = {}
        own: set[str] = set()
        for position, (key_node, value_node) in enumerate(node.value):
            key = self._mapping_key(key_node, path)
            if key is None:
                continue
            key_path = (*path, key)
            if position >= merged:  # keys written here; merged-in keys may be overridden silently
                if key in own:
                    first = self.lines.get(key_path, 0)
                    self._problem(key_node, key_path, f"duplicate key '{key}' (first set on line {first})")
                    continue
                own.add(key)
            self.lines[key_path] = key_node.start_mark.line + 1
            out[key] = self._build(value_node, key_path, active)
        return out

    def _merge_keys(self, node: yaml.MappingNode) -> int:
        """Resolve ``<<`` merge keys in place; return how many leading entries came from merges."""
        if id(node) not in self._merged:
            own = sum(1 for key, _ in node.value if key.tag != "tag:yaml.org,2002:merge")
            self.flatten_mapping(node)
            self._merged[id(node)] = len(node.value) - own
        return self._merged[id(node)]

    def _mapping_key(self, key_node: yaml.Node, path: FieldPath) -> str | None:
        if not isinstance(key_node, yaml.ScalarNode):
            self._problem(key_node, path, "a key must be a plain string, not a list or mapping")
            return None
        key = self._build_scalar(key_node, path)
        if not isinstance(key, str):
            self._problem(key_node, path, f"key {key_node.value!r} must be a string (quote it)")
            return None
        return key


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def parse_yaml(text: str, file: str) -> Document:
    """Parse ``text`` into a :class:`Document`; syntax problems end up in ``issues``, never raised."""
    try:
        return _parse(text, file)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        message = exc.problem or exc.context or "invalid YAML"
        if "nesting depth" in message:  # libyaml's own bound, far below Python's recursion limit
            return Document(file, None, issues=(FileIssue(file, line, "", "YAML error: nested too deeply"),))
        return Document(file, None, issues=(FileIssue(file, line, "", f"YAML syntax error: {message}"),))
    except yaml.reader.ReaderError as exc:
        line = _line_at(text, exc.position)
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        message = f"unreadable character {char}: {exc.reason}"
        return Document(file, None, issues=(FileIssue(file, line, "", message),))
    except (yaml.YAMLError, RecursionError) as exc:
        message = "nested too deeply" if isinstance(exc, RecursionError) else _first_line(exc)
        return Document(file, None, issues=(FileIssue(file, 1, "", f"YAML error: {message}"),))
    except _TooLarge:
        message = f"the document expands to more than {MAX_NODES} values (aliases?)"
        return Document(file, None, issues=(FileIssue(file, 1, "", message),))


def _line_at(text: str, position: int) -> int:
    """The 1-based line of the parser's ``position`` in ``text``."""
    if _BYTE_OFFSETS:
        return text.encode("utf-8")[:position].count(b"\n") + 1
    return text.count("\n", 0, position) + 1


def _parse(text: str, file: str) -> Document:
    loader = LineRecordingLoader(text, file)
    try:
        data = loader.load_document()
    finally:
        loader.dispose()
    return Document(file, data, dict(loader.lines), tuple(loader.problems))


def read_yaml(path: Path) -> Document:
    """Read and parse a YAML file. Unreadable, oversized and non-UTF-8 files are issues, not exceptions."""
    file = str(path)
    try:
        raw = read_capped(path)
    except UnreadableFile as refused:
        return Document(file, None, issues=(FileIssue(file, 1, "", str(refused)),))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        return Document(file, None, issues=(FileIssue(file, line, "", "the file is not valid UTF-8 text"),))
    return parse_yaml(text, file)


class UnreadableFile(ConfigurationError):
    """A file :func:`read_capped` refuses to read; the message is the one-line reason."""


def read_capped(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``, refused (never read) when it holds more than ``limit`` bytes.

    Raises :class:`UnreadableFile` with a one-line reason: a symbolic-link loop, a missing target, not a regular
    file (a FIFO would block), the size over the limit.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableFile("cannot read file: a loop of symbolic links") from None
        raise UnreadableFile(f"cannot read file: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("cannot read file: not a regular file")
        if info.st_size > limit:
            raise UnreadableFile(_too_large(info.st_size, limit))
        raw = handle.read(limit + 1)
    if len(raw) > limit:  # grew after the size check
        raise UnreadableFile(_too_large(len(raw), limit))
    return raw


def _too_large(size: int, limit: int) -> str:
    return f"the file is {size:,} bytes; YAML files are limited to {limit:,} bytes ({limit / 1024 / 1024:g} MiB)"


def present(path: Path) -> bool:
    """True when anything is at ``path``, even a broken or looping symbolic link (reading it reports why)."""
    return os.path.lexists(path)


def yaml_files(folder: Path, suffix: str = ".yaml") -> list[Path]:
    """Every ``*suffix`` entry of ``folder`` that is not a directory, sorted by name.

    Broken links, link loops and special files are listed too, so that reading them reports the problem
    instead of leaving the file out silently."""
    return sorted(p for p in folder.glob(f"*{suffix}") if not p.is_dir())
