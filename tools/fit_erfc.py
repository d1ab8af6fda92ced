#!/usr/bin/env python3
"""Fits the erfc approximation of src/backend/cpu/gelu_erf.h:

    erfc(a) = t * exp(P(t) - a^2),  t = 1 / (1 + a / 2),  a >= 0,  P of degree 9,

minimising the absolute error in the exponent (= the relative error of erfc) over t in (0, 1]
(a in [0, inf)) by iteratively reweighted least squares (Lawson's algorithm, near-minimax), with
the reference log(erfc(a) / t) + a^2 from mpmath at 40 digits. Prints the coefficients and the
max error. Run with the tools venv:  /work/venv-tools/bin/python tools/fit_erfc.py
"""
import mpmath as mp
import numpy as np

DEGREE = 9
NODES = 4000


def main():
    mp.mp.dps = 40
    t = 0.5 - 0.5 * np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)  # Chebyshev nodes in (0, 1)
    a = 2.0 * (1.0 / t - 1.0)
    g = np.array([float(mp.log(mp.erfc(mp.mpf(ai)) / mp.mpf(ti)) + mp.mpf(ai) ** 2) for ai, ti in zip(a, t)])
    V = np.vander(t, DEGREE + 1, increasing=True)
    w = np.ones(NODES)
    for _ in range(200):
        c, *_ = np.linalg.lstsq(V * np.sqrt(w)[:, None], g * np.sqrt(w), rcond=None)
        err = np.abs(V @ c - g)
        w *= err / err.mean()
        w /= w.mean()
    print(f"degree {DEGREE}: max |error| in the exponent {np.abs(V @ c - g).max():.3g}")
    print("kP[] = {" + ", ".join(f"{x:.9e}f" for x in c) + "};")


if __name__ == "__main__":
    main()
