"""``drift agentv validate|run|compare``: AgentV eval cases (seed-era and 4.x files).

``run`` answers every case with ``--target`` (``recorded:FILE.jsonl``, ``command:CMD``, ``actor:AGENT_ID``,
``llm:SPEC`` or the name of a ``cli`` target in ``.agentv/targets.yaml``), scores it with the case's evaluators
(``--judge`` for LLM judges and rubrics), writes one JSONL record per case (``--out``, upstream field names)
plus the 4.x ``index.jsonl`` records beside it, prints a table / JSON / JUnit, and records the run in
PostgreSQL when a database is configured. Exit 1 when the mean is below ``--threshold`` or a case fails
(``--allow-failures`` turns the latter off), 2 on a usage or file error.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from streams.cli.common import DatabaseOpt, JudgeOpt, UnsandboxedOpt, run, settings_from

app = typer.Typer(help="AgentV eval cases: validate, run against a target, compare result files.")

FormatOpt = Annotated[str, typer.Option("--format", help="table | json | junit")]


@app.command("validate")
def validate(files: Annotated[list[Path], typer.Argument(help="Eval files (any name).", show_default=False)]) -> None:
    """Check eval files of either dialect (and sidecars of .jsonl datasets); prints the dialect and counts, or
    FILE:LINE problems (exit 2)."""
    from engine.errors import ConfigurationError

    failed = False
    for path in files:
        if not path.is_file():
            raise ConfigurationError(f"no such file: {path}")  # main() prints the one masked line, exit 2
        failed = _validate_one(path) or failed
    if failed:
        raise typer.Exit(2)


def _validate_one(path: Path) -> bool:
    """Print the outcome for one file; True when it has a problem."""
    from engine.formats.agentv.jsonl import check_sidecar, dataset_of
    from engine.formats.agentv.kind import is_sidecar
    from engine.formats.agentv.loader import load_eval_file
    from engine.propositions.yamlsource import read_yaml

    document = read_yaml(path) if path.suffix in {".yaml", ".yml"} else None
    if document is not None and not document.issues and is_sidecar(document):
        defaults, issues = check_sidecar(document)
        for issue in issues:
            typer.echo(str(issue), err=True)
        shown = ", ".join(f"{k} {v}" for k, v in _sidecar_summary(defaults).items()) or "no defaults"
        typer.echo(f"{'ok ' if not issues else 'bad'} {path}: sidecar of {dataset_of(path)}: {shown}")
        return bool(issues)
    loaded, issues = load_eval_file(path)
    for issue in issues:
        typer.echo(str(issue), err=True)
    if loaded is not None:
        listed = sum(len(c.evaluators) for c in loaded.cases)
        default = sum(1 for c in loaded.cases if not c.evaluators)
        counts = f"{len(loaded.cases)} cases, {listed + default} evaluators"
        if default:
            counts += f" ({default} the default llm_judge)"
        if loaded.sidecar is not None:
            counts += f"; defaults from {loaded.sidecar.name}"
        typer.echo(f"{'ok ' if not issues else 'bad'} {path}: dialect {loaded.dialect}, {counts}")
    return bool(issues) or loaded is None


def _sidecar_summary(defaults: dict[str, Any]) -> dict[str, str]:
    execution = defaults.get("execution") or {}
    shown = {"dataset": defaults.get("dataset"), "target": execution.get("target")}
    shown["evaluator"] = defaults.get("evaluator")
    evaluators = execution.get("evaluators")
    if isinstance(evaluators, list):
        shown["evaluators"] = str(len(evaluators))
    return {k: str(v) for k, v in shown.items() if v is not None}


@app.command("run")
def run_command(
    files: Annotated[list[Path], typer.Argument(help="Eval files.", show_default=False)],
    target: Annotated[
        str | None, typer.Option("--target", help="recorded:FILE | command:CMD | actor:ID | llm:SPEC | NAME")
    ] = None,
    judge: JudgeOpt = None,
    actor: Annotated[str | None, typer.Option("--actor", help="The actor behind actor: targets.")] = None,
    eval_id: Annotated[list[str] | None, typer.Option("--eval-id", help="Only cases whose id matches (glob).")] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Cases run at once.")] = 4,
    case_timeout: Annotated[float, typer.Option("--case-timeout", help="Seconds per case.")] = 300.0,
    out: Annotated[
        Path | None, typer.Option("--out", help="JSONL results (4.x index records go to OUT.index.jsonl).")
    ] = None,
    threshold: Annotated[
        float | None, typer.Option("--threshold", help="Exit 1 when the mean score is below this.")
    ] = None,
    allow_failures: Annotated[
        bool, typer.Option("--allow-failures", help="Do not exit 1 because a case failed.")
    ] = False,
    output_format: FormatOpt = "table",
    database: DatabaseOpt = None,
    allow_unsandboxed_code: UnsandboxedOpt = False,
) -> None:
    """Run eval cases against a target and score them."""
    _check_run_options(output_format, threshold, out)
    settings = settings_from(database=database)
    options = _run_options(workers, case_timeout, allow_unsandboxed_code)
    batches = run(_run_files(files, target, judge, eval_id, options, settings, actor))
    outcomes = [o for done, _ in batches for o in done]
    runs = [format_run for _, format_run in batches]
    _write_outputs(batches, out)
    summary = _emit(outcomes, runs, output_format, _unsandboxed_mark(options, runs))
    if settings.database_url:
        run(_record(settings.database_url, runs, settings.connect_timeout_s))
    _exit_code(outcomes, summary, threshold, allow_failures)


def _exit_code(outcomes: list[Any], summary: dict[str, Any], threshold: float | None, allow_failures: bool) -> None:
    """Exit 1 with the reason on stderr: a mean below ``--threshold``, a failed case, or no case measured."""
    reasons = []
    if threshold is not None and summary["mean"] < threshold:
        reasons.append(f"mean {summary['mean']:.3f} is below --threshold {threshold:g}")
    failed = sum(o.verdict == "fail" or bool(o.error) for o in outcomes)
    if failed and not allow_failures:
        reasons.append(f"{failed} of {len(outcomes)} case(s) failed or errored (--allow-failures to ignore)")
    if failed and failed == sum(bool(o.error) for o in outcomes) == len(outcomes):
        reasons.append("every case errored: nothing was measured")
    if reasons:
        typer.echo(f"drift: {'; '.join(dict.fromkeys(reasons))}", err=True)
        raise typer.Exit(1)


def _unsandboxed_mark(options: Any, runs: list[Any]) -> str | None:
    """The unsandboxed-code mark when any file's code judges ran without the sandbox (their judge carries it)."""
    label: str | None = options.sandbox.label
    return label if label and any(label in r.judge for r in runs) else None


