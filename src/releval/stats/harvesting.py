"""Intervention harvesting (Agarwal et al., WSDM 2019): examination from swapped pairs only.

A (query, doc) shown at positions k and k' gives its click rates x (at k) and y (at k') and a
weight w = n_k n_k' / (n_k + n_k'). Over such pairs R = sum w x / sum w y estimates
theta_k / theta_k' (relevance cancels under the PBM). The log ratios of all position pairs
are combined by weighted least squares with theta_1 = 1; the covariance is the sandwich over
(query, doc) pairs, since one pair shown at three positions enters three ratios.

Example:
    >>> pair, pos = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    >>> s = harvest_sums(pair, pos, np.full(4, 100), np.array([50, 20, 40, 20]), 2)
    >>> round(float(harvest_theta(s).theta[1]), 4)  # (50 * .2 + 50 * .2) / (50 * .5 + 50 * .4)
    0.4444
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from releval.stats.click_models import Z95, PbmFit

#: Position pairs beyond this many get no cross-covariance (their ratios treated as
#: independent): the sandwich's matrices grow with the square of the position pairs.
MAX_CROSS_CELLS = 435  # 30 positions


@dataclass(frozen=True)
class HarvestSums:
    """Sums over (query, doc) pairs; add partitions' sums with ``+``.

    ``cells[k, k']`` (k < k'): sum u, sum v, pairs, sum u^2, sum u v, sum v^2 (u = w x,
    v = w y); ``cells[k, k, 2]``: impressions at k of pairs shown at two positions or more. ``cross``: for position pairs c, d (k < k' in
    row-major order) sum u_c u_d, sum u_c v_d and sum v_c v_d over pairs (empty beyond
    ``MAX_CROSS_CELLS``).
    """

    cells: np.ndarray
    cross: np.ndarray

    def __add__(self, other: HarvestSums) -> HarvestSums:
        return HarvestSums(self.cells + other.cells, self.cross + other.cross)


def empty(positions: int) -> HarvestSums:
    m = _cell_count(positions)
    return HarvestSums(np.zeros((positions, positions, 6)), np.zeros((3, m, m)))


def _cell_count(k: int) -> int:
    cells = k * (k - 1) // 2
    return cells if cells <= MAX_CROSS_CELLS else 0


def _cell_index(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Row-major index of (a, b), a < b, among the k (k - 1) / 2 position pairs."""
    return a * k - a * (a + 1) // 2 + (b - a - 1)


def harvest_sums(pair, position, n, c, positions: int) -> HarvestSums:
    """The sums of one batch of cells (pair index, 0-based position, impressions, clicks)."""
    k = positions
    out = empty(k)
    pair, position = np.asarray(pair), np.asarray(position)
    n, rate = np.asarray(n, dtype=float), np.asarray(c, dtype=float) / np.maximum(n, 1)
    first = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])  # cells are sorted by pair
    size = np.diff(np.r_[first, len(pair)])
    multi = np.repeat(size > 1, size)
    out.cells[:, :, 2] += _grid(position[multi], position[multi], n[multi], k)
    ia, ib = [], []
    for i in range(int(size.max(initial=0))):  # every two cells i < j of a pair
        for j in range(i + 1, int(size.max(initial=0))):
            has = size > j
            ia.append(first[has] + i)
            ib.append(first[has] + j)
    if not ia:
        return out
    ia, ib = np.concatenate(ia), np.concatenate(ib)
    swap = position[ia] > position[ib]  # each position pair as (lower, higher)
    ia, ib = np.where(swap, ib, ia), np.where(swap, ia, ib)
    a, b = position[ia], position[ib]
    w = n[ia] * n[ib] / (n[ia] + n[ib])
    u, v = w * rate[ia], w * rate[ib]
    for j, values in enumerate((u, v, np.ones_like(w), u * u, u * v, v * v)):
        out.cells[:, :, j] += _grid(a, b, values, k)
    m = out.cross.shape[1]
    if m:
        rows = np.unique(pair[ia], return_inverse=True)[1]
        cell = _cell_index(a, b, k)
        big_u = np.zeros((rows.max() + 1, m))
        big_v = np.zeros_like(big_u)
        big_u[rows, cell] = u
        big_v[rows, cell] = v
        out.cross[0] += big_u.T @ big_u
        out.cross[1] += big_u.T @ big_v
        out.cross[2] += big_v.T @ big_v
    return out


