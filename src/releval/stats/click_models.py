"""Click models on compressed counts, in plain numpy: the PBM fit and its intervals.

The PBM says P(click) = theta_k alpha_qd; only products are identified, so theta_1 = 1. For
a given theta each pair's alpha is a one-dimensional maximum (``pbm_alpha``); the profile
likelihood's gradient and Hessian in log theta are sums over pairs (``pbm_pass``), so a fit
is a few Newton steps (``pbm_fit``), each one pass over the counts, to the maximum EM
converges to. See docs/clicks.md, "Models".

Example:
    >>> pair = np.array([0, 0, 1, 1]); pos = np.array([0, 1, 0, 1])
    >>> n = np.array([100, 100, 100, 100]); c = np.array([60, 30, 20, 10])
    >>> np.round(pbm_fit(lambda th: pbm_pass(pair, pos, n, c, th, 2), positions=2).theta, 3)
    array([1. , 0.5])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: z of the two-sided 95% interval
Z95 = 1.959963984540054
_TINY = 1e-300


@dataclass(frozen=True)
class PassStats:
    """One pass over the counts at a given theta: sums over pairs (``pbm_pass``)."""

    loglik: float
    gradient: np.ndarray  # (K,) d loglik / d log theta_k, alpha at its maximum
    hessian: np.ndarray  # (K, K) profile Hessian in log theta
    impressions: np.ndarray  # (K,) impressions per position

    def __add__(self, other: PassStats) -> PassStats:
        return PassStats(
            self.loglik + other.loglik,
            self.gradient + other.gradient,
            self.hessian + other.hessian,
            self.impressions + other.impressions,
        )


@dataclass(frozen=True)
class PbmFit:
    """The PBM's examination per position (position 1 = 1) with its 95% interval."""

    theta: np.ndarray
    low: np.ndarray
    high: np.ndarray
    impressions: np.ndarray
    iterations: int
    loglik: float


