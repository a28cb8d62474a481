"""The tuning database of `kgen tune`: every evaluated candidate, per target, in SQLite (stdlib).

One row per (target, config): the target is the JSON of `tune.target_of` (arch, shape, dtypes,
fidelity and the other fixed semantics, placement, kgen and TT-Metal versions, and
`prediction_digest`: every source and config file a prediction can depend on); the config is the
candidate's canonical JSON. A row holds the planner's verdict (predicted | illegal | duplicate,
with the rule), the prediction, the kernel id once the candidate has been built (with the
`generator_digest` it was built under), and the times.

Verification verdicts are a table of their own, keyed by the kernel id (content-addressed: the
generated program) and `checker_digest` (the emulator, the port-check, the verification job and
the toolchain that ran them). A stored result is reused only while everything that made it is
unchanged, as Triton's `triton_key` keys its cache by a hash of its whole compiler package.

Concurrency: WAL journal, a busy timeout, and every write one `BEGIN IMMEDIATE` transaction of
upserts, so two `kgen tune` processes on one file serialise their writes and lose nothing (a row
another process wrote is merged, never dropped: verification results are only ever added).
"""

from __future__ import annotations

import ast
import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Iterable, Mapping

from kgen.core.errors import KgenError
from kgen.perf.tune.candidate import Outcome, Scored, TuneConfig

