"""The run's workspace: a git repository the agent works in, one commit per iteration.

Layout (``<run>/workspace``)::

    TASK.md                   what is being translated, and the rules       (frozen)
    reference/                the reference's source, verbatim, to read      (frozen)
    tests/test_hierarchy.py   the verification as pytest tests               (frozen)
    harness/verify.py         the rerun command; harness/config.json         (frozen)
    translation/              the agent's work: jax_env.py, bridge.py, tests/ (editable)

The baseline commit (tag ``envport-baseline``) holds the frozen files. Before each verification
every frozen path is restored from it; what had changed is returned so the loop records the
attempt. Each iteration is committed and tagged ``iter-NNNN`` (a reverted optimisation stays
reachable through its tag).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

FROZEN = ("TASK.md", "reference", "tests", "harness")
EDITABLE = ("translation",)
BASELINE_TAG = "envport-baseline"
GITIGNORE = "__pycache__/\n*.pyc\n.pytest_cache/\n.jax-cache/\n"
_GIT = ["git", "-c", "user.name=envport", "-c", "user.email=envport@localhost",
        "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main",
        "-c", "core.hooksPath=/dev/null"]  # the agent's hooks never run in envport's git calls


class WorkspaceError(RuntimeError):
    pass


class Workspace:
    def __init__(self, root: Path, frozen: tuple[str, ...] = FROZEN,
                 editable: tuple[str, ...] = EDITABLE):
        self.root = Path(root)
        self.frozen, self.editable = frozen, editable

    # ---------------------------------------------------------------- git
    def git(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run([*_GIT, *args], cwd=self.root, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise WorkspaceError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout.strip()

    @property
    def exists(self) -> bool:
        return (self.root / ".git").is_dir()

    def create(self, files: dict[str, str]) -> str:
        """Initialise the repository with ``files`` (frozen and skeleton) as the baseline."""
        if self.exists:
            raise WorkspaceError(f"{self.root} is already a workspace; use --resume")
        self.root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q")
        (self.root / ".gitignore").write_text(GITIGNORE)
        for rel, text in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "baseline: reference, tests and harness (frozen)")
        self.git("tag", BASELINE_TAG)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def baseline(self) -> str:
        return self.git("rev-parse", BASELINE_TAG)

    def dirty(self) -> bool:
        return bool(self.git("status", "--porcelain"))

    # ---------------------------------------------------------------- frozen paths
    def frozen_changes(self) -> list[str]:
        """Frozen paths that differ from the baseline (modified, deleted or added)."""
        changed = self.git("diff", "--name-only", BASELINE_TAG, "--", *self.frozen)
        added = self.git("ls-files", "--others", "--exclude-standard", "--", *self.frozen)
        return sorted({p for p in (changed + "\n" + added).splitlines() if p})

    def restore_frozen(self) -> list[str]:
        """Put every frozen path back as in the baseline; returns what had been changed."""
        changed = self.frozen_changes()
        if not changed:
            return []
        in_baseline = set(self.git("ls-tree", "-r", "--name-only", BASELINE_TAG, "--",
                                   *self.frozen).splitlines())
        for rel in changed:
            if rel in in_baseline:
                self.git("checkout", BASELINE_TAG, "--", rel)
            else:
                (self.root / rel).unlink(missing_ok=True)
        return changed

    # ---------------------------------------------------------------- iterations
    def commit(self, message: str, tag: str | None = None) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        if tag:
            self.git("tag", "-f", tag)
        return self.head()

    def reset_to(self, commit: str) -> None:
        """Drop the working tree's changes and move to ``commit`` (a reverted attempt stays
        reachable through its tag)."""
        self.git("reset", "-q", "--hard", commit)
        self.git("clean", "-q", "-fd", "--", *self.editable)

    def diff(self, commit: str, stat_only: bool = False) -> str:
        """What ``commit`` changed relative to its parent."""
        args = ["show", "--format=%s", "--no-color"]
        if stat_only:
            args.append("--stat")
        return self.git(*args, commit, check=False)

    def changed_files(self, commit: str) -> list[str]:
        out = self.git("show", "--name-only", "--format=", commit, check=False)
        return [line for line in out.splitlines() if line]
