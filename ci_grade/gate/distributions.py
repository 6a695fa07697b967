"""Normal, Student t and binomial distributions, written with the standard library only.

The t distribution goes through the regularized incomplete beta function (a continued fraction), its
quantile through a bracketed Newton iteration on the cdf; both keep about 13 significant digits for any
df >= 1 (checked from 1 to 10^6) and probabilities down to 1e-300. The binomial tail is exact for p = 1/2.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_STANDARD_NORMAL = NormalDist()
_EPS = 1e-15
_MAX_TERMS = 10_000


def normal_cdf(x: float) -> float:
    """P(Z <= x) for a standard normal Z, accurate in both tails."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def normal_ppf(p: float) -> float:
    """The x with P(Z <= x) = p, for 0 < p < 1."""
    _check_probability(p)
    return _STANDARD_NORMAL.inv_cdf(p)


def t_cdf(x: float, df: float) -> float:
    """P(T <= x) for Student's t with df >= 1 degrees of freedom."""
    _check_df(df)
    if math.isnan(x):
        raise ValueError("x must be a number")
    if x == 0.0:
        return 0.5
    tail, central = _t_halves(abs(x), df)
    return tail if x < 0 else 0.5 + central


def t_ppf(p: float, df: float) -> float:
    """The x with P(T <= x) = p for Student's t, for 0 < p < 1 and df >= 1."""
    _check_probability(p)
    _check_df(df)
    if p == 0.5:
        return 0.0
    upper = _t_upper_quantile(min(p, 1.0 - p), df)
    return upper if p > 0.5 else -upper


def binomial_sf(k: int, n: int, p: float = 0.5) -> float:
    """P(X >= k) for X ~ Binomial(n, p); exact (one rounding) for p = 1/2, log-gamma summation otherwise."""
    if n < 0:
        raise ValueError("n must be >= 0")
    if not 0.0 <= p <= 1.0:
        raise ValueError("p must lie in [0, 1]")
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p == 0.5:
        total, term = 0, math.comb(n, k)
        for i in range(k, n + 1):
            total += term
            term = term * (n - i) // (i + 1)
        return total / (1 << n)
    if p in (0.0, 1.0):
        return p
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n = math.lgamma(n + 1)
    logs = [log_n - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q for i in range(k, n + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(x - top) for x in logs))


