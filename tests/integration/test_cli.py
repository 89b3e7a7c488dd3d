"""The `horcrux` command as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from horcrux_tools.cli import main
from horcrux_tools.sim import wilson


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "simulate", "--harry", "naive", "--games", "40", "--seed", "3", "--json"
    )
    data = json.loads(out)
    assert code == 0
    for key in (
        "games",
        "wins",
        "win_rate",
        "ci_low",
        "ci_high",
        "mean_turns_to_win",
        "wasted_attacks",
    ):
        assert key in data
    assert data["games"] == 40 and data["win_rate"] == data["wins"] / 40
    assert data["ci_low"] <= data["win_rate"] <= data["ci_high"]
    assert (
        data["wasted_attacks"]["total"]
        == data["wasted_attacks"]["decoy"] + data["wasted_attacks"]["empty"]
    )


def test_simulate_is_reproducible_and_workers_do_not_change_results(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, one, _ = run(capsys, "simulate", "--games", "30", "--seed", "9", "--json")
    _, again, _ = run(
        capsys, "simulate", "--games", "30", "--seed", "9", "--json", "--workers", "2"
    )
    _, other, _ = run(capsys, "simulate", "--games", "30", "--seed", "10", "--json")

    def results(text: str) -> dict[str, object]:
        data = json.loads(text)
        del data["decisions"]["latency_ms"]  # the default planner's wall time: not a result
        return data  # type: ignore[no-any-return]

    assert results(one) == results(again)
    assert results(one) != results(other)


def test_oracle_wins_every_game(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "--harry", "oracle", "--games", "25", "--json")
    data = json.loads(out)
    assert code == 0 and data["win_rate"] == 1.0 and data["mean_turns_to_win"] == 3.0


def test_simulate_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "--games", "20", "--no-progress")
    assert code == 0
    assert "win rate" in out and "95% Wilson CI" in out and "wasted attacks" in out


def test_progress_bar_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = run(capsys, "simulate", "--games", "10", "--progress")
    assert "10/10 games" in err


def test_replay_prints_truth_beside_harrys_view(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "--seed", "3", "--harry", "naive")
    assert code == 0
    assert "start   truth: Horcruxes" in out and "winner:" in out
    assert "H: " in out and "V: " in out


def test_bad_input_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "simulate", "--harry", "wizard")
    assert code == 2 and "unknown harry brain 'wizard'" in err
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--games", "0"])
    assert exc.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_play_resume_takes_a_game_and_its_token_together(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "play", "--resume", "g1")
    assert code == 2 and "--resume GAME_ID and --token TOKEN go together" in err
    code, _, err = run(capsys, "play", "--token", "t" * 30)
    assert code == 2 and "go together" in err
    code, _, err = run(capsys, "play", "--local", "--resume", "g1", "--token", "t" * 30)
    assert code == 2 and "not with --local or --join" in err
    # an id and a token may begin with "-": with "=" they parse (then no server answers)
    argv = ["play", "--api", "http://127.0.0.1:9", "--resume=-g1", "--token=-t" + "t" * 30]
    code, _, err = run(capsys, *argv)
    assert code == 1 and "cannot reach http://127.0.0.1:9" in err, err


def test_installed_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "horcrux_tools.cli", "simulate", "--games", "5", "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout)["games"] == 5


def test_wilson_interval() -> None:
    low, high = wilson(516, 2000)
    assert low == pytest.approx(0.2389, abs=1e-3) and high == pytest.approx(0.2778, abs=1e-3)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(1.0)


def test_serve_runs_the_documented_number_of_ai_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    from horcrux_tools.local import server
    from horcrux_tools.local.ai_turns import WORKERS

    seen: list[object] = []
    monkeypatch.setattr(server, "serve", lambda host, port, **kw: seen.append(kw["options"]) or 0)
    assert main(["serve"]) == 0 and main(["serve", "--ai-workers", "3"]) == 0
    assert [o.ai_workers for o in seen] == [WORKERS, 3]  # type: ignore[attr-defined]
    assert WORKERS == 2  # the README's and the soak's figure
