#!/usr/bin/env python3
"""Exports scikit-learn's handwritten digits (1,797 images of 8 x 8 pixels,
values 0..16, ten classes) as .npy files that gaia reads, for
examples/train_digits and examples/vsa_classify. gaia ships no data; this
script needs scikit-learn (pip install scikit-learn) and writes

  DIR/digits_train_x.npy  float32 [N, 64]  pixels scaled to [0, 1]
  DIR/digits_train_y.npy  float32 [N]      class 0..9
  DIR/digits_test_x.npy   float32 [M, 64]
  DIR/digits_test_y.npy   float32 [M]

The split is fixed (a quarter for testing, stratified by class, seed 0), so
every run of the examples sees the same images.

  python3 tools/digits_to_npy.py DIR
"""
import os
import sys


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    try:
        import numpy as np
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as e:
        print("digits_to_npy: needs numpy and scikit-learn (%s)" % e, file=sys.stderr)
        return 1
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.25, random_state=0, stratify=d.target)
    for name, a in (("train_x", xtr), ("train_y", ytr), ("test_x", xte), ("test_y", yte)):
        np.save(os.path.join(out, "digits_%s.npy" % name), np.ascontiguousarray(a))
    print("digits: %d training and %d test images written to %s" % (len(ytr), len(yte), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