def _grid(a: np.ndarray, b: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """The k x k sums of ``values`` at (a, b)."""
    return np.bincount(a * k + b, weights=values, minlength=k * k).reshape(k, k)


def harvest_theta(sums: HarvestSums) -> PbmFit:
    """theta from the harvested sums: weighted least squares on log ratios, theta_1 = 1.

    Weights are the inverse delta-method variances of log R per position pair; the interval
    uses the sandwich covariance (A^-1 X'W V W X A^-1, V the ratios' covariance over pairs).
    Positions no ratio links to position 1 get NaN.
    """
    cells = sums.cells
    k = cells.shape[0]
    theta, low, high = np.full(k, np.nan), np.full(k, np.nan), np.full(k, np.nan)
    impressions = np.diagonal(cells[:, :, 2]).copy()
    if k == 0:
        return PbmFit(theta, low, high, impressions, 1, float("nan"))
    theta[0] = low[0] = high[0] = 1.0
    a, b = np.triu_indices(k, 1)
    sx, sy = cells[a, b, 0], cells[a, b, 1]
    ok = (sx > 0) & (sy > 0)
    r = np.where(ok, sx / np.where(ok, sy, 1.0), np.nan)
    r0 = np.where(ok, r, 0.0)
    sx = np.where(ok, sx, 1.0)  # a position pair without clicks on both sides is left out
    var = (cells[a, b, 3] - 2 * r0 * cells[a, b, 4] + r0 * r0 * cells[a, b, 5]) / (sx * sx)
    if sums.cross.shape[1]:
        uu, uv, vv = sums.cross
        cov_r = uu - r0[None, :] * uv - r0[:, None] * uv.T + np.outer(r0, r0) * vv
        cov_r = cov_r / np.outer(sx, sx)
    else:
        cov_r = np.diag(var)
    keep = ok & np.isfinite(var) & (var > 0)
    if not keep.any():
        return PbmFit(theta, low, high, impressions, 1, float("nan"))
    x = np.zeros((int(keep.sum()), k))
    x[np.arange(len(x)), a[keep]] = 1.0
    x[np.arange(len(x)), b[keep]] = -1.0
    x = x[:, 1:]
    linked = _linked(x)
    xl = x[:, linked]
    wts = 1.0 / var[keep]
    a_inv = np.linalg.pinv(xl.T @ (xl * wts[:, None]))
    phi = a_inv @ (xl.T @ (wts * np.log(r[keep])))
    middle = (xl * wts[:, None]).T @ cov_r[np.ix_(keep, keep)] @ (xl * wts[:, None])
    se = np.sqrt(np.maximum(np.diag(a_inv @ middle @ a_inv), 0.0))
    idx = np.nonzero(linked)[0] + 1
    theta[idx] = np.exp(phi)
    low[idx] = np.exp(phi - Z95 * se)
    high[idx] = np.exp(phi + Z95 * se)
    return PbmFit(theta, low, high, impressions, 1, float("nan"))


def _linked(x: np.ndarray) -> np.ndarray:
    """Positions 2..K joined to position 1 through the ratios (rows of ``x``)."""
    seen = np.zeros(x.shape[1], dtype=bool)
    changed = True
    while changed:
        changed = False
        for row in x:
            nz = np.nonzero(row)[0]
            # a ratio with position 1 has one non-zero; else it links two positions
            if len(nz) == 1 and not seen[nz[0]]:
                seen[nz[0]] = changed = True
            elif len(nz) == 2 and seen[nz].any() and not seen[nz].all():
                seen[nz] = changed = True
    return seen
