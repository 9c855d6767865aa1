"""``python -m ops.restart_loop`` reads each worker's phases from its log: the joins it counts are the gate's group's
only, not those of the sinks', the monitor's or the shadow lane's groups, which join after the worker is ready."""

from __future__ import annotations

import time
from pathlib import Path

from ops.restart_loop import Proc, phases

START = time.mktime(time.strptime("2026-11-28 11:12:19", "%Y-%m-%d %H:%M:%S")) + 0.1  # the log's stamps are local
LOG = f"""===== start {START:.3f} 11:12:19 =====
[2026-11-28 11:12:23,010] [1] [INFO] Joined group 'persona-drift-loop' (generation 22) with member_id a
[2026-11-28 11:12:23,359] [1] [INFO] [^---ReadAheadRecovery]: Worker ready
[2026-11-28 11:12:26,480] [1] [INFO] Joined group 'persona-drift-loop-shadow' (generation 11) with member_id b
[2026-11-28 11:12:26,481] [1] [INFO] Joined group 'persona-drift-loop-monitor' (generation 11) with member_id c
[2026-11-28 11:12:26,481] [1] [INFO] Joined group 'persona-drift-loop-sink-run-messages' (generation 11)
"""


def test_only_the_gates_group_joins_are_counted(tmp_path: Path) -> None:
    log = tmp_path / "w1.log"
    log.write_text(LOG, encoding="utf-8")
    found = phases(Proc("w1", {"DRIFT_WEB_PORT": "1"}, log))
    assert found == {"joins": 1, "joined": 3.9, "ready": 4.3}  # not 7.4 s and three joins
