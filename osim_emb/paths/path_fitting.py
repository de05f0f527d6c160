"""Fit function-based paths L(q) ~ p(q) from exact lengths AND moment arms (``osim-emb fit-paths``).

For each unit, p is a polynomial in OpenSim's ``MultivariatePolynomialFunction``
form over the generalized coordinates the unit spans (those with a nonzero
moment arm somewhere in the sample), p(x) = sum_t c_t prod_v x_v^(e_tv) with the
terms of :func:`osim_emb.core.functions.multivariate.polynomial_exponents`.  With
phi_t(x) the monomials, the coefficients solve one linear least-squares
problem over the S samples x^(s) (docs/paths.md):

    min_c  sum_s (phi(x^s) . c - L_s)^2 + sum_s sum_i (dphi/dx_i(x^s) . c + R_is)^2,

values and gradients together (R = -dL/dq), both in metres, as OpenSim's
``PolynomialPathFitter`` does.  The orders min_order..max_order are tried in
turn until the RMS length error and every coordinate's RMS moment-arm error are
below their tolerances.  L and R come from :func:`lengths_and_moment_arms`
(closed form, batched) instead of one ``realizePosition`` + ``MomentArmSolver``
per sample and coordinate.

Sampling follows ``PolynomialPathFitter``: around each frame of a reference
trajectory, ``samples_per_frame`` Latin-hypercube samples in
[q + bounds[0], q + bounds[1]] (degrees, converted to radians for every coordinate), clamped coordinates
clipped to their range; the frames themselves are kept; samples whose length or moment arms
jump away from their frame's (legacy wrapping) are left out as OpenSim's filter does.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from math import comb
from typing import Sequence

import numpy as np

from osim_emb.core.functions.multivariate import MultivariatePolynomial, polynomial_exponents
from osim_emb.paths.geometry import _muscle_list, lengths_and_moment_arms

__all__ = ["PathFit", "FitSettings", "sample_coordinates", "outlier_samples", "monomials_and_derivatives", "fit_polynomial",
           "fit_paths", "spanned_coordinates"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FitSettings:
    """``PolynomialPathFitter``'s settings (same defaults)."""

    min_order: int = 2
    max_order: int = 6
    length_tolerance: float = 1e-4  # m, RMS
    moment_arm_tolerance: float = 1e-4  # m, RMS per coordinate
    span_tolerance: float = 1e-9  # m: a coordinate is spanned where |R| exceeds this somewhere in the sample

    def __post_init__(self):
        if not 0 <= self.min_order <= self.max_order:
            raise ValueError(f"need 0 <= min_order <= max_order, got {self.min_order}, {self.max_order}")


@dataclass
class PathFit:
    """The fit of one unit: coordinates (generalized), the polynomial, RMS/max errors on the sample."""

    muscle: str
    coordinates: list[str]
    polynomial: MultivariatePolynomial
    length_rms: float
    length_max: float
    moment_arm_rms: np.ndarray  # (d,)
    moment_arm_max: np.ndarray  # (d,)
    met_tolerance: bool
    n_samples: int = 0
    extra: dict = field(default_factory=dict)


def sample_coordinates(model, frames: np.ndarray, samples_per_frame: int = 25,
                       bounds_deg: tuple[float, float] = (-10.0, 10.0), seed: int | None = 0) -> np.ndarray:
    """OpenSim ``PolynomialPathFitter``'s sample: each frame, then ``samples_per_frame`` Latin-hypercube points.

    Every coordinate is displaced by ``bounds_deg`` converted from degrees to radians -- translational
    ones too (then in metres), as OpenSim 4.6's code does (its documentation says metres for
    translations); clamped coordinates are clipped to their range.
    Returns (n_frames * (samples_per_frame + 1), n_q).
    """
    from scipy.stats import qmc
    frames = np.atleast_2d(np.asarray(frames, dtype=float))
    if frames.shape[1] != model.n_q:
        raise ValueError(f"frames must have {model.n_q} columns (the generalized coordinates), got {frames.shape[1]}")
    lo_v, hi_v = np.radians(bounds_deg[0]), np.radians(bounds_deg[1])
    clamp = np.array([c.clamped for c in model.coordinates])
    rng_lo, rng_hi = model.coordinate_ranges.T
    lhs = qmc.LatinHypercube(d=model.n_q, seed=seed)
    out = np.empty((frames.shape[0], samples_per_frame + 1, model.n_q))
    out[:, 0] = frames
    for f in range(frames.shape[0]):
        out[f, 1:] = frames[f] + lo_v + lhs.random(samples_per_frame) * (hi_v - lo_v)
    out = out.reshape(-1, model.n_q)
    return np.where(clamp, np.clip(out, rng_lo, rng_hi), out)


