"""The tuning database of `kgen tune`: every evaluated candidate, per target, in SQLite (stdlib).

One row per (target, config): the target is the JSON of `tune.target_of` (arch, shape, dtypes,
fidelity and the other fixed semantics, placement, kgen and TT-Metal versions, and the digest of
the cost model the prediction came from); the config is the candidate's canonical JSON. A row holds
the planner's verdict (predicted | illegal | duplicate, with the rule), the prediction, the kernel
id once the candidate has been built, the verification status and its errors, and the times.

Concurrency: WAL journal, a busy timeout, and every write one `BEGIN IMMEDIATE` transaction of
upserts, so two `kgen tune` processes on one file serialise their writes and lose nothing (a row
another process wrote is merged, never dropped: verification results are only ever added).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from kgen.core.errors import KgenError
from kgen.perf.tune import Candidate, Outcome, Scored

BUSY_TIMEOUT_MS = 60_000
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS targets (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,          -- canonical JSON of the target
    arch TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
    dtypes TEXT NOT NULL, fidelity TEXT NOT NULL,
    kgen_version TEXT NOT NULL, tt_metal_version TEXT NOT NULL, model TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS candidates (
    target_id INTEGER NOT NULL REFERENCES targets(id),
    config TEXT NOT NULL,              -- canonical JSON of the candidate
    status TEXT NOT NULL,              -- predicted | illegal | duplicate
    error TEXT NOT NULL DEFAULT '',    -- the planner's rule when illegal
    microseconds REAL, cycles REAL, tflops REAL, utilization REAL, bottleneck TEXT, policy TEXT,
    kernel_id TEXT,                    -- content-addressed build id, once built
    verify_status TEXT,                -- NULL (not verified) | passed | failed
    verify_errors TEXT,                -- JSON list of what failed
    verify_detail TEXT,                -- JSON of the verification job's result
    evaluated REAL NOT NULL,           -- unix time of the prediction
    verified REAL,                     -- unix time of the verification
    PRIMARY KEY (target_id, config)
);
"""


class TuneDbError(KgenError):
    """The database path is unusable (exit 2)."""


@dataclass(frozen=True)
class Row:
    config: Candidate
    status: str
    error: str
    microseconds: float | None
    cycles: float | None
    tflops: float | None
    utilization: float | None
    bottleneck: str | None
    policy: str | None
    kernel_id: str | None
    verify_status: str | None
    verify_errors: tuple[str, ...]
    evaluated: float
    verified: float | None

    def outcome(self) -> Outcome:
        scored = None
        if self.status == "predicted":
            scored = Scored(self.config, self.microseconds, self.cycles, self.tflops, self.utilization,
                            self.bottleneck or "", self.policy or "")
        return Outcome(self.config, self.status, scored, self.error)


