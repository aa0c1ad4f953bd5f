"""qattn.lm.perplexity.load: the result-file loader the charts use."""

import json

import pytest

from qattn.lm.perplexity import load


def test_load_round_trip_and_rejects_other_files(tmp_path):
    good = {"model": "m", "results": [{"scheme": "dense f32", "ppl": 12.0, "delta_pct": 0.0}]}
    p = tmp_path / "r.json"
    p.write_text(json.dumps(good))
    assert load(p) == good
    for bad in ([1, 2], {"results": [{"scheme": "x"}]}, {"model": "m"}):
        p.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match="not a qattn.lm.perplexity result file"):
            load(p)
