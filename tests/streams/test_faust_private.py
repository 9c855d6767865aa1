"""The contract with Faust's, mode's and aiokafka's internals: every private name the worker uses exists in the
installed versions with the shape it is used with, and no private name is reached outside the adapter.

An upgrade that renames or moves one fails here (with the name), not in a running worker."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import faust
import pytest

from engine.errors import ConfigurationError
from engine.settings import Settings
from streams.runtime import faust_private
from streams.runtime.faust_private import PRIVATE_NAMES
from streams.runtime.tables import DirectTable

REPO = Path(__file__).resolve().parents[2]
ADAPTER = REPO / "streams" / "runtime" / "faust_private"


def _resolve(owner: str) -> Any:
    module_name, _, qualname = owner.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in filter(None, qualname.split(".")):
        target = getattr(target, part)
    return target


def _assigned(cls: type, name: str) -> bool:
    """``self.<name>`` is assigned (or annotated) in the source of ``cls`` or one of its bases."""
    pattern = re.compile(rf"self\.{re.escape(name)}\s*(:[^=\n]+)?=[^=]")
    for base in cls.__mro__:
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        if pattern.search(source):
            return True
    return False


def test_the_contract_lists_every_private_name_once() -> None:
    assert len(set(PRIVATE_NAMES)) == len(PRIVATE_NAMES)
    assert all(name.startswith("_") or kind == "local" for _, name, kind in PRIVATE_NAMES)


@pytest.mark.parametrize(("owner", "name", "kind"), PRIVATE_NAMES, ids=[f"{o}.{n}" for o, n, _ in PRIVATE_NAMES])
def test_the_private_name_exists_in_the_installed_library(owner: str, name: str, kind: str) -> None:
    target = _resolve(owner)
    if kind == "method":
        assert callable(getattr(target, name, None)), f"{owner} has no method {name}"
    elif kind == "attribute":
        assert _assigned(target, name), f"{owner} no longer assigns self.{name}"
    elif kind == "local":
        assert name in target.__code__.co_varnames, f"{owner} has no local {name}"
    else:
        assert kind == "global" and hasattr(target, name), f"{owner} has no {name}"


def test_the_unpack_names_are_in_the_contract() -> None:
    assert (
        f"aiokafka.consumer.fetcher:PartitionRecords.{faust_private.UNPACK_FUNCTION}",
        faust_private.UNPACK_BATCH_LOCAL,
        "local",
    ) in PRIVATE_NAMES


def _private_reaches(path: Path) -> list[str]:
    """Attribute reads/writes of a private name on anything but ``self``/``cls``/``super()`` (and the
    standard library's ``os._exit``), and private imports from Faust, mode or aiokafka."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in {"self", "cls", "os", "sys"}) and not (
                isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"
            ):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in {"faust", "mode", "aiokafka"}:
            found += [f"{path.name}:{node.lineno}: import {a.name}" for a in node.names if a.name.startswith("_")]
    return found


def test_no_private_reach_outside_the_adapter() -> None:
    """Overrides call ``super()`` (listed in the contract); every other private access is the adapter's."""
    modules = [p for p in sorted((REPO / "streams").rglob("*.py")) if ADAPTER not in p.parents]
    reaches = [reach for path in modules for reach in _private_reaches(path)]
    own = [r for r in reaches if _is_own_private(r)]
    assert sorted(set(reaches) - set(own)) == []


def test_every_private_name_the_adapter_reaches_is_in_the_contract() -> None:
    """Each module of the adapter lists the library names it reaches: a reach added without its entry fails here."""
    listed = {name for _, name, _ in PRIVATE_NAMES}
    modules = sorted(ADAPTER.glob("*.py"))
    assert {p.stem for p in modules} >= {"consumer", "group", "fetcher", "tables"}
    reaches = [reach for path in modules for reach in _private_reaches(path)]
    unlisted = [r for r in reaches if r.rsplit(" ", 1)[-1].lstrip(".") not in listed and not _is_own_private(r)]
    assert reaches and unlisted == []


def _is_own_private(reach: str) -> bool:
    """``obj._x`` where ``_x`` is this project's own private name (defined in one of its modules), e.g. a
    dataclass field or a helper of a sibling module: not a library internal."""
    attr = reach.rsplit(".", 1)[-1]
    return attr in _project_private_names()


_OWN: set[str] = set()


def _project_private_names() -> set[str]:
    if not _OWN:
        for path in (REPO / "streams").rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    _OWN.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                    _OWN.add(node.attr)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    _OWN.add(node.target.id)
        _OWN.difference_update(name for _, name, _ in PRIVATE_NAMES)
    return _OWN