def _check_probability(p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must lie strictly between 0 and 1, got {p!r}")


def _check_df(df: float) -> None:
    if not 1.0 <= df < math.inf:
        raise ValueError(f"degrees of freedom must be finite and >= 1, got {df!r}")


def _t_halves(t: float, df: float) -> tuple[float, float]:
    """(P(T > t), P(0 < T <= t)) for t > 0, each computed without cancellation where it is small.

    Both are x^a sqrt(y) / (2 B(a, 1/2)) times a continued fraction, with a = df/2, x = df/(df+t^2)
    and y = 1 - x; the fraction is taken on the side of the mean where it converges quickly.
    """
    a = df / 2.0
    square = t * t
    if square == 0.0:
        return 0.5, 0.0
    if square < math.inf:
        x, y = df / (df + square), square / (df + square)
        log_x, log_y = _log_of(x, y), _log_of(y, x)
    else:  # t beyond 1e154: x = df / t^2 to double precision
        log_x, log_y = math.log(df) - 2.0 * math.log(t), 0.0
        x, y = math.exp(log_x), 1.0
    front = 0.5 * math.exp(a * log_x + 0.5 * log_y - _log_beta(a, 0.5))
    if x < (a + 1.0) / (a + 2.5):
        tail = front * _beta_fraction(a, 0.5, x, y)
        return tail, 0.5 - tail
    central = front * _beta_fraction(0.5, a, y, x)
    return 0.5 - central, central


def _beta_fraction(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) B(a, b) / (x^a y^b), y = 1 - x, by the even continued fraction; needs x < (a+1)/(a+b+2).

    The partial denominators use lambda = ay - bx instead of 1 - (a+b)x/(a+1), so nothing cancels
    when x is close to 1 (Didonato & Morris, ACM TOMS 18(3), 1992, algorithm 708).
    """
    c = 1.0 + a * y - b * x
    # Convergents A/B by the forward recurrence, renormalised each step.
    a_prev, b_prev, a_cur, b_cur = 0.0, 1.0, 1.0, c / (1.0 + 1.0 / a)
    ratio = 1.0 / b_cur
    for n in range(1, _MAX_TERMS):
        w = n * (b - n) * x
        alpha = (a + n - 1) * (a + b + n - 1) * w * x / (a + 2 * n - 1) ** 2
        beta = n + w / (a + 2 * n - 1) + (a + n) / (a + 2 * n + 1) * (c + n * (1.0 + y))
        a_prev, a_cur = a_cur, alpha * a_prev + beta * a_cur
        b_prev, b_cur = b_cur, alpha * b_prev + beta * b_cur
        previous, ratio = ratio, a_cur / b_cur
        if abs(ratio - previous) <= _EPS * ratio:
            return ratio
        a_prev, b_prev, a_cur, b_cur = a_prev / b_cur, b_prev / b_cur, ratio, 1.0
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def _log_of(x: float, complement: float) -> float:
    """log(x) given complement = 1 - x, accurate when x is close to 1."""
    return math.log1p(-complement) if complement < 0.5 else math.log(x)


def _log_beta(a: float, b: float) -> float:
    """log B(a, b); for a large argument lgamma(big + small) - lgamma(big) is formed without cancellation."""
    small, big = sorted((a, b))
    if big < 10.0:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    gamma_ratio = ((big - 0.5) * math.log1p(small / big) + small * math.log(big + small) - small
                   + _stirling_remainder(big + small) - _stirling_remainder(big))
    return math.lgamma(small) - gamma_ratio


def _stirling_remainder(z: float) -> float:
    """lgamma(z) - ((z - 1/2) log z - z + log(2 pi)/2) for z >= 10 (truncation error below 2e-14)."""
    w = 1.0 / (z * z)
    return (1 / 12 - w * (1 / 360 - w * (1 / 1260 - w * (1 / 1680 - w / 1188)))) / z


def _t_log_pdf(x: float, df: float) -> float:
    scaled = abs(x) / math.sqrt(df)
    # log(1 + scaled^2), without overflow for |x| beyond 1e154
    log_kernel = math.log1p(scaled * scaled) if scaled < 1.0 else 2.0 * math.log(scaled) + math.log1p(scaled**-2)
    return -(df + 1.0) / 2.0 * log_kernel - 0.5 * math.log(df) - _log_beta(df / 2.0, 0.5)


def _t_upper_quantile(q: float, df: float) -> float:
    """The t > 0 with P(T > t) = q (0 < q < 1/2), by Newton's method on u = log t inside a bracket.

    Small q are matched through log P(T > t); q near 1/2 through log P(0 < T <= t) against the exact
    1/2 - q, so that quantiles close to zero keep their relative accuracy.
    """
    by_tail = q <= 0.25
    target = math.log(q) if by_tail else math.log(0.5 - q)
    # P(T > t) <= df^(df/2-1) t^-df / B(df/2, 1/2) gives an upper bound, f(t) <= f(0) a lower one;
    # both are widened a little, as the root can sit on them to within rounding.
    high = 0.5 * math.log(df) - (math.log(q) + math.log(df) + _log_beta(df / 2.0, 0.5)) / df + 1e-9
    low = -math.inf if by_tail else target - _t_log_pdf(0.0, df) - 1e-9
    u = min(max(math.log(_cornish_fisher(q, df)), low), high)
    for _ in range(100):
        t = math.exp(u)
        tail, central = _t_halves(t, df)
        value = tail if by_tail else central
        residual = math.log(value) - target
        if (residual > 0.0) == by_tail:
            low = u
        else:
            high = u
        slope = math.exp(_t_log_pdf(t, df) + u - math.log(value))
        following = u - residual / (-slope if by_tail else slope)
        if abs(following - u) <= 1e-13 * max(1.0, abs(u)):
            return math.exp(following)
        # Only a step from below can leave the bracket, and then low is finite: bisect.
        u = following if low < following < high else (low + high) / 2.0
    raise ArithmeticError(f"t quantile did not converge for q={q}, df={df}")


def _cornish_fisher(q: float, df: float) -> float:
    """A starting value for the upper t quantile: the Cornish-Fisher expansion around the normal one."""
    z = -normal_ppf(q)
    z2 = z * z
    terms = (
        (z2 + 1.0) / 4.0,
        ((5.0 * z2 + 16.0) * z2 + 3.0) / 96.0,
        (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / 384.0,
        ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) / 92160.0,
    )
    return z * (1.0 + sum(term / df ** (i + 1) for i, term in enumerate(terms)))
