"""A share k of n with its 95% Wilson interval: the one copy bench/'s
Python and shell scripts use (tests/unit/wilson.hpp is the C++ one).

    from wilson import wilson, rate      # with bench/ on sys.path
    python3 bench/wilson.py K N          # prints rate(K, N), for shell scripts
"""
import math
import sys

Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


def wilson(k, n, z=Z95):
    """(share, low, high) as fractions; (0, 0, 1) when n is 0."""
    if n == 0:
        return 0.0, 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return p, max(0.0, mid - half), min(1.0, mid + half)


def rate(k, n):
    """"k of n (p%, 95% Wilson interval [lo%, hi%])"."""
    p, lo, hi = wilson(k, n)
    return "%d of %d (%.1f%%, 95%% Wilson interval [%.1f%%, %.1f%%])" % (
        k, n, 100 * p, 100 * lo, 100 * hi)


if __name__ == "__main__":
    print(rate(int(sys.argv[1]), int(sys.argv[2])))