def sample_domain(model, samples: np.ndarray, coordinates) -> list[tuple[str, float, float, float, float, str]]:
    """Per coordinate: (name, sampled min, sampled max, range min, range max, unit), in degrees for a rotational
    coordinate and metres otherwise: the box a fit has seen (a fit holds near its samples only)."""
    out = []
    for name in coordinates:
        k = model.coordinate_index(name)
        rotational = model.coordinates[k].motion_type != "translational"  # coupled ones are angles too (MoBL)
        scale = np.degrees(1.0) if rotational else 1.0
        lo, hi = model.coordinate_ranges[k]
        out.append((name, float(samples[:, k].min() * scale), float(samples[:, k].max() * scale), float(lo * scale),
                    float(hi * scale), "deg" if rotational else "m"))
    return out


def domain_text(domain) -> str:
    """'elbow_flexion [0.0, 130.0] deg, ...' of :func:`sample_domain`."""
    return ", ".join(f"{name} [{lo:.4g}, {hi:.4g}] {unit}" for name, lo, hi, _, _, unit in domain)


def narrowly_sampled(domain, coverage: float = 0.9) -> list:
    """The entries of :func:`sample_domain` whose sample spans less than ``coverage`` of a finite range."""
    return [d for d in domain if np.isfinite(d[4] - d[3]) and d[4] > d[3] and (d[2] - d[1]) < coverage * (d[4] - d[3])]


