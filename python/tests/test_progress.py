"""qattn.lm.progress (the perplexity run's progress lines with an ETA) and the run's --help."""

import io
import subprocess
import sys

import pytest

from qattn.lm.progress import Progress, format_seconds


def test_format_seconds():
    assert format_seconds(0) == "0s"
    assert format_seconds(42.4) == "42s"
    assert format_seconds(312) == "5m12s"
    assert format_seconds(3725) == "1h02m"
    assert format_seconds(-3) == "0s"


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_progress_reports_eta_at_the_average_pace():
    clock, out = FakeClock(), io.StringIO()
    p = Progress("evaluation", 4, stream=out, interval=10.0, clock=clock)
    assert p.eta() is None
    clock.t += 30
    p.step(what="dense f32")  # the first step always prints
    assert out.getvalue().splitlines() == [
        "evaluation: 1/4 (25%), 30s elapsed, ETA 1m30s (dense f32)"]
    clock.t += 5
    p.step()  # 5 s after the last line: quiet
    assert len(out.getvalue().splitlines()) == 1
    assert p.eta() == pytest.approx(35.0)  # 17.5 s a step, 2 left
    clock.t += 25
    p.step()
    assert out.getvalue().splitlines()[-1] == "evaluation: 3/4 (75%), 1m00s elapsed, ETA 20s"
    clock.t += 1
    p.step()  # the last step always prints
    assert out.getvalue().splitlines()[-1] == "evaluation: 4/4 (100%), 1m01s elapsed, done"


def test_progress_refuses_a_negative_total():
    with pytest.raises(ValueError, match="total must be >= 0"):
        Progress("x", -1)


def test_perplexity_help_shows_defaults():
    pytest.importorskip("regex")
    proc = subprocess.run([sys.executable, "-m", "qattn.lm.perplexity", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # argparse wraps to the terminal width
    for default in ("(default: smollm2)", "tokens per window (default: 1024)",
                    "(default: 12)", "(default: kmeans,score)", "(default: results.json)"):
        assert default in text
    assert "--out OUT output directory (default" not in text  # required: no default to show
    assert "ETA" in text
