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
    model = AssessorModel(gen, feat, ref_ids, res.matrix(train_llms, ref_ids), train_llms)
    return {"model": model, "results": res, "train_llms": train_llms, "test_llms": test_llms,
            "test_ids": test_ids, "reference_ids": ref_ids}
