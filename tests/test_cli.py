import json

from envport.cli import main


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "cartpole" in out and "pong" in out


def test_unknown_environment_exits_2_naming_known_ones(capsys):
    assert main(["verify", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "cartpole" in err


def test_verify_writes_json_and_prompt(tmp_path):
    # CartPole: what is checked is the command's files, whichever environment it verifies
    # (Pong's L2 compiles for ~50 s; test_verify_pong.py verifies it)
    out, prompt = tmp_path / "v.json", tmp_path / "repair.md"
    code = main(["verify", "cartpole", "--layer", "interaction", "--states", "60",
                 "--json", str(out), "--prompt", str(prompt)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["passed"] and data["layers"]["interaction"]["states"] == 60
    assert "Every layer passes" in prompt.read_text()
