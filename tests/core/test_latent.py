"""The latent-ability assessor: recovery and coverage on data simulated from the model, real-data fit."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from assessors.core.latent import LatentAssessor
from assessors.core.posterior import GaussianPrior
from assessors.core.residual import fit_residual
from assessors.errors import DataError
from assessors.irt_math import laplace_posterior, sigmoid

FAST = dict(dims=1, hidden_sizes=(16,), dropout=0.0, lr=0.01, weight_decay=1e-4, n_members=1, batch_prompts=64,
            max_epochs=40, patience=4, residual=False, residual_dims=4, num_threads=1)


def simulate(n_llms=120, n_prompts=900, d=6, seed=0):
    """Prompts with features X; a(x), b(x) smooth functions of them; 1-D abilities; 0/1 answers."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_prompts, d)).astype(np.float32)
    u, v = rng.standard_normal(d) / np.sqrt(d), rng.standard_normal(d) / np.sqrt(d)
    a = np.log1p(np.exp(1.5 * X @ u)) + 0.5
    b = 1.5 * X @ v
    theta = rng.standard_normal(n_llms)
    S = (rng.random((n_llms, n_prompts)) < sigmoid(np.outer(theta, a) - b)).astype(np.float32)
    return X, S, theta, a, b


@pytest.fixture(scope="module")
def sim_fit():
    X, S, theta, a, b = simulate()
    tr_llm, va_llm, te_llm = np.arange(60), np.arange(60, 75), np.arange(75, 120)
    tr_p, va_p, te_p = np.arange(600), np.arange(600, 700), np.arange(700, 900)
    ref = np.arange(0, 600, 10)  # 60 reference prompts among the training prompts
    val = (X[va_p], S[np.ix_(va_llm, va_p)], S[np.ix_(va_llm, tr_p)][:, ref])
    model = LatentAssessor(**FAST).fit(X[tr_p], S[np.ix_(tr_llm, tr_p)], ref, validation=val)
    return model, dict(X=X, S=S, theta=theta, a=a, b=b, tr_llm=tr_llm, te_llm=te_llm, tr_p=tr_p, te_p=te_p, ref=ref)


def test_abilities_and_item_parameters_are_recovered(sim_fit):
    model, d = sim_fit
    th = model.members_[0]["theta"][:, 0]
    sign = np.sign(np.corrcoef(th, d["theta"][d["tr_llm"]])[0, 1])  # d=1: identified up to sign and scale
    assert sign * np.corrcoef(th, d["theta"][d["tr_llm"]])[0, 1] > 0.95
    A, B = model.item_parameters(d["X"][d["te_p"]])  # unseen prompts
    assert sign * np.corrcoef(A[0, :, 0], d["a"][d["te_p"]])[0, 1] > 0.7
    assert np.corrcoef(B[0], d["b"][d["te_p"]])[0, 1] > 0.9


def test_new_llms_are_ranked_and_their_accuracy_band_covers(sim_fit):
    from assessors.metrics import auc

    model, d = sim_fit
    S, te, ref = d["S"], d["te_llm"], d["tr_p"][d["ref"]]
    R = S[np.ix_(te, ref)]
    X_te, S_te = d["X"][d["te_p"]], S[np.ix_(te, d["te_p"])]
    P = model.predict_proba(X_te, R)
    truth = sigmoid(np.outer(d["theta"][te], d["a"][d["te_p"]]) - d["b"][d["te_p"]])
    aucs = [auc(S_te[k], P[k]) for k in range(len(te))]
    oracle = [auc(S_te[k], truth[k]) for k in range(len(te))]
    assert np.mean(aucs) > np.mean(oracle) - 0.02
    band = model.predictive_accuracy(X_te, model.posterior(d["X"][ref], R), level=0.9)
    realised = S_te.mean(1)
    cover = np.mean((band["low"] <= realised) & (realised <= band["high"]))
    assert 0.8 <= cover <= 1.0


def test_laplace_posterior_intervals_cover_near_nominal():
    """Known item parameters, abilities from the prior: 90% Laplace intervals cover ~90% of the truth."""
    rng = np.random.default_rng(1)
    A, b = np.abs(rng.normal(1.0, 0.4, (40, 2))), rng.normal(0, 1, 40)
    prior = GaussianPrior(np.array([0.3, -0.2]), np.array([[1.0, 0.3], [0.3, 0.8]]))
    theta = prior.sample(2000, rng)
    Y = (rng.random((2000, 40)) < sigmoid(theta @ A.T - b)).astype(float)
    Y[rng.random(Y.shape) < 0.2] = np.nan  # missing answers are simply absent
    th, cov = laplace_posterior(A, b, Y, prior.mean, prior.precision)
    z = np.abs(th - theta) / np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
    cover = (z < 1.645).mean(0)
    assert np.all(np.abs(cover - 0.9) < 0.03), cover
    # the MAP is the maximiser: the gradient of the log posterior vanishes there
    p = sigmoid(th @ A.T - b)
    grad = (np.nan_to_num(Y - p)) @ A - (th - prior.mean) @ prior.precision
    assert np.abs(grad).max() < 1e-6


