"""RewardBench 2's downstream Table (rlexp.analysis.suite_table): Pearson r per task and RB2 column."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from rlexp.analysis.study_table import StudyContext, StudyTable
from rlexp.analysis.suite_table import AVERAGE, suite_correlations, suite_section

RMS = [f"rm{i}" for i in range(5)]
GSM8K = [0.10, 0.02, 0.05, 0.12, 0.07]
MATH = [0.01, 0.03, None, 0.04, 0.02]  # rm2 has no math gain


def _study(rb2_overall: list[float]) -> StudyTable:
    groups = {rm: {"n": 4, "agreement": None,
                   "groups": {t: {"gain": g, "prompts": 10, "gain_ci": [None, None]}
                              for t, g in (("gsm8k", GSM8K[i]), ("math", MATH[i])) if g is not None}}
              for i, rm in enumerate(RMS)}
    frame = pd.DataFrame({"rb2/overall": rb2_overall, "rb2/Math": [0.3, 0.5, 0.4, 0.6, 0.2],
                          "label": RMS}, index=RMS)
    return StudyTable(frame, StudyContext(bon_groups={"bon/rb2_suite": groups}))


def test_each_r_is_over_the_rms_with_both_values() -> None:
    """An RM without an RB2 evaluation (a correlate over RMs picked by hand) drops out of its pairs only,
    as in the main correlation table, instead of failing the whole report."""
    overall = [0.6, math.nan, 0.7, 0.8, 0.5]
    corr = suite_correlations(_study(overall), "bon/rb2_suite")
    assert list(corr.index) == ["gsm8k", "math", AVERAGE]
    keep = [0, 2, 3, 4]
    assert corr.at["gsm8k", "rb2/overall"] == pytest.approx(stats.pearsonr([overall[i] for i in keep],
                                                                          [GSM8K[i] for i in keep]).statistic)
    both = [0, 3, 4]  # rm1 has no RB2 score, rm2 no math gain
    assert corr.at["math", "rb2/overall"] == pytest.approx(stats.pearsonr([overall[i] for i in both],
                                                                         [MATH[i] for i in both]).statistic)
    # Every RM has rb2/Math; the average needs every task's gain (rm2 has none).
    avg = [(GSM8K[i] + MATH[i]) / 2 for i in (0, 1, 3, 4)]
    assert corr.at[AVERAGE, "rb2/Math"] == pytest.approx(stats.pearsonr([0.3, 0.5, 0.6, 0.2], avg).statistic)
    lines = suite_section(_study(overall))
    assert "#### bon/rb2_suite (5 RMs)" in lines and any("RMs with both values" in line for line in lines)


def test_fewer_than_three_rms_with_both_values_is_na() -> None:
    corr = suite_correlations(_study([0.6, math.nan, math.nan, math.nan, 0.5]), "bon/rb2_suite")
    assert corr["rb2/overall"].isna().all() and corr["rb2/Math"].notna().all()
