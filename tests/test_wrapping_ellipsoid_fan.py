"""The hybrid fan of WrapEllipsoid (lockstep, vectorized) against the closest points one sample at a time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from osim_emb.paths.wrapping._kernels_ellipsoid import _N_FAN, closest_on_ellipsoid, fan_direction, workspace


def _fan_one_by_one(a, r1, r1r2):
    """The fan's definition: unit sum of the unit vectors from the chord samples i/300 to their closest
    surface points, each by the scalar closest-point iteration (OpenSim's closestPointToEllipse)."""
    s = np.zeros(3)
    for i in range(1, _N_FAN - 1):
        tt = float(i) / _N_FAN
        smp = tuple(r1[k] + tt * r1r2[k] for k in range(3))
        cp, ok = closest_on_ellipsoid(a, a, smp, -1, (math.nan,) * 3)
        assert ok
        d = np.subtract(cp, smp)
        mag = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        s = s + (d * (1.0 / mag) if mag >= np.finfo(float).eps else 0.0)
    return s * (1.0 / math.sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]))


@pytest.mark.parametrize("outside", [False, True])
def test_fan_equals_the_closest_points_one_sample_at_a_time(outside):
    """Chords through random ellipsoids (the wrap's case: every sample inside, where the start of each
    iteration is decided without divisions) and chords reaching outside (the start as written)."""
    rng = np.random.default_rng(3)
    wk = workspace()
    for _ in range(40):
        a = tuple(rng.uniform(0.3, 1.8, 3))
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        c = rng.normal(size=3) * np.array(a) * 0.3
        # the chord between the two crossings of the line c + s d (inside), or beyond them (outside)
        A = float(np.sum((d / a) ** 2))
        B = 2.0 * float(np.sum(c * d / np.square(a)))
        C = float(np.sum((c / a) ** 2)) - 1.0
        sq = math.sqrt(B * B - 4 * A * C)
        s1, s2 = (-B - sq) / (2 * A), (-B + sq) / (2 * A)
        if outside:
            s1, s2 = s1 - 0.4, s2 + 0.4
        r1 = tuple(c + s1 * d)
        r1r2 = tuple((s2 - s1) * d)
        got = fan_direction(a, a, r1, r1r2, r1, wk[1], wk[2])
        np.testing.assert_allclose(got, _fan_one_by_one(a, r1, r1r2), rtol=0, atol=1e-15)
