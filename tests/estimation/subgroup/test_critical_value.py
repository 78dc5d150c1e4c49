"""cva against reference values of the authors' R package ``ebci`` (Kolesár, Armstrong,
Plagborg-Møller), file ``tests/testthat/test-cv.R`` of github.com/kolesarm/ebci (commit 6c7fa0a),
whose ``cva(m2, kappa, alpha)`` implements the critical value of Armstrong, Kolesár &
Plagborg-Møller (2022, Econometrica) "Robust Empirical Bayes Confidence Intervals"."""
import numpy as np
import pytest
from scipy.stats import ncx2, norm

from assessors.estimation.subgroup.critical_value import KAPPA_GRID, cva, cva_array, rho

# (m2, kappa, alpha) -> cva, each an ``expect_equal`` in ebci's test-cv.R.
EBCI_REFERENCE = [
    ((25.0, 3.0, 0.05), 11.88358367),
    ((1.0, 3.0, 0.2), 1.8494683),
    ((100.0, 3.0, 0.05), 24.86172217),
    ((2.8 ** 2, 8.0, 0.1), 7.0779747158),
]


@pytest.mark.parametrize("args,expected", EBCI_REFERENCE)
def test_matches_ebci_reference_values(args, expected):
    assert cva(*args) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("kappa", [1.0, 4.0, np.inf])
def test_zero_bias_gives_normal_quantile(kappa):
    assert cva(0.0, kappa, 0.05) == pytest.approx(norm.ppf(0.975))  # 1.959964
    assert cva(0.0, kappa, 0.2) == pytest.approx(norm.ppf(0.9))


def test_kappa_one_is_folded_noncentral_chi_square():
    # ebci: cva(m2, kappa=1) == CVb(B=sqrt(m2)) = sqrt(qchisq(1-alpha, 1, ncp=m2))
    for m2 in (1.0, 100.0 ** 2 / 100):
        assert cva(m2, 1.0) == pytest.approx(np.sqrt(ncx2.ppf(0.95, 1, m2)))
    # and kurtosis just above one is continuous with it (ebci: tolerance 1e-5)
    assert abs(cva(25.0, 1.000001) - np.sqrt(ncx2.ppf(0.95, 1, 25.0))) < 1e-5
    assert abs(cva(0.01 ** 2, 15.0) - np.sqrt(ncx2.ppf(0.95, 1, 0.01 ** 2))) < 1e-5


def test_nonbinding_and_binding_kurtosis():
    # ebci: under kappa=Inf the worst case at m2=4 has kurtosis 17.4 < 20, so the bound is slack
    assert cva(4.0, 20.0) == pytest.approx(cva(4.0, np.inf), rel=1e-8)
    assert cva(1.0, 10000.0, 0.2) == pytest.approx(cva(1.0, np.inf, 0.2), rel=1e-8)
    # ... while at m2=0.25 it is 16.6 > 15, so kappa=15 gives a strictly smaller value
    assert cva(0.25, 15.0) < cva(0.25, np.inf)
    # the critical value attains its level
    chi = cva(4.0, 3.0, 0.05)
    assert rho(4.0, 3.0, chi) == pytest.approx(0.05, abs=1e-8)


def test_monotone_and_chebyshev_bound():
    m2s = [0.01, 0.1, 1.0, 10.0]
    vals = [cva(m, 3.0) for m in m2s]
    assert np.all(np.diff(vals) > 0)
    assert all(cva(m, 3.0) <= cva(m, np.inf) + 1e-9 for m in m2s)
    assert all(cva(m, np.inf) <= np.sqrt((1 + m) / 0.05) for m in m2s)


def test_table_interpolation_close_and_conservative_in_kappa():
    rng = np.random.default_rng(0)
    m2 = np.exp(rng.uniform(np.log(1e-3), np.log(50), 25))
    on_grid = rng.choice(KAPPA_GRID[[10, -1]], 25)
    approx = cva_array(m2, on_grid)
    exact = cva_array(m2, on_grid, exact=True)
    assert np.max(np.abs(approx / exact - 1)) < 3e-3  # interpolation error in m2 only
    # off-grid kurtosis is rounded up: never below the exact value (up to interpolation), and close
    off = np.full(25, (KAPPA_GRID[10] + KAPPA_GRID[11]) / 2)
    approx, exact = cva_array(m2, off), cva_array(m2, off, exact=True)
    assert np.all(approx >= exact * (1 - 3e-3))
    assert np.all(approx <= exact * 1.05)


def test_table_rows_are_cached_under_the_given_cache_dir(tmp_path):
    from assessors.estimation.subgroup.critical_value import _table_row

    _table_row.cache_clear()
    m2 = np.array([0.5, 2.0])
    first = cva_array(m2, 4.0, cache_dir=tmp_path)
    rows = list((tmp_path / "cva_table").glob("*.npy"))
    assert len(rows) == 1 and not list((tmp_path / "cva_table").glob("*.tmp"))
    _table_row.cache_clear()
    np.testing.assert_array_equal(cva_array(m2, 4.0, cache_dir=tmp_path), first)  # read back from disk


def test_an_unwritable_cache_warns_naming_the_path_and_still_answers(tmp_path, caplog):
    from assessors.estimation.subgroup.critical_value import _table_row

    _table_row.cache_clear()
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the cache directory should be")
    m2 = np.array([0.5, 2.0])
    with caplog.at_level("WARNING", logger="assessors.estimation.subgroup.critical_value"):
        got = cva_array(m2, 4.0, cache_dir=blocker)
    assert str(blocker / "cva_table") in caplog.text
    np.testing.assert_array_equal(got, cva_array(m2, 4.0, cache_dir=tmp_path / "writable"))
    _table_row.cache_clear()
