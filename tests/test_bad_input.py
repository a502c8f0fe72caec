"""Bad input fails before any work, with the flag or file named and exit code 2.

Each case is run through ``envport.cli.main`` as a user types it; none of them may start the
work (the checks run before anything is compiled, trained or written)."""

from __future__ import annotations

from pathlib import Path

import pytest

import envport
from envport.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's own errors: the flag named, exit 2
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, " ".join((out.out + out.err).split())


@pytest.mark.parametrize(("argv", "named"), [
    (("verify", "pong", "--episodes", "0"), "--episodes"),
    (("verify", "pong", "--states", "0"), "--states"),
    (("verify", "pong", "--examples", "0"), "--examples"),
    (("verify", "pong", "--seed", "-5"), "--seed"),
    (("verify", "pong", "--seed", "abc"), "--seed"),
    (("verify", "pong", "-o", "foo=1"), "pong has no option 'foo'"),
    (("verify", "pong", "-o", "frameskip=abc"), "frameskip='abc': expected an integer"),
    (("verify", "pong", "-o", "frameskip=0"), "frameskip='0': expected a value >= 1"),
    (("verify", "pong", "-o", "continuous=maybe"), "continuous='maybe': expected true or false"),
    (("verify", "pong", "-o", "frameskip"), "-o takes KEY=VALUE"),
    (("verify", "cartpole", "-o", "frameskip=4"), "cartpole has no option 'frameskip'"),
    (("verify", "nosuchenv"), "unknown environment 'nosuchenv'"),
    (("verify", "pong", "--modes", "some"), "--modes"),
    (("mutate", "pong", "--workers", "0"), "--workers"),
    (("mutate", "pong", "--only", "m9999"), "no mutant m9999"),
    (("mutate", "pong", "--states", "0"), "--states"),
    (("transfer", "cartpole", "--alpha", "2"), "--alpha"),
    (("transfer", "cartpole", "--margin", "-1"), "--margin"),
    (("transfer", "cartpole", "--seeds", "0"), "--seeds"),
    (("train", "cartpole", "--steps", "0"), "--steps"),
    (("train", "cartpole", "--seed", "-1"), "--seed"),
    (("bench", "pong", "--seconds", "0"), "--seconds"),
])
def test_bad_flags_exit_2_naming_them(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                                      named: str) -> None:
    code, text = run(capsys, *argv)
    assert code == 2, text
    assert named in text, text


def test_outputs_into_missing_or_unwritable_places_fail_first(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = [
        (("verify", "pong", "--json", str(tmp_path / "missing" / "v.json")), "--json",
         "does not exist"),
        (("verify", "pong", "--prompt", str(a_file / "p.md")), "--prompt", "not a writable"),
        (("verify", "pong", "--json", str(tmp_path)), "--json", "is a folder"),
        (("run", "pong", "--out", str(a_file)), "--out", "not a folder"),
        (("mutate", "pong", "--json", str(tmp_path / "no" / "m.json")), "--json",
         "does not exist"),
        (("transfer", "cartpole", "--json", str(tmp_path / "no" / "t.json")), "--json",
         "does not exist"),
        (("transfer", "cartpole", "--plot", str(a_file / "t.png")), "--plot",
         "not a writable"),
        (("train", "cartpole", "--out", str(a_file)), "--out", "not a folder"),
    ]
    for argv, flag, why in cases:
        code, text = run(capsys, *argv)
        assert code == 2 and flag in text and why in text, (argv, text)
    # Nothing was created on the way.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_make_rejects_a_frameskip_that_would_freeze_the_game() -> None:
    with pytest.raises(ValueError, match="frameskip"):
        envport.make("pong", frameskip=0)


def test_an_install_hint_keeps_its_extra(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich markup would eat "[scale]" from "pip install 'envport[scale]'"."""
    import envport.cli as cli

    def fail(args: object) -> int:
        raise ValueError("Ray is not installed: pip install 'envport[scale]'")

    monkeypatch.setitem(cli.COMMANDS, "list", fail)
    code, text = run(capsys, "list")
    assert code == 2 and "pip install 'envport[scale]'" in text
