"""How many examples a Hypothesis test tries. A test names its count for the ``ci`` profile (what CI runs);
under ``dev``, the default while coding, it tries a quarter of that. The profiles are registered in
``conftest.py``; ``HYPOTHESIS_PROFILE=ci python -m pytest`` runs the full counts."""

from __future__ import annotations

from hypothesis import settings


def examples(ci: int) -> int:
    """``ci`` under the ci profile (max_examples 100), scaled by the loaded profile's max_examples / 100."""
    return max(5, ci * settings.default.max_examples // 100)
