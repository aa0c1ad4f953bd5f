"""The suite tests the installed package when asked to (scripts/test.sh sets
QATTN_EXPECT_INSTALLED=1 after ``pip install ./python``): ``import qattn`` must then resolve to
site-packages, not to the source tree through a path hack."""

import os
from pathlib import Path

import pytest

import qattn
import qattn.lm.progress

SOURCE = Path(__file__).resolve().parents[1] / "qattn"


@pytest.mark.skipif(os.environ.get("QATTN_EXPECT_INSTALLED") != "1",
                    reason="QATTN_EXPECT_INSTALLED=1 not set")
def test_qattn_is_imported_from_the_installation():
    for module in (qattn, qattn.lm.progress):
        path = Path(module.__file__).resolve()
        assert SOURCE not in path.parents, f"{module.__name__} imported from the source tree: {path}"
        assert "site-packages" in path.parts or "dist-packages" in path.parts, path