def _bincount(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(index, weights=weights, minlength=size)[:size]


def _cell_loglik(n, c, p) -> np.ndarray:
    """c log p + (n - c) log(1 - p) with 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(c > 0, c * np.log(np.maximum(p, _TINY)), 0.0)
        b = np.where(n > c, (n - c) * np.log(np.maximum(1.0 - p, _TINY)), 0.0)
    return a + b


def pbm_alpha(pair, theta_cell, n, c, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's attractiveness maximizing the PBM likelihood for fixed examination.

    Solves sum_k c_k / alpha = sum_k (n_k - c_k) theta_k / (1 - theta_k alpha) on
    [0, 1 / max theta_k]: 0 for a pair without clicks, the bound where the score is still
    positive there, else Newton steps kept inside a shrinking bracket.

    Returns:
        (alpha, upper): alpha per pair and its bound 1 / max theta over the pair's cells.
    """
    n = n.astype(float)
    c = c.astype(float)
    top = np.maximum(np.maximum.reduceat(theta_cell, _starts(pair, pairs)), _TINY)
    upper = 1.0 / top
    clicks = _bincount(pair, c, pairs)
    w = n - c
    with np.errstate(divide="ignore", invalid="ignore"):
        # the score at the bound: -inf where a cell at the top examination has a non-click
        at_top = theta_cell >= top[pair]
        blocked = _bincount(pair, (at_top & (w > 0)).astype(float), pairs) > 0
        rest = _bincount(
            pair, np.where(at_top, 0.0, w * theta_cell / (1 - theta_cell / top[pair])), pairs
        )
        score_at_upper = np.where(blocked, -np.inf, clicks * top - rest)
    alpha = np.where(clicks > 0, upper, 0.0)
    solve = (clicks > 0) & (score_at_upper < 0)
    if solve.any():
        cells = solve[pair]
        index = np.cumsum(solve) - 1
        sub = _alpha_newton(
            index[pair[cells]],
            theta_cell[cells],
            w[cells],
            clicks[solve],
            _bincount(pair, n * theta_cell, pairs)[solve],
            upper[solve],
        )
        alpha[solve] = sub
    return alpha, upper


def _alpha_newton(pair, theta_cell, w, clicks, exam, upper) -> np.ndarray:
    """The root in (0, upper) of the score f(alpha) = clicks / alpha - sum w theta / (1 - theta
    alpha), which falls from +inf to -inf there (:func:`_rtsafe`)."""

    def score(cell_pair, cells, a, active):
        theta, weight = cells
        k = clicks[active]
        q = np.maximum(1.0 - theta * a[cell_pair], _TINY)
        t = weight * theta / q
        m = len(active)
        return k / a - _bincount(cell_pair, t, m), -k / a**2 - _bincount(cell_pair, t * theta / q, m)

    start = np.clip(clicks / np.maximum(exam, _TINY), 0.0, 0.5 * upper)
    return _rtsafe(pair, (theta_cell, w), score, start, np.zeros(len(clicks)), upper.copy(),
                   1e-11 * clicks / upper)


def _rtsafe(pair, cells, value_slope, start, good, bad, tol) -> np.ndarray:
    """Per pair, a root of g between its ``good`` end (g > 0) and its ``bad`` end (g < 0):
    Newton steps kept inside the bracket, a bisection where a step would leave it or would
    not halve the step before it (Numerical Recipes' rtsafe). A pair leaves the loop once
    |g| <= its ``tol`` or its bracket is under 1e-15.

    ``value_slope(cell_pair, cells, x, active)`` gives g and g' of the ``active`` pairs at
    ``x`` from their cells (``cell_pair`` indexes ``x``; ``cells``: per-cell arrays)."""
    x, good, bad = start.astype(float), good.astype(float), bad.astype(float)
    last = np.abs(bad - good)
    active = np.arange(len(x))
    cell_pair = pair
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(200):
            a = x[active]
            g, slope = value_slope(cell_pair, cells, a, active)
            up = g > 0
            g_end, b_end = np.where(up, a, good[active]), np.where(up, bad[active], a)
            low, high = np.minimum(g_end, b_end), np.maximum(g_end, b_end)
            step = g / slope
            newton = ((a - step > low) & (a - step < high)
                      & (2 * np.abs(g) <= np.abs(last[active] * slope)))
            going = (np.abs(g) > tol[active]) & (high - low > 1e-15 * np.maximum(high, 1.0))
            x[active] = np.where(going, np.where(newton, a - step, 0.5 * (low + high)), a)
            good[active], bad[active] = g_end, b_end
            last[active] = np.where(newton, np.abs(step), 0.5 * (high - low))
            if not going.all():
                if not going.any():
                    break
                keep = going[cell_pair]
                active = active[going]
                cell_pair = (np.cumsum(going) - 1)[cell_pair[keep]]
                cells = tuple(v[keep] for v in cells)
    return x


def _starts(pair: np.ndarray, pairs: int) -> np.ndarray:
    """First cell of each pair; cells are sorted by pair and every pair has a cell."""
    return np.searchsorted(pair, np.arange(pairs))


def pbm_pass(pair, position, n, c, theta, positions: int) -> PassStats:
    """Log-likelihood, gradient and Hessian in log theta of the profile likelihood.

    Args:
        pair: 0-based pair index per cell, sorted, every index from 0 to max present.
        position: 0-based position per cell (``positions`` of them).
        n: impressions per cell; c: clicks per cell (c <= n).
        theta: examination per position.
        positions: K.

    With u = c - (n - c) p / (1 - p) and h = -(n - c) p / (1 - p)^2 per cell, both log theta
    and log alpha have gradient u and second derivatives h. For an interior alpha the profile
    Hessian is diag(sum h) - sum over pairs of v v' / sum_k h (v: the pair's h by position).
    A pair at its bound alpha = 1 / theta_m (m: its cell of highest examination) depends on
    log theta_k - log theta_m: its cells' u and h also count, negated, at position m.
    """
    pairs = int(pair[-1]) + 1 if len(pair) else 0
    k = positions
    if pairs == 0:
        return PassStats(0.0, np.zeros(k), np.zeros((k, k)), np.zeros(k))
    theta = np.asarray(theta, dtype=float)
    theta_cell = theta[position]
    alpha, upper = pbm_alpha(pair, theta_cell, n, c, pairs)
    p = theta_cell * alpha[pair]
    n = n.astype(float)
    c = c.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        odds = np.where(n > c, p / np.maximum(1.0 - p, _TINY), 0.0)
        h = np.where(n > c, -(n - c) * p / np.maximum(1.0 - p, _TINY) ** 2, 0.0)
    u = c - (n - c) * odds
    gradient = _bincount(position, u, k)
    hessian = np.diag(_bincount(position, h, k))
    h_pair = _bincount(pair, h, pairs)
    interior = (alpha > 0) & (alpha < upper) & (h_pair < 0)
    keep = interior[pair]
    if keep.any():
        rows = (np.cumsum(interior) - 1)[pair[keep]]
        v = _bincount(rows * k + position[keep], h[keep], int(interior.sum()) * k).reshape(-1, k)
        hessian = hessian - (v / h_pair[interior][:, None]).T @ v
    bound = (alpha > 0) & (alpha >= upper)
    if bound.any():
        cells = bound[pair]
        top = _top_position(pair, position, theta_cell, pairs)
        m = top[pair[cells]]
        gradient = gradient - _bincount(m, u[cells], k)
        cross = _bincount(position[cells] * k + m, h[cells], k * k).reshape(k, k)
        hessian = hessian - cross - cross.T + np.diag(_bincount(m, h[cells], k))
    loglik = float(_cell_loglik(n, c, p).sum())
    return PassStats(loglik, gradient, hessian, _bincount(position, n, k))


def _top_position(pair, position, theta_cell, pairs: int) -> np.ndarray:
    """Each pair's position of highest examination (the first such cell)."""
    top = np.maximum.reduceat(theta_cell, _starts(pair, pairs))
    first = np.flatnonzero(theta_cell >= top[pair])
    first = first[np.r_[True, pair[first][1:] != pair[first][:-1]]]
    out = np.zeros(pairs, dtype=np.int64)
    out[pair[first]] = position[first]
    return out


def pbm_fit(
    pass_at: Callable[[np.ndarray], PassStats],
    *,
    positions: int,
    theta0: np.ndarray | None = None,
    tol: float = 1e-7,
    max_passes: int = 60,
) -> PbmFit:
    """Newton steps on log theta (theta_1 = 1 fixed), each step one call of ``pass_at``,
    until a step is under ``tol`` or, after a full step, the next one is predicted to be
    (Newton's quadratic convergence: ``s_next ~ s**3 / s_previous**2``); that last step is
    taken without a call of its own, and theta is then within about ``tol`` of the maximum.

    A step that lowers the likelihood is halved (at most 8 times; then the fit stops where it
    is, as it does when a step gains nothing). Positions that no pair links to another
    (no pair shown both there and elsewhere) carry no information: their theta is NaN.

    Returns:
        the fit; ``low``/``high`` from the inverse profile information, exp(phi +- 1.96 se).
    """
    phi = np.log(np.clip(theta0, 1e-6, None)) if theta0 is not None else np.zeros(positions)
    phi[0] = 0.0
    stats = pass_at(np.exp(phi))
    passes = 1
    free = np.zeros(positions, dtype=bool)
    full: tuple[float, tuple[int, ...]] | None = None  # the last full step's size and free set
    while passes < max_passes:
        info = -stats.hessian
        free = np.diag(info) > 1e-9 * max(float(np.max(np.diag(info), initial=0.0)), 1.0)
        free[0] = False
        idx = np.nonzero(free)[0]
        if len(idx) == 0:
            break
        sub = info[np.ix_(idx, idx)]
        step = np.linalg.lstsq(sub + 1e-12 * np.eye(len(idx)), stats.gradient[idx], rcond=None)[0]
        size = float(np.max(np.abs(step)))
        step = np.clip(step, -1.0, 1.0)
        converging = (full is not None and full[1] == tuple(idx) and size < full[0] / 2
                      and size**3 / full[0] ** 2 < tol)
        if size < tol or converging:  # converged: the last step needs no pass of its own
            phi[idx] += step
            break
        improved = halved = False
        for _ in range(8):
            trial = phi.copy()
            trial[idx] += step
            new = pass_at(np.exp(trial))
            passes += 1
            if new.loglik >= stats.loglik or passes >= max_passes:
                improved = new.loglik >= stats.loglik
                break
            step, halved = step / 2, True
        if not improved:  # no step uphill (a maximum on alpha's bound): stay
            break
        full = (size, tuple(idx)) if size <= 1.0 and not halved else None
        gain = new.loglik - stats.loglik
        phi, stats = trial, new
        if gain <= 1e-12 * max(abs(stats.loglik), 1.0):
            break
    theta = np.exp(phi)
    info = -stats.hessian
    idx = np.nonzero(free)[0]
    se = np.full(positions, np.nan)
    if len(idx):
        cov = np.linalg.pinv(info[np.ix_(idx, idx)])
        se[idx] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    se[0] = 0.0
    linked = free.copy()
    linked[0] = True
    theta = np.where(linked, theta, np.nan)
    return PbmFit(
        theta=theta,
        low=theta * np.exp(-Z95 * se),
        high=theta * np.exp(Z95 * se),
        impressions=stats.impressions,
        iterations=passes,
        loglik=stats.loglik,
    )


def pbm_alpha_interval(pair, theta_cell, n, c, alpha, upper, z: float = Z95):
    """Likelihood-ratio interval of each pair's alpha for a fixed theta (loglik drop z^2/2).

    The pair's log-likelihood is concave in alpha, so each end is the one root of
    loglik(a) = loglik(alpha) - z^2 / 2 on its side of alpha (:func:`_rtsafe`), or the bound
    (0 or ``upper``) where the drop there is smaller."""
    pairs = len(alpha)
    n = n.astype(float)
    c = c.astype(float)
    w = n - c
    clicks = _bincount(pair, c, pairs)

    def loglik(a):
        return _bincount(pair, _cell_loglik(n, c, theta_cell * a[pair]), pairs)

    target = loglik(alpha) - z * z / 2
    # 1 / the square root of the information at alpha: a first guess of each end's distance
    q = np.maximum(1.0 - theta_cell * alpha[pair], _TINY)
    with np.errstate(divide="ignore", invalid="ignore"):
        info = (np.where(clicks > 0, clicks / np.maximum(alpha, _TINY) ** 2, 0.0)
                + _bincount(pair, np.where(w > 0, w * theta_cell**2 / q**2, 0.0), pairs))
        spread = z / np.sqrt(np.maximum(info, _TINY))

    def drop(cell_pair, cells, a, active):
        theta, cn, cc = cells
        p = theta * a[cell_pair]
        m = len(active)
        k = clicks[active]
        with np.errstate(divide="ignore", invalid="ignore"):
            score = (np.where(k > 0, k / a, 0.0)
                     - _bincount(cell_pair, np.where(cn > cc, (cn - cc) * theta
                                                     / np.maximum(1.0 - p, _TINY), 0.0), m))
        return _bincount(cell_pair, _cell_loglik(cn, cc, p), m) - target[active], score

    def end(side, bound):
        out = np.array(bound, dtype=float)
        solve = loglik(out) < target
        if solve.any():
            cells = solve[pair]
            index = (np.cumsum(solve) - 1)[pair[cells]]
            inside = np.clip(alpha + side * spread, np.minimum(alpha, bound),
                             np.maximum(alpha, bound))[solve]
            tol = 1e-12 * np.maximum(np.abs(target[solve]), 1.0)
            got = _rtsafe(index, (theta_cell[cells], n[cells], c[cells]),
                          lambda cp, cl, a, act: drop(cp, cl, a, np.flatnonzero(solve)[act]),
                          inside, alpha[solve], bound[solve], tol)
            out[solve] = got
        return out

    return end(-1.0, np.zeros(pairs)), end(1.0, upper.copy())


def wilson(successes, trials, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion; (nan, nan) where ``trials`` is 0.

    Example:
        >>> low, high = wilson(np.array([5]), np.array([10]))
        >>> round(float(low[0]), 4), round(float(high[0]), 4)
        (0.2366, 0.7634)
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return np.where(n > 0, centre - half, np.nan), np.where(n > 0, centre + half, np.nan)