def test_partial_and_foreign_evidence_without_retraining(sim_fit):
    model, d = sim_fit
    S, te = d["S"], d["te_llm"][:5]
    R = S[np.ix_(te, d["tr_p"][d["ref"]])]
    half = R.copy()
    half[:, ::2] = np.nan
    p_full, p_half = model.predict_proba(d["X"][d["te_p"]], R), model.predict_proba(d["X"][d["te_p"]], half)
    assert p_full.shape == p_half.shape == (5, 200)
    _, s_full, _ = model.predict_distribution(d["X"][d["te_p"]], R)
    _, s_half, _ = model.predict_distribution(d["X"][d["te_p"]], half)
    assert s_half.mean() > s_full.mean()  # fewer answers, wider posterior
    # any graded prompts, here 100 test-pool prompts that are not reference items
    post = model.posterior(d["X"][d["te_p"][:100]], S[np.ix_(te, d["te_p"][:100])])
    assert post.theta.shape == (1, 5, 1) and list(post.evidence) == ["ok"] * 5
    P, STD = model.predict_posterior(d["X"][d["te_p"][100:]], post)
    assert P.shape == STD.shape == (5, 100) and np.all(STD > 0)


def test_bad_and_degenerate_evidence(sim_fit):
    model, d = sim_fit
    X_te = d["X"][d["te_p"]]
    n_ref = len(d["ref"])
    with pytest.raises(DataError, match="0, 1 or missing"):
        model.predict_proba(X_te, np.full(n_ref, 0.5))
    with pytest.raises(DataError, match="shape"):
        model.predict_proba(X_te, np.zeros(n_ref + 1))
    R = np.stack([np.full(n_ref, np.nan), np.zeros(n_ref), np.ones(n_ref)])
    p, std, ev = model.predict_distribution(X_te, R)
    assert list(ev) == ["prior_only", "one_class", "one_class"]
    assert p[1].mean() < p[0].mean() < p[2].mean()
    # no answers: the prior's spread, wider than any LLM's with answers
    _, s_ok, _ = model.predict_distribution(X_te, d["S"][d["te_llm"][:3]][:, d["tr_p"][d["ref"]]])
    assert std[0].mean() > s_ok.mean()
    post = model.posterior(np.zeros((0, X_te.shape[1]), np.float32), np.zeros((2, 0)))
    assert list(post.evidence) == ["prior_only"] * 2


def test_pickle_round_trip_predicts_the_same(sim_fit):
    model, d = sim_fit
    R = d["S"][np.ix_(d["te_llm"][:3], d["tr_p"][d["ref"]])]
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(d["X"][d["te_p"]], R), model.predict_proba(d["X"][d["te_p"]], R))


def test_residual_ranks_where_the_offset_cannot_and_stays_off_otherwise():
    rng = np.random.default_rng(0)
    Phi = rng.standard_normal((150, 4))
    w = np.array([1.5, -1.0, 0.0, 0.5])
    Y = np.stack([(rng.random(150) < sigmoid(Phi @ w)).astype(float),  # offset knows nothing
                  (rng.random(150) < sigmoid(np.zeros(150))).astype(float)])  # offset is right
    res = fit_residual(Phi, Y, np.zeros((2, 150)))
    assert res.tau[0] > 0 and res.tau[1] == 0
    assert np.corrcoef(res.w[0], w)[0, 1] > 0.9
    assert np.all(res.w[1] == 0)


@pytest.mark.slow
def test_train_py_runs_with_assessor_latent_on_small_real_data(compose):
    """``train.py assessor=latent`` end to end on a real slice, with the usual baselines and report."""
    from assessors.tasks.train import train_assessors

    cfg = compose(["assessor=latent", "features=success_pattern", "data.subtasks=[bbh_navigate,bbh_snarks,bbh_web_of_lies]",
                   "selector.size=30", "llm_split.n_train=30", "llm_split.n_val=6", "llm_split.n_test=6",
                   "assessor.n_members=1", "assessor.hidden_sizes=[16]", "assessor.max_epochs=8", "assessor.residual_dims=8",
                   "compare.specific=false", "compare.random_selector=false",
                   "classifier.param_grid.n_estimators=[30]", "paper_generic_classifier.param_grid.n_estimators=[30]", "classifier.param_grid.max_depth=[2]",
                   "specific.classifiers.xgboost.param_grid.n_estimators=[30]", "plots=false"])
    summary = train_assessors(cfg)
    assert summary["auc/headline"] == summary["auc/latent_served"] > 0.6  # the column is named after the method
    assert {"auc/all_train_data", "auc/reference_only"} <= set(summary)