class TuneDb:
    def __init__(self, path: Path):
        self.path = Path(path)
        if self.path.is_dir():
            raise TuneDbError(f"--db {self.path} is a folder; pass a file path such as tune.sqlite")
        if not self.path.parent.is_dir():
            raise TuneDbError(f"--db {self.path}: the folder {self.path.parent} does not exist; create it first")
        try:
            self.conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            with self._write():
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self.conn.execute(stmt)
                self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            version = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise TuneDbError(f"--db {self.path}: not a kgen tune database ({exc})") from None
        if version != str(SCHEMA_VERSION):
            raise TuneDbError(f"--db {self.path}: schema version {version}, this kgen writes {SCHEMA_VERSION}; "
                              f"use another file")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "TuneDb":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    class _Tx:
        def __init__(self, conn: sqlite3.Connection):
            self.conn = conn

        def __enter__(self):
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, exc_type, exc, tb):
            self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
            return False

    def _write(self) -> "_Tx":
        return TuneDb._Tx(self.conn)

    # ------------------------------------------------------------------------------------------

    def target_id(self, target: Mapping[str, object]) -> int:
        key = json.dumps(target, sort_keys=True, separators=(",", ":"))
        row = self.conn.execute("SELECT id FROM targets WHERE key = ?", (key,)).fetchone()
        if row:
            return row[0]
        dtypes = "/".join(str(target[k]) for k in ("dtype_in0", "dtype_in1", "dtype_out"))
        with self._write() as c:
            c.execute("INSERT OR IGNORE INTO targets (key, arch, m, n, k, dtypes, fidelity, kgen_version, "
                      "tt_metal_version, model, created) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                      (key, target["arch"], target["m"], target["n"], target["k"], dtypes, target["fidelity"],
                       target["kgen_version"], target["tt_metal_version"], target["model"], time.time()))
        return self.conn.execute("SELECT id FROM targets WHERE key = ?", (key,)).fetchone()[0]

    def known(self, target_id: int) -> dict[str, Outcome]:
        """config key -> Outcome of every candidate evaluated for this target."""
        return {r.config.key(): r.outcome() for r in self.rows(target_id)}

    def record(self, target_id: int, outcomes: Iterable[Outcome]) -> int:
        """Store evaluated candidates in one transaction; a row already there keeps its verification."""
        now = time.time()
        rows = []
        for o in outcomes:
            s = o.scored
            rows.append((target_id, o.candidate.key(), o.status, o.error,
                         s.microseconds if s else None, s.cycles if s else None, s.tflops if s else None,
                         s.utilization if s else None, s.bottleneck if s else None, s.policy if s else None, now))
        with self._write() as c:
            c.executemany(
                "INSERT INTO candidates (target_id, config, status, error, microseconds, cycles, tflops, utilization, "
                "bottleneck, policy, evaluated) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (target_id, config) DO UPDATE SET status = excluded.status, error = excluded.error, "
                "microseconds = excluded.microseconds, cycles = excluded.cycles, tflops = excluded.tflops, "
                "utilization = excluded.utilization, bottleneck = excluded.bottleneck, policy = excluded.policy, "
                "evaluated = excluded.evaluated", rows)
        return len(rows)

    def record_verification(self, target_id: int, config: Candidate, kernel_id: str | None, status: str,
                            errors: list[str], detail: Mapping[str, object]) -> None:
        with self._write() as c:
            c.execute("INSERT INTO candidates (target_id, config, status, evaluated) VALUES (?,?,?,?) "
                      "ON CONFLICT (target_id, config) DO NOTHING", (target_id, config.key(), "predicted", time.time()))
            c.execute("UPDATE candidates SET kernel_id = ?, verify_status = ?, verify_errors = ?, verify_detail = ?, "
                      "verified = ? WHERE target_id = ? AND config = ?",
                      (kernel_id, status, json.dumps(errors), json.dumps(detail, default=str), time.time(),
                       target_id, config.key()))

    def verification(self, target_id: int, config: Candidate) -> tuple[str, tuple[str, ...], str | None] | None:
        row = self.conn.execute("SELECT verify_status, verify_errors, kernel_id FROM candidates WHERE target_id = ? "
                                "AND config = ?", (target_id, config.key())).fetchone()
        if row is None or row[0] is None:
            return None
        return row[0], tuple(json.loads(row[1] or "[]")), row[2]

    def rows(self, target_id: int) -> list[Row]:
        out = []
        for r in self.conn.execute(
                "SELECT config, status, error, microseconds, cycles, tflops, utilization, bottleneck, policy, "
                "kernel_id, verify_status, verify_errors, evaluated, verified FROM candidates WHERE target_id = ?",
                (target_id,)):
            out.append(Row(Candidate.from_key(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
                           tuple(json.loads(r[11] or "[]")), r[12], r[13]))
        return out

    def count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]

    def report(self) -> str:
        """What is known, per target: candidates evaluated, legal, verified; the best predicted and
        the best verified."""
        targets = self.conn.execute("SELECT id, key, arch, m, n, k, dtypes, fidelity, kgen_version, tt_metal_version, "
                                    "model FROM targets ORDER BY id").fetchall()
        lines = [f"kgen tune database: {self.path}", f"  {len(targets)} target(s), {self.count()} candidate row(s)"]
        for tid, key, arch, m, n, k, dtypes, fid, kv, tv, model in targets:
            t = json.loads(key)
            stats = self.conn.execute(
                "SELECT COUNT(*), SUM(status = 'predicted'), SUM(status = 'illegal'), SUM(verify_status = 'passed'), "
                "SUM(verify_status = 'failed') FROM candidates WHERE target_id = ?", (tid,)).fetchone()
            extras = []
            if t.get("fp32_dest_acc"):
                extras.append("fp32 dest")
            if t.get("fuse_bias"):
                extras.append(f"bias {t.get('dtype_bias')}")
            if t.get("activation") not in (None, "none"):
                extras.append(str(t["activation"]))
            if t.get("placement"):
                extras.append("placement " + ",".join(f"{a}={b}" for a, b in t["placement"].items()))
            lines += ["", f"  target {tid}: {arch} {m} x {n} x {k}"
                          f"{' batch ' + str(t['batch']) if t.get('batch', 1) != 1 else ''} {dtypes} {fid}"
                          f"{' (' + ', '.join(extras) + ')' if extras else ''}; kgen {kv}, TT-Metal {tv}, model {model}",
                      f"    evaluated {stats[0]}, legal {stats[1] or 0}, illegal {stats[2] or 0}, "
                      f"verified passed {stats[3] or 0}, failed {stats[4] or 0}"]
            best = self.conn.execute("SELECT config, microseconds, tflops, verify_status FROM candidates WHERE target_id = ? "
                                     "AND status = 'predicted' ORDER BY cycles, config LIMIT 1", (tid,)).fetchone()
            if best:
                lines.append(f"    best predicted  {best[1]:,.2f} us {best[2]:,.1f} TFLOPS  "
                             f"{Candidate.from_key(best[0]).short()}  [{best[3] or 'not verified'}]")
            bv = self.conn.execute("SELECT config, microseconds, kernel_id FROM candidates WHERE target_id = ? AND "
                                   "verify_status = 'passed' ORDER BY cycles, config LIMIT 1", (tid,)).fetchone()
            if bv:
                lines.append(f"    best verified   {bv[1]:,.2f} us  {Candidate.from_key(bv[0]).short()}  {bv[2]}")
            for cfg, errs in self.conn.execute("SELECT config, verify_errors FROM candidates WHERE target_id = ? AND "
                                               "verify_status = 'failed' ORDER BY cycles LIMIT 5", (tid,)):
                lines.append(f"    FAILED          {Candidate.from_key(cfg).short()}: {'; '.join(json.loads(errs or '[]'))}")
        return "\n".join(lines) + "\n"


def default_db_path() -> Path:
    from kgen.core.resources import cache_root, writable_dir

    return writable_dir(cache_root() / "tune") / "tune.sqlite"
