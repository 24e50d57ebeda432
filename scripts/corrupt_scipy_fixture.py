#!/usr/bin/python3
"""Writes train/data/testdata/corrupt_scipy.json: the geometric corruptions of data.Corrupt
(rotation, translation, elastic, and the Gaussian blur they and gaussian_blur use) computed
independently with scipy.ndimage on fixed inputs, for TestCorruptMatchesSciPy.

    /usr/bin/python3 scripts/corrupt_scipy_fixture.py   # Debian's python3-scipy, python3-numpy

The image is a fixed 28×28 pattern (an off-centre bright blob with a gradient and a few sharp
edges, values in [0, 1]) so that rotation sign, shift direction and interpolation all show;
the elastic case's raw displacement fields are uniform [−1, 1] draws from numpy (seed 3),
stored in the fixture. Bilinear interpolation is order=1; "grid-constant" is scipy's zero fill
that interpolates towards the zero outside (as data.warp does); blur edges are "reflect"
(d c b a | a b c d), data.blur's reflection.
"""
import json
import os

import numpy as np
import scipy
from scipy import ndimage

H = W = 28


def image():
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    img = np.exp(-((y - 9.0) ** 2 / 18.0 + (x - 17.0) ** 2 / 30.0))
    img += 0.3 * (x / (W - 1)) * (y > 14)
    img[20:24, 4:12] = 0.9
    img[3:6, 3] = 1.0
    return np.clip(img, 0, 1).astype(np.float32)


def r7(a):
    """a's values rounded to 7 significant digits (float32's resolution), to keep the file small."""
    return [float("%.7g" % v) for v in np.asarray(a, dtype=np.float64).ravel()]


def main():
    img = image()
    f64 = img.astype(np.float64)
    cases = []
    for deg in (10.0, -10.0, 30.0, -50.0):
        out = ndimage.rotate(f64, -deg, reshape=False, order=1, mode="grid-constant", cval=0.0)
        cases.append({"kind": "rotation", "params": [deg], "want": r7(out)})
    for sy, sx in ((1.0, 1.0), (2.0, -3.0), (-5.0, 4.0)):
        out = ndimage.shift(f64, (sy, sx), order=1, mode="grid-constant", cval=0.0)
        cases.append({"kind": "translation", "params": [sy, sx], "want": r7(out)})
    for sigma in (0.4, 0.7, 1.0, 4.0):
        out = ndimage.gaussian_filter(f64, sigma, mode="reflect", truncate=4.0)
        cases.append({"kind": "blur", "params": [sigma], "want": r7(out)})
    rng = np.random.default_rng(3)
    for alpha in (8.0, 34.0):
        uy = rng.uniform(-1, 1, size=(H, W)).astype(np.float32)
        ux = rng.uniform(-1, 1, size=(H, W)).astype(np.float32)
        dy = ndimage.gaussian_filter(uy.astype(np.float64), 4.0, mode="reflect", truncate=4.0) * alpha
        dx = ndimage.gaussian_filter(ux.astype(np.float64), 4.0, mode="reflect", truncate=4.0) * alpha
        yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
        out = ndimage.map_coordinates(f64, [yy + dy, xx + dx], order=1, mode="grid-constant", cval=0.0)
        cases.append({"kind": "elastic", "params": [alpha], "uy": r7(uy),
                      "ux": r7(ux), "want": r7(out)})
    doc = {"generator": "scripts/corrupt_scipy_fixture.py", "scipy": scipy.__version__,
           "numpy": np.__version__, "h": H, "w": W, "image": r7(img), "cases": cases}
    path = os.path.join(os.path.dirname(__file__), "..", "train", "data", "testdata", "corrupt_scipy.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", os.path.normpath(path), len(cases), "cases")


if __name__ == "__main__":
    main()