def test_a_library_private_name_outside_the_adapter_is_caught(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f(consumer):\n    return consumer._read_offset\n", encoding="utf-8")
    (reach,) = _private_reaches(probe)
    assert not _is_own_private(reach)


def test_direct_tables_take_a_real_memory_table_and_refuse_a_persisted_one(tmp_path: Path) -> None:
    from faust.stores.memory import Store as FaustMemoryStore

    from streams.runtime.faust_app import faust_app
    from streams.runtime.restore_store import RestoreStore
    from tests.streams.fakes import NothingToClose, no_skipped_batches

    app = faust_app(
        Settings(data_dir=tmp_path, database_url=""), partitions=1, closing=NothingToClose(), skipped=no_skipped_batches
    )

    async def send(*args: Any) -> Any:
        raise AssertionError("never sent")

    table = app.Table("in-memory", default=list)
    assert faust_private.table_store_url(table).startswith("drift-memory:")  # bounded restores, same memory store
    assert isinstance(table.data, RestoreStore) and isinstance(table.data, FaustMemoryStore)
    DirectTable(app.Table("in-memory-2", default=list), send)
    persisted = faust.App("persisted", store="rocksdb://", autodiscover=False)
    with pytest.raises(ConfigurationError, match="rocksdb"):
        DirectTable(persisted.Table("persisted", default=list), send)


def test_a_moved_name_would_fail_the_contract() -> None:
    consumer = _resolve("faust.transport.drivers.aiokafka:Consumer")
    assert _assigned(consumer, "_read_offset")
    assert not _assigned(consumer, "_read_offsets")  # a rename upstream
    assert getattr(consumer, "_drain_message", None) is None


def test_fetch_records_takes_the_active_partitions_first() -> None:
    # streams.runtime.transport replaces that argument with a snapshot (requested_partitions): a reordering
    # upgrade would hand aiokafka something else
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    parameters = list(inspect.signature(AIOKafkaConsumerThread._fetch_records).parameters)
    assert parameters[:3] == ["self", "consumer", "active_partitions"], parameters


def test_the_prompt_table_manager_starts_as_faust_does_after_its_sleep() -> None:
    """streams.runtime.faust_app.PromptTableManager drops Faust's fixed sleep and does the rest of its start; if
    Faust's start grows another step, this fails and the override must follow it."""
    from faust.tables import TableManager

    from streams.runtime.faust_app import PromptTableManager

    calls = re.findall(r"await ([\w.]+)\(", inspect.getsource(TableManager.on_start))
    assert calls == ["self.sleep", "self._update_channels", "self.recovery.start"]
    assert "sleep" not in inspect.getsource(PromptTableManager.on_start)


def test_the_prompt_table_manager_rebalances_as_faust_does_with_the_tables_side_by_side() -> None:
    """PromptTableManager.on_rebalance runs Faust's steps with the tables' own rebalances gathered; if Faust's
    rebalance grows another step, this fails and the override must follow it."""
    from faust.tables import TableManager

    from streams.runtime.faust_app import PromptTableManager

    pattern = r"(self\._recovery_started\.set|T\([\w.]+\)|asyncio\.sleep|for table in self\.values)"
    assert re.findall(pattern, inspect.getsource(TableManager.on_rebalance)) == [
        "self._recovery_started.set", "for table in self.values", "T(table.on_rebalance)", "asyncio.sleep",
        "T(self._update_channels)", "asyncio.sleep", "T(self.recovery.on_rebalance)",
    ]  # fmt: skip
    ours = inspect.getsource(PromptTableManager.on_rebalance)
    assert "asyncio.gather" in ours and "close_table_registration" in ours and "update_table_channels" in ours


async def test_committed_offsets_come_in_one_request_and_every_partition_is_sought() -> None:
    """The resume after a rebalance asks the broker once for every partition's committed offset (aiokafka's own
    seek_to_committed asks once per partition, one after another) and seeks where aiokafka would."""
    from aiokafka import TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    tps = [TopicPartition("p.drafts", p) for p in range(3)] + [TopicPartition("p.messages", 0)]
    requests: list[list[TopicPartition]] = []

    class Coordinator:
        async def fetch_committed_offsets(self, partitions: list[TopicPartition]) -> dict[Any, Any]:
            requests.append(sorted(partitions))
            return {tps[0]: OffsetAndMetadata(120, ""), tps[1]: OffsetAndMetadata(-1, ""),
                    tps[3]: OffsetAndMetadata(0, "")}  # fmt: skip

    class KafkaConsumer:
        def __init__(self) -> None:
            self._coordinator = Coordinator()
            self.sought: dict[TopicPartition, int] = {}

        def assignment(self) -> set[TopicPartition]:
            return set(tps)

        def seek(self, tp: TopicPartition, offset: int) -> None:
            self.sought[tp] = offset

    consumer = KafkaConsumer()
    committed = await faust_private.seek_to_committed(consumer)
    assert requests == [sorted(tps)]
    assert committed == {tps[0]: 120, tps[1]: None, tps[2]: None, tps[3]: 0}
    assert consumer.sought == {tps[0]: 120}  # as aiokafka: offset 0 and nothing committed stay where they are