def test_residual_rescues_ranking_when_the_population_fails_everything():
    """Training LLMs fail almost everything (their answers carry no item information), new LLMs are
    strong: the latent model alone ranks at chance, the residual brings it to "reference only"."""
    from sklearn.linear_model import LogisticRegression

    from assessors.metrics import auc

    rng = np.random.default_rng(0)
    X = rng.standard_normal((900, 6)).astype(np.float32)
    b = 2.0 * X @ (rng.standard_normal(6) / np.sqrt(6))
    S_train = (rng.random((60, 600)) < 0.03).astype(np.float32)  # noise around 3% accuracy
    S_new = (rng.random((30, 900)) < sigmoid(1.5 + rng.normal(0, 0.5, (30, 1)) - b)).astype(np.float32)
    ref, te = np.arange(0, 600, 6), np.arange(600, 900)
    model = LatentAssessor(**{**FAST, "residual": True, "residual_dims": 6, "max_epochs": 8}).fit(X[:600], S_train, ref)
    R = S_new[:, ref]
    with_res = model.predict_proba(X[te], R)
    model.residual = False
    alone = model.predict_proba(X[te], R)
    model.residual = True
    ref_only = [LogisticRegression().fit(X[ref], R[k]).predict_proba(X[te])[:, 1] for k in range(30)]
    mean_auc = lambda P: np.mean([auc(S_new[k, te], P[k]) for k in range(30)])  # noqa: E731
    assert mean_auc(alone) < 0.6
    assert mean_auc(with_res) > mean_auc(ref_only) - 0.02


def test_latent_assessor_as_the_aipw_proxy(sim_fit):
    """``estimator=aipw_assessor`` takes any assessor with the generic interface: here the latent one."""
    from assessors.estimation.benchmark.generic_proxy import GenericAssessorProxy

    _, d = sim_fit
    X, S = d["X"][:300], d["S"][:40, :300]
    core = np.arange(0, 300, 10)
    proxy = GenericAssessorProxy(assessor=LatentAssessor(**{**FAST, "max_epochs": 5})).fit(S, X, core)
    target = d["S"][100:103, :300][:, core].copy()
    target[0, :5] = np.nan  # hidden core cells
    P = proxy.predict(target)
    assert P.shape == (3, 300) and np.all((P > 0) & (P < 1))


def test_member_training_stops_after_patience_and_restores_the_best_epoch():
    """Early stopping of one member: scripted validation scores (best at epoch 2, then three worse) stop
    training after epoch 5 and restore the weights of epoch 2; a non-finite score stops at once."""
    from assessors.core.latent_net import train_member

    X, S, _, _, _ = simulate(n_llms=20, n_prompts=200, seed=3)
    li, ii = np.nonzero(np.isfinite(S))
    scores, seen = iter([0.9, 0.8, 0.7, 0.75, 0.71, 0.72, 0.1]), []

    def validate(module):
        seen.append({k: v.detach().clone() for k, v in module.state_dict().items()})
        return {"val_loss": next(scores)}

    kw = dict(train_prompts=np.arange(200), dims=1, hidden_sizes=(8,), dropout=0.0, lr=0.01, weight_decay=0.0,
              prior_var=1.0, batch_prompts=50, max_epochs=20, patience=3, seed=0, num_threads=1)
    member = train_member(X, li, ii, S[li, ii], 20, validate=validate, **kw)
    assert (member["epochs"], member["best_epoch"]) == (6, 2) and member["best"] == pytest.approx(0.7)
    assert np.array_equal(member["theta"], seen[2]["theta"].numpy())
    assert not np.array_equal(member["theta"], seen[-1]["theta"].numpy())  # the later epochs did move it
    np.testing.assert_array_equal(member["weights"]["layers"][0][0], seen[2]["net.0.weight"].numpy())
    stopped = train_member(X, li, ii, S[li, ii], 20, validate=lambda m: {"val_loss": float("nan")}, **kw)
    assert stopped["epochs"] == 1 and stopped["best_epoch"] == -1
