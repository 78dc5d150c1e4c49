"""A tiny *real* assessor: unigram features + small XGBoost on a few BBH subtasks.

Fitted once per test session on real Open LLM Leaderboard v2 results (3 subtasks, 20 training
LLMs, 30 reference prompts); takes a few seconds.
"""
from __future__ import annotations

import numpy as np

SUBTASKS = ["bbh_navigate", "bbh_sports_understanding", "bbh_web_of_lies"]
N_TRAIN_LLMS = 20
N_REF = 30


def fit_tiny(data_dir, featurizer=None, assessor=None):
    """Fit it; ``featurizer`` (default: 200 unigram features) turns prompts into features;
    ``assessor``: an unfitted assessor with the generic interface (default: XGBoost generic)."""
    from xgboost import XGBClassifier

    from assessors.classifiers.grid import ParamGrid
    from assessors.core.generic import GenericAssessor
    from assessors.core.pyfunc import AssessorModel
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.features.ngrams import UnigramFeaturizer

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=SUBTASKS, download=False)
    rng = np.random.default_rng(0)
    ids = np.array(res.instance_ids)
    perm = rng.permutation(len(ids))
    train_ids, test_ids = list(ids[perm[:450]]), list(ids[perm[450:]])
    llm_perm = rng.permutation(len(res.llms))
    train_llms = [res.llms[i] for i in llm_perm[:N_TRAIN_LLMS]]
    test_llms = [res.llms[i] for i in llm_perm[N_TRAIN_LLMS:N_TRAIN_LLMS + 5]]
    feat = (featurizer if featurizer is not None else UnigramFeaturizer(max_features=200)).fit(res.prompts(train_ids))
    X = feat.transform(res.prompts(train_ids))
    ref_index = np.sort(rng.choice(len(train_ids), N_REF, replace=False))
    ref_ids = [train_ids[i] for i in ref_index]
    S = res.matrix(train_llms, train_ids)
    if assessor is None:
        assessor = GenericAssessor(ParamGrid(XGBClassifier(n_estimators=40, max_depth=3, n_jobs=1, tree_method="hist",
                                                           random_state=0)))
    gen = assessor.fit(X, S, ref_index)
    # as train.py logs it: the known LLMs' states from all their answers
    model = AssessorModel(gen, feat, ref_ids, res.matrix(train_llms, ref_ids), train_llms,
                          known_states=gen.describe_known(X, S, ref_index))
    return {"model": model, "results": res, "train_llms": train_llms, "test_llms": test_llms,
            "test_ids": test_ids, "reference_ids": ref_ids}


LATENT = dict(dims=2, hidden_sizes=(16,), n_members=1, max_epochs=10, patience=3, residual_dims=8, num_threads=1)


def fit_degenerate(data_dir):
    """Real BBH answers; training LLMs are the 20 weakest with 16 of their rows zeroed (LLMs that failed
    every item), validation LLMs all zero; the new LLMs are the 5 strongest."""
    from assessors.core.latent import LatentAssessor
    from assessors.core.pyfunc import AssessorModel
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.features.ngrams import UnigramFeaturizer

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=SUBTASKS, download=False)
    rng = np.random.default_rng(0)
    ids = np.array(res.instance_ids)
    perm = rng.permutation(len(ids))
    train_ids, val_ids, test_ids = list(ids[perm[:400]]), list(ids[perm[400:500]]), list(ids[perm[500:]])
    order = np.argsort(np.nanmean(res.success, 1))
    train, val, new = ([res.llms[i] for i in order[:20]], [res.llms[i] for i in order[20:25]],
                       [res.llms[i] for i in order[-5:]])
    feat = UnigramFeaturizer(max_features=200).fit(res.prompts(train_ids))
    X = feat.transform(res.prompts(train_ids))
    ref_index = np.sort(rng.choice(len(train_ids), 30, replace=False))
    ref_ids = [train_ids[i] for i in ref_index]
    S = res.matrix(train, train_ids)
    S[:16] = 0.0
    val_data = (feat.transform(res.prompts(val_ids)), np.zeros((len(val), len(val_ids)), np.float32),
                np.zeros((len(val), len(ref_ids)), np.float32))
    latent = LatentAssessor(**LATENT).fit(X, S, ref_index, validation=val_data)
    model = AssessorModel(latent, feat, ref_ids, S[:, ref_index], train)
    return {"model": model, "results": res, "new": new, "reference_ids": ref_ids, "test_ids": test_ids}