def _run_options(workers: int, case_timeout: float, allow_unsandboxed_code: bool) -> Any:
    from engine.formats.agentv.runner import RunOptions
    from engine.formats.usercode import CodeSandbox

    return RunOptions(workers, case_timeout, CodeSandbox(allow_unsandboxed=allow_unsandboxed_code))


def _check_run_options(output_format: str, threshold: float | None, out: Path | None) -> None:
    from engine.bundled import writable_target
    from engine.errors import ConfigurationError

    if output_format not in {"table", "json", "junit"}:
        raise ConfigurationError("--format must be table, json or junit")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ConfigurationError(f"--threshold is a mean score between 0 and 1 (scores are 0-1), not {threshold:g}")
    if out is not None:
        writable_target(out, "results", "pass --out a path of your own")


async def _run_files(
    files: list[Path],
    spec: str | None,
    judge_spec: str | None,
    ids: list[str] | None,
    options: Any,
    settings: Any,
    actor: str | None,
) -> list[tuple[list[Any], Any]]:
    """Per file with matching cases: its outcomes and its FormatRun (whose judge names unsandboxed code)."""
    from engine.errors import ConfigurationError
    from engine.formats.agentv import records, summary
    from engine.formats.agentv.codejudge import runs_code
    from engine.formats.agentv.runner import run_cases

    loaded = _load(files)
    coded = {f.path for f in loaded if runs_code(e for c in f.cases for e in c.evaluators)}
    for path in coded:
        options.sandbox.require(str(path))
    judge = _judge(judge_spec, settings, loaded)
    judge_name = judge.name if judge is not None else "none"
    batches: list[tuple[list[Any], Any]] = []
    for eval_file in loaded:
        cases = [c for c in eval_file.cases if not ids or any(fnmatch.fnmatchcase(c.id, p) for p in ids)]
        mark = options.sandbox.label if eval_file.path in coded else None  # only where code ran unsandboxed
        name = f"{judge_name}; {mark}" if mark else judge_name
        for target_spec, group in _by_target(cases, spec, eval_file.target).items():
            target = _target(target_spec, eval_file.path, settings, actor)
            done = await run_cases(group, target, judge, options)
            stats = summary.summarise(done)
            batches.append((done, records.format_run(str(eval_file.path), target.name, name, done, stats)))
    if not batches:
        raise ConfigurationError("no cases to run" + (f" matching --eval-id {', '.join(ids)}" if ids else ""))
    return batches


def _by_target(cases: list[Any], spec: str | None, file_target: str | None) -> dict[str | None, list[Any]]:
    """Cases grouped by the target that answers them, in order: ``--target``, else the case's own
    ``execution.target``, else the file's (or its sidecar's)."""
    groups: dict[str | None, list[Any]] = {}
    for case in cases:
        groups.setdefault(spec or case.target or file_target, []).append(case)
    return groups


def _load(files: list[Path]) -> list[Any]:
    from engine.errors import ConfigurationError
    from engine.formats.agentv.loader import load_eval_file

    loaded = []
    for path in files:
        if not path.is_file():
            raise ConfigurationError(f"no such file: {path}")
        eval_file, issues = load_eval_file(path)
        for issue in issues:
            typer.echo(f"{issue} (skipped)", err=True)
        if eval_file is None:
            raise ConfigurationError(f"{path}: not a usable AgentV eval file")
        loaded.append(eval_file)
    return loaded