def monomials_and_derivatives(exponents: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """phi (N, T) and dphi/dx (N, d, T) of the monomials prod_v x_v^(e_tv)."""
    n, d = x.shape
    top = int(exponents.max(initial=0))
    powers = np.ones((n, d, top + 1))
    for e in range(1, top + 1):
        powers[:, :, e] = powers[:, :, e - 1] * x
    factors = np.stack([powers[:, v, exponents[:, v]] for v in range(d)], axis=1)  # (N, d, T)
    phi = np.prod(factors, axis=1)
    dphi = np.empty((n, d, exponents.shape[0]))
    for i in range(d):
        lower = powers[:, i, np.maximum(exponents[:, i] - 1, 0)] * exponents[:, i]
        others = np.prod(np.delete(factors, i, axis=1), axis=1) if d > 1 else np.ones_like(phi)
        dphi[:, i] = lower * others
    return phi, dphi


def _least_squares(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin |a c - b| for a tall, thin a, on the column-scaled matrix.

    Well-conditioned systems (cond(a) below ~1e6, estimated from the Cholesky factor of the
    normal equations) use the normal equations with one refinement step (semi-normal equations),
    which then reach the accuracy of a QR solve at a fraction of the cost; the others use a
    complete orthogonal factorization (LAPACK gelsy, as OpenSim's FactorQTZ).
    """
    from scipy.linalg import LinAlgError, cho_factor, cho_solve, lstsq
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    an = a / scale
    try:
        factor = cho_factor(an.T @ an)
        diag = np.abs(np.diag(factor[0]))
        if diag.min() > 1e-6 * diag.max():
            c = cho_solve(factor, an.T @ b)
            c += cho_solve(factor, an.T @ (b - an @ c))
            return c / scale
    except LinAlgError:
        pass
    return lstsq(an, b, lapack_driver="gelsy")[0] / scale


def fit_polynomial(x: np.ndarray, length: np.ndarray, moment_arms: np.ndarray, order: int,
                   basis: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                   ) -> tuple[MultivariatePolynomial, np.ndarray, np.ndarray]:
    """The least-squares polynomial of ``order`` on values and gradients; residuals of L (S,) and R (S, d).

    ``basis`` = (exponents, phi, dphi) of a higher order may be passed to reuse its monomials
    (the terms of a lower order are a subset, in the same order).
    """
    s, d = x.shape
    if basis is None:
        e = polynomial_exponents(d, order)
        phi, dphi = monomials_and_derivatives(e, x)
    else:
        e_all, phi, dphi = basis
        keep = e_all.sum(axis=1) <= order
        phi, dphi = phi[:, keep], dphi[:, :, keep]
    a = np.vstack([phi, -dphi.transpose(1, 0, 2).reshape(d * s, -1)])  # R = -dL/dx
    b = np.concatenate([length, moment_arms.T.reshape(-1)])
    coef = _least_squares(a, b)
    res = a @ coef - b
    return MultivariatePolynomial(d, order, coef), res[:s], res[s:].reshape(d, s).T


def spanned_coordinates(moment_arms: np.ndarray, tolerance: float) -> np.ndarray:
    """Indices of the coordinates with |R| > tolerance somewhere: R (S, n_q) of one unit."""
    return np.flatnonzero(np.abs(moment_arms).max(axis=0) > tolerance)


def outlier_samples(values: np.ndarray, samples_per_frame: int, threshold: float = 5.0) -> np.ndarray:
    """OpenSim ``PolynomialPathFitter``'s filter: rows (S,) deviating from their frame's value.

    ``values`` (S, C) in blocks of 1 + samples_per_frame rows (the frame, then its samples). For
    each column, the standard deviation within each block is averaged over the blocks; a row is an
    outlier where some column differs from its frame's value by more than ``threshold`` times it.
    """
    block = samples_per_frame + 1
    if values.shape[0] % block:
        raise ValueError(f"{values.shape[0]} samples are not whole blocks of 1 + {samples_per_frame}")
    v = values.reshape(-1, block, values.shape[1])
    avg_std = v.std(axis=1).mean(axis=0)  # (C,)
    dev = np.abs(v - v[:, :1])
    return np.any(dev > threshold * avg_std, axis=2).reshape(-1)


def fit_paths(model, samples: np.ndarray, muscles: Sequence[str] | None = None,
              settings: FitSettings = FitSettings(), *, wrapping: bool = True,
              opensim_compat: bool = False, samples_per_frame: int | None = None) -> list[PathFit]:
    """Fit every unit (all of the model's by default) on the sample (S, n_q) of generalized coordinates.

    Units that span no coordinate are left out with a warning, as OpenSim's fitter does.  With
    ``samples_per_frame`` (the sample of :func:`sample_coordinates`), each unit's samples whose
    length or moment arms jump away from their frame's (:func:`outlier_samples`, OpenSim's filter,
    here per unit) are left out, with a warning giving their number.
    """
    samples = model.check_configuration(samples, tolerance=np.inf)
    t0 = time.perf_counter()
    lengths, arms = lengths_and_moment_arms(model, samples, muscles, wrapping=wrapping, opensim_compat=opensim_compat,
                                            allow_out_of_range=True)  # OpenSim's sampling leaves the ranges
    t_paths = time.perf_counter() - t0
    bad = ~np.isfinite(lengths) | ~np.all(np.isfinite(arms), axis=1)
    units = _muscle_list(model, muscles)
    out = []
    for m, unit in enumerate(units):
        keep = ~bad[:, m]
        if not keep.all():
            log.warning("unit %r: %d of %d samples have a non-finite length or moment arm and are left out",
                        unit.name, int((~keep).sum()), len(keep))
        if samples_per_frame is not None:
            values = np.column_stack([np.where(keep, lengths[:, m], 0.0), np.where(keep[:, None], arms[:, :, m], 0.0)])
            jumps = outlier_samples(values, samples_per_frame) & keep
            if jumps.any():
                log.warning("unit %r: %d of %d samples jump away from their frame's length or moment arms "
                            "(more than 5 mean standard deviations) and are left out", unit.name,
                            int(jumps.sum()), len(keep))
                keep &= ~jumps
        r = arms[keep, :, m]
        span = spanned_coordinates(r, settings.span_tolerance)
        if span.size == 0:
            log.warning("unit %r spans no coordinate over the sample: not fitted", unit.name)
            continue
        x, length = samples[keep][:, span], lengths[keep, m]
        poly, met = None, False
        e_all = polynomial_exponents(span.size, settings.max_order)
        basis = (e_all, *monomials_and_derivatives(e_all, x))
        for order in range(settings.min_order, settings.max_order + 1):
            if comb(span.size + order, order) > max(1, x.shape[0] * (span.size + 1)):
                log.warning("unit %r: %d samples cannot determine the %d terms of order %d; stopping at order %d",
                            unit.name, x.shape[0], comb(span.size + order, order), order, order - 1)
                break
            poly, res_l, res_r = fit_polynomial(x, length, r[:, span], order, basis)
            rms_l = float(np.sqrt(np.mean(res_l ** 2)))
            rms_r = np.sqrt(np.mean(res_r ** 2, axis=0))
            met = rms_l <= settings.length_tolerance and bool(np.all(rms_r <= settings.moment_arm_tolerance))
            if met:
                break
        if poly is None:
            log.warning("unit %r: too few samples for order %d: not fitted", unit.name, settings.min_order)
            continue
        if not met:
            log.warning("unit %r: order %d leaves RMS errors %.3g m (length), %.3g m (moment arm), above the "
                        "tolerances", unit.name, poly.order, rms_l, rms_r.max())
        out.append(PathFit(unit.name, [model.coordinate_names[k] for k in span], poly, rms_l,
                           float(np.abs(res_l).max()), rms_r, np.abs(res_r).max(axis=0), met, int(keep.sum()),
                           {"path_seconds": t_paths}))
    return out
