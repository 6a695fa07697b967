"""The gate's statistics, pinned to the worked examples of the reference and to scipy/statsmodels values.

The literal reference values were computed once with scipy 1.17 and statsmodels 0.15 (the call is named
above each table); neither library is a dependency. Closed forms (Cauchy, t with 2 df, exact binomial
fractions) give further independent checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import pytest

from ci_grade.gate.distributions import binomial_sf, normal_cdf, normal_ppf, t_cdf, t_ppf
from ci_grade.gate.statistics import (
    McNemarResult,
    fisher_drop,
    holm,
    holm_adjusted,
    mcnemar,
    mde,
    paired,
    units_needed,
    wilson,
)

WORKED = [-1, 0, 0, -1, 1, 0, -1, 0, 0, 0]


def approx(expected: object, rel: float = 1e-12, absolute: float = 0.0) -> object:
    """pytest.approx with no absolute slack by default, so that tiny tail probabilities are really compared."""
    return pytest.approx(expected, rel=rel, abs=absolute)

# --- normal -------------------------------------------------------------------------------------------

# scipy.stats.norm.cdf(x)
NORMAL_CDF = [
    (-37.0, 5.7255712225239266e-300),
    (-10.0, 7.61985302416047e-24),
    (-5.0, 2.866515718791933e-07),
    (-1.959963984540054, 0.025),
    (0.0, 0.5),
    (1.2, 0.8849303297782918),
    (8.0, 0.9999999999999993),
]

# scipy.stats.norm.ppf(p)
NORMAL_PPF = [
    (1e-12, -7.034483825301131),
    (0.025, -1.9599639845400545),
    (0.2, -0.8416212335729142),
    (0.8, 0.8416212335729143),
    (0.95, 1.6448536269514722),
    (0.975, 1.959963984540054),
    (1 - 1e-12, 7.0344869100478356),
]


@pytest.mark.parametrize(("x", "expected"), NORMAL_CDF)
def test_normal_cdf_matches_scipy_in_both_tails(x: float, expected: float) -> None:
    assert normal_cdf(x) == approx(expected)


@pytest.mark.parametrize(("p", "expected"), NORMAL_PPF)
def test_normal_ppf_matches_scipy(p: float, expected: float) -> None:
    assert normal_ppf(p) == approx(expected, rel=1e-13)


def test_normal_ppf_of_one_half_is_zero_and_rejects_the_ends() -> None:
    assert normal_ppf(0.5) == 0.0
    for p in (0.0, 1.0, -0.1, math.nan):
        with pytest.raises(ValueError):
            normal_ppf(p)


# --- Student t ------------------------------------------------------------------------------------------

# scipy.stats.t.cdf(x, df)
T_CDF = [
    (-1e6, 1, 3.1830988618368455e-07),
    (-40.0, 1, 0.007956089912025812),
    (-4.0, 1, 0.07797913037736932),
    (-1.7, 1, 0.1692530273303327),
    (-0.3, 1, 0.4072264209222577),
    (2.0, 1, 0.8524163823495667),
    (-1e6, 2, 4.999999999992501e-13),
    (-40.0, 2, 0.0003122073360923703),
    (-4.0, 2, 0.028595479208968315),
    (-1.7, 2, 0.11561671310078561),
    (-0.3, 2, 0.3962428304200888),
    (2.0, 2, 0.908248290463863),
    (-1e6, 2.5, 7.193397190814237e-16),
    (-40.0, 2.5, 7.09781714524669e-05),
    (-4.0, 2.5, 0.019506487920659125),
    (-1.7, 2.5, 0.10280610857994191),
    (-0.3, 2.5, 0.39367118574759863),
    (2.0, 2.5, 0.9213042521210171),
    (-1e6, 9, 2.5458970370132834e-51),
    (-40.0, 9, 9.491499224669911e-12),
    (-4.0, 9, 0.0015552141551929272),
    (-1.7, 9, 0.061673831071911926),
    (-0.3, 9, 0.3854953518707624),
    (2.0, 9, 0.9617235881146495),
    (-6.0, 20, 3.6218499652082825e-06),
    (-2.0, 20, 0.02963276772328522),
    (1.5, 20, 0.9253821144153738),
    (-1e6, 30, 1.0364534648043789e-159),
    (-40.0, 30, 6.863022597203209e-28),
    (-4.0, 30, 0.0001909228180418782),
    (-1.7, 30, 0.04973893779425843),
    (-0.3, 30, 0.3831230526421764),
    (2.0, 30, 0.9726874775185085),
    (-4.0, 1e5, 3.1693998778597706e-05),
    (-1.7, 1e5, 0.04456701762433149),
    (-0.3, 1e5, 0.3820888895951688),
    (2.0, 1e5, 0.9772485182712467),
    (-4.0, 1e6, 3.167351700502405e-05),
    (-1.7, 1e6, 0.04456561824517442),
    (-0.3, 1e6, 0.3820886089894971),
    (2.0, 1e6, 0.9772497330743404),
]

# scipy.stats.t.ppf(p, df)
T_PPF = [
    (1e-12, 1, -318309886183.7907),
    (1e-06, 1, -318309.8861827435),
    (0.025, 1, -12.706204736174705),
    (0.2, 1, -1.3763819204711736),
    (0.4, 1, -0.32491969623290634),
    (0.975, 1, 12.706204736174694),
    (1 - 1e-12, 1, 318316927901.77966),
    (1e-12, 2, -707106.7811854869),
    (1e-06, 2, -707.1057205259339),
    (0.025, 2, -4.302652729749464),
    (0.2, 2, -1.060660171779821),
    (0.8, 2, 1.0606601717798214),
    (1 - 1e-12, 2, 707114.602524408),
    (1e-12, 3.5, -3163.0306837980147),
    (0.025, 3.5, -2.9400886379827296),
    (0.4, 3.5, -0.27326545405577973),
    (0.8, 3.5, 0.9567588339323106),
    (1e-12, 9, -51.41491602328223),
    (1e-06, 9, -10.7201604099095),
    (0.2, 9, -0.8834038596855341),
    (0.975, 9, 2.262157162798205),
    (1 - 1e-12, 9, 51.41504279214642),
    (1e-09, 20, -10.275301852168067),
    (0.975, 20, 2.085963447265864),
    (1e-12, 30, -11.397217523311413),
    (1e-06, 30, -5.871117120418882),
    (0.4, 30, -0.2556053649519128),
    (0.975, 30, 2.0422724563012378),
    (1e-12, 1e5, -7.035371742393576),
    (1e-06, 1e5, -4.753704716391288),
    (0.025, 1e5, -1.95998770753461),
    (0.4, 1e5, -0.25334777715718015),
    (0.8, 1e5, 0.8416248279969009),
    (1 - 1e-12, 1e5, 7.035374828293038),
    (1e-12, 1e6, -7.034572608411255),
    (1e-06, 1e6, -4.75345234827968),
    (0.2, 1e6, -0.8416215930139841),
    (0.975, 1e6, 1.959966356814107),
    (1 - 1e-12, 1e6, 7.034575693273216),
]


@pytest.mark.parametrize(("x", "df", "expected"), T_CDF)
def test_t_cdf_matches_scipy(x: float, df: float, expected: float) -> None:
    assert t_cdf(x, df) == approx(expected, rel=1e-12)


@pytest.mark.parametrize(("p", "df", "expected"), T_PPF)
def test_t_ppf_matches_scipy(p: float, df: float, expected: float) -> None:
    assert t_ppf(p, df) == approx(expected, rel=1e-12)


@pytest.mark.parametrize("x", [-1e300, -1e200, -1e12, -7.0, -0.3, -1e-6, 1e-9, 2.0, 1e7])
def test_t_cdf_matches_the_closed_forms_for_one_and_two_df(x: float) -> None:
    # Cauchy: atan2(1, -x) / pi (= 1/2 + atan(x)/pi, without cancellation in the lower tail)
    assert t_cdf(x, 1) == approx(math.atan2(1.0, -x) / math.pi, rel=1e-13)
    # Two df: 1/2 + x / (2 sqrt(2 + x^2)); the lower tail in the equivalent form 1 / (h (h - x))
    h = math.hypot(math.sqrt(2.0), x)
    two = 1.0 / (h * (h - x)) if x < 0 else 0.5 + x / (2.0 * h)
    assert t_cdf(x, 2) == approx(two, rel=1e-13)


def test_t_ppf_far_tail_of_the_cauchy() -> None:
    # Cauchy quantile -cot(pi p) = -1 / tan(pi p)
    for p in (1e-300, 1e-150, 1e-12):
        assert t_ppf(p, 1) == approx(-1.0 / math.tan(math.pi * p), rel=1e-12)


def test_t_ppf_keeps_relative_accuracy_next_to_one_half() -> None:
    # Quantiles within 1e-12 of the median: the Cauchy quantile is tan(pi (p - 1/2)).
    for offset in (2.0**-40, 2.0**-20, 1e-3):
        assert t_ppf(0.5 - offset, 1) == approx(math.tan(-math.pi * offset), rel=1e-12)
        assert t_ppf(0.5 + offset, 1) == approx(math.tan(math.pi * offset), rel=1e-12)
        p = 0.5 - offset  # t with 2 df: (2p - 1) / sqrt(2 p (1 - p))
        assert t_ppf(p, 2) == approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-12)


@pytest.mark.parametrize("df", [1, 2, 7, 30, 1e4, 1e6])
@pytest.mark.parametrize("x", [-1e5, -30.0, -2.5, -0.01, 0.7, 3.0])
def test_t_ppf_inverts_t_cdf(df: float, x: float) -> None:
    p = t_cdf(x, df)
    if p == 0.0:  # the far tail of a near-normal t underflows; nothing to invert
        assert df >= 30 and x <= -30
        return
    assert t_ppf(p, df) == approx(x, rel=1e-10)


@pytest.mark.parametrize("df", [1, 3, 9, 1e5])
def test_t_ppf_is_symmetric_and_monotone(df: float) -> None:
    probabilities = [1e-12, 1e-6, 0.01, 0.125, 0.25, 0.4, 0.5, 0.6, 0.75, 0.875, 0.99, 1 - 1e-6]
    quantiles = [t_ppf(p, df) for p in probabilities]
    assert quantiles == sorted(quantiles) and len(set(quantiles)) == len(quantiles)
    for p in (0.125, 0.25, 0.4375):  # 1 - p is exact for these
        assert t_ppf(p, df) == -t_ppf(1 - p, df)


def test_t_quantiles_approach_the_normal_ones() -> None:
    for p in (0.025, 0.8, 0.975):
        assert t_ppf(p, 1e6) == approx(normal_ppf(p), rel=1e-5)
        assert abs(t_ppf(p, 1e6)) > abs(normal_ppf(p))


def test_t_cdf_limits_and_invalid_arguments() -> None:
    assert t_cdf(0.0, 5) == 0.5
    assert t_cdf(-math.inf, 5) == 0.0
    assert t_cdf(math.inf, 5) == 1.0
    assert t_cdf(-40.0, 1e5) == 0.0  # below the smallest double
    assert t_ppf(0.5, 3) == 0.0
    for df in (0.5, 0.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            t_cdf(1.0, df)
        with pytest.raises(ValueError):
            t_ppf(0.3, df)
    with pytest.raises(ValueError):
        t_cdf(math.nan, 3)
    for p in (0.0, 1.0):
        with pytest.raises(ValueError):
            t_ppf(p, 3)


# --- binomial -----------------------------------------------------------------------------------------

# scipy.stats.binom.sf(k - 1, n, p) = P(X >= k)
BINOMIAL_SF = [
    (9, 11, 0.5, 0.03271484375),
    (6, 11, 0.5, 0.5),
    (1, 1, 0.5, 0.5),
    (2600, 5000, 0.5, 0.002441824868758747),
    (2000, 4000, 0.5, 0.5063074370779174),
    (3000, 5000, 0.5, 6.501155002602663e-46),
    (30, 100, 0.3, 0.5376602639846402),
    (150, 1000, 0.1, 4.489442859450041e-07),
    (1, 1000, 0.001, 0.6323045752290359),
]


@pytest.mark.parametrize(("k", "n", "p", "expected"), BINOMIAL_SF)
def test_binomial_sf_matches_scipy(k: int, n: int, p: float, expected: float) -> None:
    assert binomial_sf(k, n, p) == approx(expected, rel=1e-12)


@pytest.mark.parametrize(("k", "n"), [(9, 11), (2600, 5000), (2000, 4000), (3000, 5000), (1, 3001), (4321, 4500)])
def test_binomial_sf_for_one_half_is_the_exact_fraction_rounded_once(k: int, n: int) -> None:
    exact = Fraction(sum(math.comb(n, i) for i in range(k, n + 1)), 2**n)
    assert binomial_sf(k, n) == float(exact)


def test_binomial_sf_closed_forms_and_edges() -> None:
    assert binomial_sf(2501, 5001) == 0.5  # symmetry of Binomial(odd n, 1/2)
    assert binomial_sf(1000, 1000) == 2.0**-1000
    assert binomial_sf(1, 50) == 1 - 2.0**-50
    assert binomial_sf(0, 0) == 1.0
    assert binomial_sf(-3, 10) == 1.0
    assert binomial_sf(11, 10) == 0.0
    assert binomial_sf(3, 10, 0.0) == 0.0
    assert binomial_sf(3, 10, 1.0) == 1.0
    with pytest.raises(ValueError):
        binomial_sf(1, -1)
    with pytest.raises(ValueError):
        binomial_sf(1, 5, 1.5)


# --- McNemar ------------------------------------------------------------------------------------------


def test_mcnemar_worked_example_is_67_over_2048() -> None:
    result = mcnemar(9, 2)
    assert result == McNemarResult(n01=9, n10=2, p_drop=67 / 2048, p_two_sided=134 / 2048)
    assert round(result.p_drop, 4) == 0.0327


def test_mcnemar_direction_ties_and_no_flips() -> None:
    improving = mcnemar(2, 9)
    assert improving.p_drop == 2036 / 2048  # P(X >= 2 | 11, 1/2)
    assert improving.p_two_sided == 134 / 2048
    assert mcnemar(5, 5).p_drop == 638 / 1024
    assert mcnemar(5, 5).p_two_sided == 1.0
    assert mcnemar(0, 0) == McNemarResult(0, 0, 1.0, 1.0)
    assert mcnemar(0, 7).p_drop == 1.0
    assert mcnemar(0, 7).p_two_sided == 2 / 128
    assert mcnemar(7, 0).p_drop == 1 / 128
    with pytest.raises(ValueError):
        mcnemar(-1, 3)


def test_mcnemar_matches_scipy_binomtest_on_larger_counts() -> None:
    # scipy.stats.binomtest(60, 90, 0.5, alternative="greater") and the two-sided binomtest(60, 90, 0.5)
    assert mcnemar(60, 30).p_drop == approx(0.0010301328404815372, rel=1e-12)
    assert mcnemar(60, 30).p_two_sided == approx(0.0020602656809630745, rel=1e-12)
    # scipy.stats.binomtest(1000, 1900, 0.5, alternative="greater") and two-sided
    assert mcnemar(1000, 900).p_drop == approx(0.011554422554450597, rel=1e-12)
    assert mcnemar(1000, 900).p_two_sided == approx(0.023108845108901193, rel=1e-12)


# --- Fisher -------------------------------------------------------------------------------------------

# scipy.stats.fisher_exact([[k_base, n_base - k_base], [k_head, n_head - k_head]], alternative="greater")
FISHER = [
    (10, 10, 5, 10, 0.016253869969040248),
    (5, 5, 0, 5, 0.003968253968253969),
    (3, 10, 7, 10, 0.9884929312173895),
    (0, 3, 0, 3, 1.0),
    (20, 20, 1, 1, 1.0),
    (1, 1, 0, 1, 0.5),
    (45, 50, 30, 50, 0.0004834216015314489),
    (7, 8, 2, 4, 0.23636363636363636),
]


@pytest.mark.parametrize(("k_base", "n_base", "k_head", "n_head", "expected"), FISHER)
def test_fisher_drop_matches_scipy(k_base: int, n_base: int, k_head: int, n_head: int, expected: float) -> None:
    assert fisher_drop(k_base, n_base, k_head, n_head) == approx(expected, rel=1e-13)


def test_fisher_drop_exact_values_and_invalid_counts() -> None:
    assert fisher_drop(5, 5, 0, 5) == 1 / 252  # one table of C(10, 5)
    assert fisher_drop(1, 1, 0, 1) == 0.5  # one run per side can never be significant
    for args in ((6, 5, 0, 5), (1, 5, -1, 5), (0, 0, 1, 0)):
        with pytest.raises(ValueError):
            fisher_drop(*args)


# --- Wilson -------------------------------------------------------------------------------------------

# statsmodels.stats.proportion.proportion_confint(k, n, alpha=1 - confidence, method="wilson")
WILSON = [
    (7, 10, 0.95, 0.39677814746114537, 0.8922087325936989),
    (0, 10, 0.95, 0.0, 0.27753279986288926),
    (10, 10, 0.95, 0.7224672001371106, 1.0),
    (1, 3, 0.95, 0.06149194472039626, 0.7923403991979523),
    (50, 200, 0.95, 0.19508168006817495, 0.31434098312045833),
    (3, 4, 0.9, 0.35616800859850634, 0.9420926788001414),
    (999, 1000, 0.99, 0.9915394337800183, 0.9998825836463816),
]


@pytest.mark.parametrize(("k", "n", "confidence", "low", "high"), WILSON)
def test_wilson_matches_statsmodels(k: int, n: int, confidence: float, low: float, high: float) -> None:
    assert wilson(k, n, confidence) == approx((low, high), rel=1e-12)


def test_wilson_worked_example_and_edges() -> None:
    low, high = wilson(7, 10)
    assert (round(low, 3), round(high, 3)) == (0.397, 0.892)
    assert wilson(0, 0) == (0.0, 1.0)
    # The bounds for 0 of n and n of n are exactly 0 and 1 (the formula alone can miss by one rounding).
    assert wilson(0, 29, 0.8)[0] == 0.0
    assert wilson(12, 12, 0.8)[1] == 1.0
    for args in ((4, 3, 0.95), (-1, 3, 0.95), (1, 3, 1.0), (1, 3, 0.0)):
        with pytest.raises(ValueError):
            wilson(*args)


# --- Holm ---------------------------------------------------------------------------------------------

# statsmodels.stats.multitest.multipletests(p, alpha=0.05, method="holm") -> (reject, pvals_corrected)
HOLM = [
    ([0.01, 0.04, 0.03, 0.005], [True, False, False, True], [0.03, 0.06, 0.06, 0.02]),
    ([0.02, 0.02, 0.02], [False, False, False], [0.06, 0.06, 0.06]),
    ([0.5, 0.001, 0.2, 0.0125, 0.04], [False, True, False, True, False], [0.5, 0.005, 0.4, 0.05, 0.12]),
    ([0.3, 0.6], [False, False], [0.6, 0.6]),
]


@pytest.mark.parametrize(("p_values", "rejected", "adjusted"), HOLM)
def test_holm_matches_statsmodels(p_values: list[float], rejected: list[bool], adjusted: list[float]) -> None:
    assert holm(p_values, 0.05) == rejected
    assert holm_adjusted(p_values) == approx(adjusted, rel=1e-12)
    assert holm(p_values, 0.05) == [a <= 0.05 for a in holm_adjusted(p_values)]


def test_holm_stops_at_the_first_hypothesis_it_keeps() -> None:
    # 0.04 <= 0.05 on its own, but 0.03 > 0.05/2 stops the procedure before it is reached.
    assert holm([0.001, 0.03, 0.04], 0.05) == [True, False, False]
    # Boundaries are inclusive: 0.025 <= 0.05/2 and 0.05 <= 0.05/1.
    assert holm([0.05, 0.025], 0.05) == [True, True]
    assert holm([0.02, 0.02], 0.05) == [True, True]  # ties share the outcome
    assert holm([], 0.05) == []
    assert holm_adjusted([]) == []


def test_holm_adjusted_is_monotone_and_capped() -> None:
    p_values = [0.9, 0.6, 0.01, 0.011]
    adjusted = holm_adjusted(p_values)
    assert adjusted == approx([1.0, 1.0, 0.04, 0.04])
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    assert [adjusted[i] for i in order] == sorted(adjusted)
    with pytest.raises(ValueError):
        holm([0.1], 1.0)
    for bad in ([0.1, 1.5], [math.nan], [-0.01]):
        with pytest.raises(ValueError):
            holm(bad, 0.05)
        with pytest.raises(ValueError):
            holm_adjusted(bad)


# --- paired mean difference ---------------------------------------------------------------------------


def test_paired_worked_example() -> None:
    result = paired(WORKED)
    assert result is not None
    assert (result.n, result.df, result.clustered, result.n_clusters) == (10, 9, False, 10)
    assert result.mean == approx(-0.2, rel=1e-15)
    assert round(result.sd or 0.0, 4) == 0.6325
    assert result.se == approx(0.2, rel=1e-14)
    assert result.t == approx(-1.0, rel=1e-14)
    assert round(result.p_drop, 4) == 0.1717
    assert (round(result.ci_low or 0.0, 3), round(result.ci_high or 0.0, 3)) == (-0.652, 0.252)
    # scipy.stats.ttest_1samp(d, 0, alternative="less").pvalue and
    # scipy.stats.t.interval(0.95, 9, loc=mean(d), scale=sem(d))
    assert result.p_drop == approx(0.1717181980689568, rel=1e-12)
    assert result.ci_low == approx(-0.652431432559641, rel=1e-12)
    assert result.ci_high == approx(0.25243143255964096, rel=1e-12)


D2 = [0.25, -0.5, -0.75, 0.0, -0.125, -1.0, 0.5, -0.25, -0.375, 0.0, -0.625, 0.125]
G2 = ["a", "a", "a", "b", "b", "c", "c", "c", "c", "d", "e", "e"]


def test_paired_matches_scipy_on_fractional_scores_with_alpha_010() -> None:
    result = paired(D2, alpha=0.10)
    assert result is not None
    # numpy.std(ddof=1), scipy.stats.sem, ttest_1samp(alternative="less"), t.interval(0.9, 11, ...)
    assert result.mean == approx(-0.22916666666666666, rel=1e-15)
    assert result.sd == approx(0.4389855730355308, rel=1e-13)
    assert result.se == approx(0.12672421938121292, rel=1e-13)
    assert result.t == approx(-1.80838886035893, rel=1e-13)
    assert result.p_drop == approx(0.04896724599738666, rel=1e-12)
    assert result.ci_low == approx(-0.4567487684155077, rel=1e-12)
    assert result.ci_high == approx(-0.001584564917825687, rel=1e-10)


def test_paired_clustered_matches_statsmodels() -> None:
    result = paired(D2, alpha=0.10, clusters=G2)
    assert result is not None
    assert (result.clustered, result.n_clusters, result.df) == (True, 5, 4)
    # statsmodels OLS(d, ones).fit(cov_type="cluster", cov_kwds={"groups": ...}, use_t=True):
    # bse, tvalues, conf_int(0.1) and pvalues / 2 (equal to the reference's SE_cl with C - 1 df)
    assert result.se == approx(0.05157448186636441, rel=1e-13)
    assert result.t == approx(-4.443411903981211, rel=1e-13)
    assert result.p_drop == approx(0.005652049779472165, rel=1e-12)
    assert result.ci_low == approx(-0.3391155600899377, rel=1e-12)
    assert result.ci_high == approx(-0.11921777324339569, rel=1e-12)
    plain = paired(D2, alpha=0.10)
    assert plain is not None and plain.se is not None and result.se < plain.se  # clusters here are heterogeneous


def test_paired_clustered_se_by_hand_when_clusters_are_homogeneous() -> None:
    # Two clusters of two: deviations from the mean 0.5 sum to +1 and -1 per cluster.
    result = paired([1.0, 1.0, 0.0, 0.0], clusters=["x", "x", "y", "y"])
    assert result is not None and result.clustered
    # SE_cl = (1/4) sqrt(2/1 * (1^2 + 1^2)) = 1/2 on 1 df, versus the plain sqrt(1/3)/2.
    assert result.se == 0.5
    assert result.df == 1
    assert result.t == 1.0
    assert result.p_drop == approx(0.75, rel=1e-14)  # Cauchy: 1/2 + atan(1)/pi
    assert result.ci_high == approx(0.5 + 12.706204736174705 * 0.5, rel=1e-12)  # scipy t.ppf(0.975, 1)


def test_paired_falls_back_to_the_plain_standard_error() -> None:
    plain = paired(WORKED)
    one_per_cluster = paired(WORKED, clusters=[str(i) for i in range(10)])
    single_cluster = paired(WORKED, clusters=["all"] * 10)
    assert plain is not None and one_per_cluster is not None and single_cluster is not None
    assert one_per_cluster == plain
    assert single_cluster.se == plain.se and single_cluster.df == 9
    assert not single_cluster.clustered and single_cluster.n_clusters == 1


def test_paired_degenerate_zero_clustered_se_keeps_the_plain_one() -> None:
    # Both clusters have mean -0.5, the overall mean: the clustered SE is 0 although the units differ.
    result = paired([-1.0, 0.0, -1.0, 0.0], clusters=["a", "a", "b", "b"])
    assert result is not None
    assert (result.clustered, result.n_clusters, result.df) == (False, 2, 3)
    # scipy.stats.ttest_1samp([-1, 0, -1, 0], 0, alternative="less") and scipy.stats.sem
    assert result.se == approx(0.28867513459481287, rel=1e-14)
    assert result.t == approx(-1.7320508075688774, rel=1e-14)
    assert result.p_drop == approx(0.09084505690810468, rel=1e-12)
    assert result.ci_low == approx(-1.4186931155185394, rel=1e-12)


def test_paired_empty_and_single_unit() -> None:
    assert paired([]) is None
    assert paired([], clusters=[]) is None
    single = paired([-0.75], clusters=["only"])
    assert single is not None
    assert (single.n, single.mean, single.p_drop) == (1, -0.75, 1.0)
    assert (single.sd, single.se, single.df, single.t, single.ci_low, single.ci_high) == (None,) * 6
    assert (single.clustered, single.n_clusters) == (False, 1)


@pytest.mark.parametrize(("value", "p_drop", "p_clustered"), [(-0.1, 1 / 128, 1 / 8), (0.0, 1.0, 1.0), (0.25, 1.0, 1.0)])
def test_paired_identical_differences_get_the_sign_test(value: float, p_drop: float, p_clustered: float) -> None:
    # No spread: a t test would claim certainty (p = 0). Every unit dropping is the sign test's
    # evidence: P(all n drop | no change) = 1/2^n, over units (7 tests) or clusters (3).
    result = paired([value] * 7)
    assert result is not None
    assert (result.mean, result.sd, result.se, result.df, result.t) == (value, 0.0, 0.0, 6, None)
    assert result.p_drop == p_drop
    assert (result.ci_low, result.ci_high) == ((0.0, 0.0) if value == 0 else (None, None))
    clustered = paired([value] * 6, clusters=["a", "a", "b", "b", "c", "c"])
    assert clustered is not None
    assert (clustered.clustered, clustered.df, clustered.se, clustered.p_drop) == (True, 2, 0.0, p_clustered)


def test_paired_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        paired([0.0, 1.0], clusters=["a"])
    with pytest.raises(ValueError):
        paired([0.0, math.nan])
    with pytest.raises(ValueError):
        paired([0.0, 1.0], alpha=0.0)


# --- power --------------------------------------------------------------------------------------------


def test_mde_matches_scipy_quantiles() -> None:
    # (scipy.stats.t.ppf(0.95, 9) + t.ppf(0.8, 9)) * 0.2 and (norm.ppf(0.95) + norm.ppf(0.8)) * 0.2
    assert mde(0.2, df=9) == approx(0.5433033584683543, rel=1e-12)
    assert mde(0.2) == approx(0.4972949721048773, rel=1e-13)
    # (t.ppf(0.99, 4) + t.ppf(0.9, 4)) * 0.05
    assert mde(0.05, alpha=0.01, power=0.9, df=4) == approx(0.26400768310190703, rel=1e-12)
    # The reference's rounded z(0.95) = 1.645 and z(0.8) = 0.842.
    assert mde(1.0) == approx(1.645 + 0.842, rel=0.0, absolute=1e-3)
    assert mde(0.0, df=3) == 0.0
    for kwargs in ({"se": -1.0}, {"se": 1.0, "alpha": 0.6}, {"se": 1.0, "power": 0.3}, {"se": 1.0, "power": 1.0}):
        with pytest.raises(ValueError):
            mde(**kwargs)


# Smallest n with (scipy.stats.t.ppf(1 - alpha, n - 1) + t.ppf(power, n - 1)) * sd / sqrt(n) <= delta,
# found by a loop over n with scipy; the normal approximation is given for comparison.
UNITS = [
    (0.5, 0.1, 0.05, 0.8, 157, 154.56393080049412),
    (0.6325, 0.2, 0.05, 0.8, 64, 61.83426654130517),
    (1.0, 0.5, 0.01, 0.9, 55, 52.06775346464376),
    (0.3, 0.05, 0.05, 0.8, 225, 222.57206035271153),
    (1.0, 3.0, 0.05, 0.8, 3, 0.6869508035577518),
]


@pytest.mark.parametrize(("sd", "delta", "alpha", "power", "expected", "normal"), UNITS)
def test_units_needed_matches_a_scipy_search(
    sd: float, delta: float, alpha: float, power: float, expected: int, normal: float
) -> None:
    n = units_needed(sd, delta, alpha, power)
    assert n == expected
    assert n >= normal
    assert mde(sd / math.sqrt(n), alpha, power, df=n - 1) <= delta
    if n > 2:
        assert mde(sd / math.sqrt(n - 1), alpha, power, df=n - 2) > delta


def test_units_needed_edges() -> None:
    assert units_needed(0.0, 0.01) == 2
    assert units_needed(1.0, 1e-4) > 6.18e8  # (1.645 + 0.842)^2 / 1e-8, still quick
    for args in ((1.0, 0.0), (-1.0, 0.1), (1.0, 0.1, 0.0), (1.0, 0.1, 0.05, 0.4)):
        with pytest.raises(ValueError):
            units_needed(*args)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: t_cdf(math.nan, 3), "x must be a number"),
        (lambda: t_cdf(1.0, 0.5), "degrees of freedom must be finite and >= 1, got 0.5"),
        (lambda: t_ppf(1.0, 3), "probability must lie strictly between 0 and 1, got 1.0"),
        (lambda: normal_ppf(-0.1), "probability must lie strictly between 0 and 1, got -0.1"),
        (lambda: binomial_sf(1, -1), "n must be >= 0"),
        (lambda: binomial_sf(1, 5, 1.5), "p must lie in [0, 1]"),
        (lambda: mcnemar(-1, 3), "flip counts must be >= 0"),
        (lambda: mcnemar(3, -1), "flip counts must be >= 0"),
        (lambda: fisher_drop(6, 5, 0, 5), "passes must lie in [0, runs], got 6 of 5"),
        (lambda: fisher_drop(1, 5, -1, 5), "passes must lie in [0, runs], got -1 of 5"),
        (lambda: wilson(4, 3), "passes must lie in [0, runs], got 4 of 3"),
        (lambda: wilson(1, 3, 1.0), "confidence must lie strictly between 0 and 1, got 1.0"),
        (lambda: holm([0.1], 1.0), "alpha must lie strictly between 0 and 1, got 1.0"),
        (lambda: holm([1.5], 0.05), "p-values must lie in [0, 1]"),
        (lambda: holm_adjusted([-0.01]), "p-values must lie in [0, 1]"),
        (lambda: paired([0.0, 1.0], clusters=["a"]), "1 cluster keys for 2 differences"),
        (lambda: paired([0.0, math.inf]), "differences must be finite numbers"),
        (lambda: paired([0.0, 1.0], alpha=0.0), "alpha must lie strictly between 0 and 1, got 0.0"),
        (lambda: mde(-1.0), "the standard error must be >= 0"),
        (lambda: mde(1.0, alpha=0.6), "alpha must lie in (0, 0.5], got 0.6"),
        (lambda: mde(1.0, power=0.3), "power must lie in [0.5, 1), got 0.3"),
        (lambda: units_needed(-1.0, 0.1), "the standard deviation must be >= 0"),
        (lambda: units_needed(1.0, 0.0), "the drop to detect must be > 0"),
        (lambda: units_needed(1.0, 0.1, 0.05, 1.0), "power must lie in [0.5, 1), got 1.0"),
    ],
)
def test_invalid_arguments_say_what_is_wrong(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message