def _judge(spec: str | None, settings: Any, loaded: list[Any]) -> Any:
    from engine.judges.factory import make_judge

    judged = {"llm_judge", "rubric", "composite"}
    needs = any(not c.evaluators or any(e.type in judged for e in c.evaluators) for f in loaded for c in f.cases)
    return make_judge(spec or "", settings) if needs or spec else None


def _target(spec: str | None, eval_path: Path, settings: Any, actor: str | None) -> Any:
    from engine.errors import ConfigurationError
    from engine.formats.agentv.targets import load_named_target
    from streams.cli.targets import build_target

    if not spec:
        raise ConfigurationError(
            f"{eval_path}: no target: pass --target (recorded:FILE.jsonl, command:CMD, actor:ID, NAME)"
        )
    kind, sep, _ = spec.partition(":")
    if kind in {"recorded", "command", "actor", "llm"} and sep:
        return build_target(spec, settings, actor_spec=actor)
    return load_named_target(spec, eval_path.parent)


def _write_outputs(batches: list[tuple[list[Any], Any]], out: Path | None) -> None:
    """Our JSONL records (each with its file's target and judge) and the 4.x index records beside them."""
    from engine.formats.agentv import records

    if out is None:
        return
    lines = [orjson.dumps(records.case_record(o, run.target, run.judge)) for done, run in batches for o in done]
    out.write_bytes(b"\n".join(lines) + b"\n")
    index = out.with_name(out.name.removesuffix(".jsonl") + ".index.jsonl")
    index.write_bytes(b"\n".join(orjson.dumps(records.index_record(o)) for done, _ in batches for o in done) + b"\n")
    typer.echo(f"wrote {len(lines)} result(s) to {out} (4.x index records: {index})", err=True)


def _emit(outcomes: list[Any], runs: list[Any], output_format: str, label: str | None) -> dict[str, Any]:
    from engine.formats.agentv import summary

    overall = summary.summarise(outcomes)
    if output_format == "json":
        body = {"summary": overall, "runs": [r.model_dump(mode="json") for r in runs]}
        typer.echo(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())
    elif output_format == "junit":
        typer.echo(summary.junit(outcomes, "agentv", note=label))
    else:
        typer.echo(summary.table(outcomes, overall))
        for format_run in runs:
            typer.echo(f"{format_run.source}: target {format_run.target}  judge {format_run.judge}")
    return overall


async def _record(url: str, runs: list[Any], timeout_s: float) -> None:
    from streams.store.formats import record_runs

    await record_runs(url, runs, timeout_s=timeout_s)


@app.command("compare")
def compare_command(
    baseline: Annotated[Path, typer.Argument(help="Results A (JSONL).")],
    candidate: Annotated[Path, typer.Argument(help="Results B (JSONL).")],
    threshold: Annotated[
        float, typer.Option("--threshold", help="Win/loss margin; exit 1 when the mean drops by more.")
    ] = 0.1,
    output_format: FormatOpt = "table",
) -> None:
    """Compare two result files case by case: win / loss / tie, and the mean delta."""
    from engine.errors import ConfigurationError
    from engine.formats.agentv.summary import compare, read_scores

    if not 0.0 < threshold <= 1.0:
        raise ConfigurationError(f"--threshold is a margin between 0 (exclusive) and 1, not {threshold:g}")
    result = compare(read_scores(baseline), read_scores(candidate), threshold)
    _print_comparison(result, output_format)
    if not result.rows:
        typer.echo(f"drift: {baseline} and {candidate} share no case: nothing was compared", err=True)
        raise typer.Exit(1)
    if result.mean_delta < -threshold:
        drop = -result.mean_delta
        typer.echo(f"drift: the mean dropped by {drop:.3f}, more than --threshold {threshold:g}", err=True)
        raise typer.Exit(1)


def _print_comparison(result: Any, output_format: str) -> None:
    if output_format == "json":
        body = {
            "rows": [dict(zip(("eval_id", "a", "b", "delta", "outcome"), r, strict=True)) for r in result.rows],
            "mean_a": result.mean_a,
            "mean_b": result.mean_b,
            "mean_delta": result.mean_delta,
            "counts": result.counts(),
            "only_a": result.only_a,
            "only_b": result.only_b,
        }
        typer.echo(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())
    else:
        for key, a, b, delta, outcome in result.rows:
            typer.echo(f"{key:<40} {a:6.3f} -> {b:6.3f}  {delta:+.3f}  {outcome}")
        counts = result.counts()
        typer.echo(
            f"mean {result.mean_a:.3f} -> {result.mean_b:.3f} ({result.mean_delta:+.3f})  "
            f"wins {counts['win']}  losses {counts['loss']}  ties {counts['tie']}"
        )