BUSY_TIMEOUT_MS = 60_000
SCHEMA_VERSION = 2

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
    verify_status TEXT,                -- the last verdict recorded (the verdicts table is the one read)
    verify_errors TEXT,                -- JSON list of what failed
    verify_detail TEXT,                -- JSON of the verification job's result
    evaluated REAL NOT NULL,           -- unix time of the prediction
    verified REAL,                     -- unix time of the verification
    generator TEXT,                    -- generator_digest the kernel_id was built under
    PRIMARY KEY (target_id, config)
);
CREATE TABLE IF NOT EXISTS verdicts (
    kernel_id TEXT NOT NULL,
    checker TEXT NOT NULL,             -- checker_digest: emulator, port-check, toolchain
    status TEXT NOT NULL,              -- passed | failed
    errors TEXT NOT NULL,              -- JSON list of what failed
    detail TEXT NOT NULL,              -- JSON of the verification job's result
    verified REAL NOT NULL,
    PRIMARY KEY (kernel_id, checker)
);
"""


# ----------------------------------------------------------------------------------------------
# what a stored result depends on
# ----------------------------------------------------------------------------------------------

_PACKAGE = Path(__file__).resolve().parent.parent          # kgen/

# The prediction of a candidate: plan -> lower -> predict (and what they import), the candidate's
# application to the spec and its evaluation (tune/candidate.py, tune/space.py, tune/search.py), the
# grammar, and every config table.
PREDICTION_ROOTS = ("kgen.perf.model", "kgen.gen.lower", "kgen.gen.plan", "kgen.gen.spec")
PREDICTION_FILES = ("perf/tune/candidate.py", "perf/tune/space.py", "perf/tune/search.py", "gen/kspec.lark")
# A verdict on a built kernel: the emulator (its C++ runtime too), TT's dataflow kernels for the
# port-check, the compile step, and the verification job itself (tune.verify_spec_text).
CHECKER_ROOTS = ("kgen.proof.emulate", "kgen.proof.portcheck", "kgen.proof.ttdataflow", "kgen.proof.golden",
                 "kgen.toolchain.compile", "kgen.toolchain.discovery")
CHECKER_FILES = ("perf/tune/verify.py",)
CHECKER_FOLDERS = ("proof/emu",)


def _module_file(package: Path, module: str) -> Path | None:
    parts = module.split(".")[1:]
    for candidate in (package.joinpath(*parts).with_suffix(".py") if parts else None,
                      package.joinpath(*parts, "__init__.py")):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def import_closure(roots: Iterable[str], package: Path = _PACKAGE) -> list[Path]:
    """The files of the kgen modules `roots` import, transitively, read from their source (imports
    inside functions count: they run when the function does), with every package __init__ on the
    way. Only `kgen.*` modules: the standard library and numpy are the environment's."""
    seen: dict[str, Path] = {}
    todo = [m for root in roots for m in _with_parents(root)]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = _module_file(package, module)
        if path is None:
            continue
        seen[module] = path
        tree = ast.parse(path.read_bytes(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from kgen.proof import tiles` imports kgen.proof.tiles when that is a module
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                if name == "kgen" or name.startswith("kgen."):
                    todo += _with_parents(name)
    return sorted(set(seen.values()))


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def files_digest(files: Iterable[Path], base: Path, h: "hashlib._Hash | None" = None) -> str:
    """sha256 over each file's path relative to `base` and its bytes, in path order: the same tree
    anywhere on disk gives the same digest."""
    h = h or hashlib.sha256()
    for path in sorted(set(files), key=lambda p: p.relative_to(base).as_posix()):
        rel = path.relative_to(base).as_posix().encode()
        data = path.read_bytes()
        h.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:16]


def _tree_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


def prediction_digest_of(package: Path, configs: Path) -> str:
    """The digest of the kgen tree at `package` with its configs/ at `configs` (a copy in tests)."""
    files = import_closure(PREDICTION_ROOTS, package) + [package / f for f in PREDICTION_FILES]
    return files_digest(files, package) + files_digest(_tree_files(configs), configs)[:8]


def checker_digest_of(package: Path, configs: Path, toolchain: str) -> str:
    files = import_closure(CHECKER_ROOTS, package) + [package / f for f in CHECKER_FILES]
    for folder in CHECKER_FOLDERS:
        files += _tree_files(package / folder)
    h = hashlib.sha256(toolchain.encode())
    return files_digest(files, package, h) + files_digest(_tree_files(configs), configs)[:8]


def generator_digest_of(package: Path, configs: Path, templates: Path) -> str:
    """Everything that decides which kernel a config builds to: the whole package, its templates
    and configs (a kernel id is trusted for a config only under the same generator)."""
    return (files_digest([p for p in _tree_files(package) if p.suffix == ".py" or p.name.endswith(".lark")], package)
            + files_digest(_tree_files(templates), templates)[:8] + files_digest(_tree_files(configs), configs)[:8])


@cache
def prediction_digest() -> str:
    """What every stored prediction of this kgen depends on besides its target and config."""
    from kgen.core.resources import data_dir

    return prediction_digest_of(_PACKAGE, data_dir("configs"))


@cache
def toolchain_identity() -> str:
    """The compilers and TT-Metal headers a verdict was reached with (`kgen doctor`'s pieces)."""
    from kgen.toolchain.discovery import discover

    tc = discover()
    return json.dumps({
        "sfpi": tc.sfpi.version if tc.sfpi else None,
        "host": [tc.host.cxx, tc.host.version] if tc.host else None,
        "headers": [str(tc.headers.root), tc.headers.version] if tc.headers else None,
        "firmware": str(tc.firmware) if tc.firmware else None,
    }, sort_keys=True)


@cache
def checker_digest() -> str:
    """What every stored verdict depends on besides the kernel it judged."""
    from kgen.core.resources import data_dir

    return checker_digest_of(_PACKAGE, data_dir("configs"), toolchain_identity())


@cache
def generator_digest() -> str:
    from kgen.core.resources import data_dir

    return generator_digest_of(_PACKAGE, data_dir("configs"), data_dir("templates"))


class TuneDbError(KgenError):
    """The database path is unusable (exit 2)."""


@dataclass(frozen=True)
class Row:
    config: TuneConfig
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
            self._set_wal()
            self.conn.execute("PRAGMA synchronous = NORMAL")
            with self._write():
                fresh = self.conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone() is None
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self.conn.execute(stmt)
                if fresh:
                    self.conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                self._migrate()
            version = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        except sqlite3.OperationalError as exc:
            # SQLite cannot create the file, its journal or its WAL: a read-only folder or file.
            if getattr(exc, "sqlite_errorname", "") in ("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM") \
                    or "readonly" in str(exc) or "unable to open" in str(exc):
                raise TuneDbError(f"--db {self.path}: cannot write there ({exc}); the database, its folder "
                                  f"{self.path.parent} and its -wal/-shm files must be writable. "
                                  f"Pass --db a path in a folder you can write to") from None
            raise TuneDbError(f"--db {self.path}: not a kgen tune database ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise TuneDbError(f"--db {self.path}: not a kgen tune database ({exc})") from None
        if version != str(SCHEMA_VERSION):
            raise TuneDbError(f"--db {self.path}: schema version {version}, this kgen writes {SCHEMA_VERSION}; "
                              f"use another file")

    def _set_wal(self) -> None:
        """Switch to WAL. Two processes opening one new file at once can find it locked: SQLite
        answers the journal-mode change with SQLITE_BUSY without waiting on the busy timeout, so
        wait here, as long as that timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _migrate(self) -> None:
        """Version 1 kept verdicts per (target, config) under the cost model's digest only: they
        move to no table (nothing says which emulator judged them); the rows stay, as predictions
        under their old target keys, which this kgen no longer asks for."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or row[0] != "1":
            return
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(candidates)")}
        if "generator" not in columns:
            self.conn.execute("ALTER TABLE candidates ADD COLUMN generator TEXT")
        self.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))

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

    def record_verification(self, target_id: int, config: TuneConfig, kernel_id: str | None, status: str,
                            errors: list[str], detail: Mapping[str, object]) -> None:
        """The verdict on `config`'s kernel, stored under its kernel id and the checker that judged it
        (a verdict without a kernel id, a candidate that did not build, is kept on the row only)."""
        now = time.time()
        with self._write() as c:
            c.execute("INSERT INTO candidates (target_id, config, status, evaluated) VALUES (?,?,?,?) "
                      "ON CONFLICT (target_id, config) DO NOTHING", (target_id, config.key(), "predicted", now))
            c.execute("UPDATE candidates SET kernel_id = ?, generator = ?, verify_status = ?, verify_errors = ?, "
                      "verify_detail = ?, verified = ? WHERE target_id = ? AND config = ?",
                      (kernel_id, generator_digest(), status, json.dumps(errors), json.dumps(detail, default=str),
                       now, target_id, config.key()))
            if kernel_id is not None:
                c.execute("INSERT INTO verdicts (kernel_id, checker, status, errors, detail, verified) VALUES "
                          "(?,?,?,?,?,?) ON CONFLICT (kernel_id, checker) DO UPDATE SET status = excluded.status, "
                          "errors = excluded.errors, detail = excluded.detail, verified = excluded.verified",
                          (kernel_id, checker_digest(), status, json.dumps(errors), json.dumps(detail, default=str),
                           now))

    def verification(self, target_id: int, config: TuneConfig,
                     kernel_id: str | None = None) -> tuple[str, tuple[str, ...], str | None] | None:
        """(status, errors, kernel id) of the stored verdict on this config's kernel, judged by
        this kgen's checker and toolchain; None when there is none. `kernel_id` is the config's
        kernel as built now; without it, the id recorded for the config is used only if it was
        built by this very generator."""
        if kernel_id is None:
            row = self.conn.execute("SELECT kernel_id, generator FROM candidates WHERE target_id = ? AND config = ?",
                                    (target_id, config.key())).fetchone()
            if row is None or row[0] is None or row[1] != generator_digest():
                return None
            kernel_id = row[0]
        return self.verdict(kernel_id)

    def verdict(self, kernel_id: str) -> tuple[str, tuple[str, ...], str] | None:
        row = self.conn.execute("SELECT status, errors FROM verdicts WHERE kernel_id = ? AND checker = ?",
                                (kernel_id, checker_digest())).fetchone()
        return None if row is None else (row[0], tuple(json.loads(row[1])), kernel_id)

    def rows(self, target_id: int) -> list[Row]:
        out = []
        for r in self.conn.execute(
                "SELECT config, status, error, microseconds, cycles, tflops, utilization, bottleneck, policy, "
                "kernel_id, verify_status, verify_errors, evaluated, verified FROM candidates WHERE target_id = ?",
                (target_id,)):
            out.append(Row(TuneConfig.from_key(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
                           tuple(json.loads(r[11] or "[]")), r[12], r[13]))
        return out

    def count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]

    def report(self, width: int | None = None) -> str:
        """What is known, per target, at `width` columns (the terminal's): candidates evaluated,
        legal, verified; the best predicted and the best verified."""
        from kgen.core import terminal

        width = width or terminal.width()

        def row(key: str, value: str) -> list[str]:
            return terminal.key_value(key, value, width, key_width=14, indent="    ")

        targets = self.conn.execute("SELECT id, key, arch, m, n, k, dtypes, fidelity, kgen_version, tt_metal_version, "
                                    "model FROM targets ORDER BY id").fetchall()
        lines = terminal.hanging(f"kgen tune database: {self.path}", width)
        lines += terminal.hanging(f"{len(targets)} target(s), {self.count()} candidate row(s); verdicts shown are "
                                  f"this kgen's (emulator and toolchain {checker_digest()})", width, "  ")
        joined = (generator_digest(), checker_digest())
        for tid, key, arch, m, n, k, dtypes, fid, kv, tv, model in targets:
            t = json.loads(key)
            stats = self.conn.execute(
                "SELECT COUNT(*), SUM(c.status = 'predicted'), SUM(c.status = 'illegal'), SUM(v.status = 'passed'), "
                f"SUM(v.status = 'failed') FROM {_JOINED} WHERE c.target_id = ?", joined + (tid,)).fetchone()
            extras = []
            if t.get("fp32_dest_acc"):
                extras.append("fp32 dest")
            if t.get("fuse_bias"):
                extras.append(f"bias {t.get('dtype_bias')}")
            if t.get("activation") not in (None, "none"):
                extras.append(str(t["activation"]))
            if t.get("placement"):
                extras.append("placement " + ",".join(f"{a}={b}" for a, b in t["placement"].items()))
            lines += [""] + terminal.hanging(
                f"target {tid}: {arch} {m} x {n} x {k}{' batch ' + str(t['batch']) if t.get('batch', 1) != 1 else ''} "
                f"{dtypes} {fid}{' (' + ', '.join(extras) + ')' if extras else ''}; kgen {kv}, TT-Metal {tv}, "
                f"model {model}", width, "  ", "    ")
            lines += terminal.paragraph(f"evaluated {stats[0]}, legal {stats[1] or 0}, illegal {stats[2] or 0}, "
                                        f"verified passed {stats[3] or 0}, failed {stats[4] or 0}", width, "    ")
            best = self.conn.execute(f"SELECT c.config, c.microseconds, c.tflops, v.status FROM {_JOINED} WHERE "
                                     "c.target_id = ? AND c.status = 'predicted' ORDER BY c.cycles, c.config LIMIT 1",
                                     joined + (tid,)).fetchone()
            if best:
                lines += row("best predicted", f"{best[1]:,.2f} us {best[2]:,.1f} TFLOPS  "
                                               f"{TuneConfig.from_key(best[0]).short()}  [{best[3] or 'not verified'}]")
            bv = self.conn.execute(f"SELECT c.config, c.microseconds, c.kernel_id FROM {_JOINED} WHERE c.target_id = ? "
                                   "AND v.status = 'passed' ORDER BY c.cycles, c.config LIMIT 1", joined + (tid,)).fetchone()
            if bv:
                lines += row("best verified", f"{bv[1]:,.2f} us  {TuneConfig.from_key(bv[0]).short()}  {bv[2]}")
            for cfg, errs in self.conn.execute(f"SELECT c.config, v.errors FROM {_JOINED} WHERE c.target_id = ? AND "
                                               "v.status = 'failed' ORDER BY c.cycles LIMIT 5", joined + (tid,)):
                lines += row("FAILED", f"{TuneConfig.from_key(cfg).short()}: {'; '.join(json.loads(errs or '[]'))}")
        return "\n".join(lines) + "\n"


# a candidate's verdict: of its kernel as recorded under this generator, judged by this checker
_JOINED = ("candidates c LEFT JOIN verdicts v ON c.generator = ? AND v.kernel_id = c.kernel_id AND v.checker = ?")


def default_db_path() -> Path:
    from kgen.core.resources import cache_root, writable_dir

    return writable_dir(cache_root() / "tune") / "tune.sqlite"
