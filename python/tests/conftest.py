"""Shared test setup: the repository root (test data), and a fallback way to find attn-opt.

Tests locate attn-opt the way users do (``$ATTN_OPT``, then PATH). When neither is set and the
package is installed out of the source tree (so its own checkout fallback cannot apply), point
ATTN_OPT at this checkout's build/bin/attn-opt if it was built.
"""

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.mlir"))

if not os.environ.get("ATTN_OPT") and not shutil.which("attn-opt"):
    _built = REPO_ROOT / "build" / "bin" / "attn-opt"
    if _built.is_file():
        os.environ["ATTN_OPT"] = str(_built)


@pytest.fixture
def repo_root():
    """The checkout these tests live in, for its test data (examples/, python/examples/, build/).
    The package itself is imported as installed; tests run from a copy without the checkout skip."""
    if not (REPO_ROOT / "examples").is_dir():
        pytest.skip(f"needs the source checkout's examples/ (not found under {REPO_ROOT})")
    return REPO_ROOT


# Hypothesis profiles: "ci" (the default: a fast subset) and "long" (the documented long run,
# docs/InputChecks.md): HYPOTHESIS_PROFILE=long.
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the fuzz tests skip themselves
    pass
else:
    settings.register_profile("ci", max_examples=40, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.function_scoped_fixture])
    settings.register_profile("long", max_examples=20_000, deadline=None,
                              suppress_health_check=list(HealthCheck))
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
