"""Every featurizer option: the protocol callers rely on instead of asking for its family.

A featurizer names what it reads (``reads``: prompts or results) and builds that input itself
(``inputs``); ``featurize_parts`` and the tasks featurize every option the same way.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from sklearn.base import clone

from assessors.errors import DataError
from assessors.features.dask_fanout import DaskFanoutFeaturizer
from assessors.features.ngrams import UnigramFeaturizer
from assessors.features.parts import featurize_parts
from assessors.features.success_pattern import SuccessPatternFeaturizer
from tests.conftest import small_prep

OPTIONS = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "conf" / "features").glob("*.yaml"))

prep = small_prep("features_contract", ["bbh_navigate"], 8, 2, 3)


@pytest.mark.parametrize("name", OPTIONS)
def test_every_option_states_what_it_reads(compose, name):
    featurizer = instantiate(compose([f"features={name}"]).features)  # __init__ only stores params
    assert featurizer.reads == ("results" if name == "success_pattern" else "prompts")
    assert isinstance(featurizer.learns_from_texts, bool)
    assert callable(featurizer.inputs) and callable(featurizer.fit) and callable(featurizer.transform)
    assert clone(featurizer).reads == featurizer.reads


# cheap options of both kinds, bare and wrapped: one caller path for all of them
CASES = {"unigram": lambda: UnigramFeaturizer(max_features=50),
         "success_pattern": SuccessPatternFeaturizer,
         "dask_unigram": lambda: DaskFanoutFeaturizer(UnigramFeaturizer(max_features=50), min_texts=10**9),
         "dask_success_pattern": lambda: DaskFanoutFeaturizer(SuccessPatternFeaturizer())}


@pytest.mark.parametrize("case", sorted(CASES))
def test_parts_are_the_transform_of_each_part(prep, case):
    """featurize_parts (fit on train, one transform over all parts) equals transforming each part
    on its own: the inputs a featurizer builds are per instance, whatever it reads."""
    parts = {k: prep.inst[k] for k in ("train", "val", "test")}
    out = featurize_parts(CASES[case](), prep.results, parts, "train", prep.llms["train"])
    ref = CASES[case]()
    ref.fit(ref.inputs(prep.results, parts["train"], prep.llms["train"]))
    for k, ids in parts.items():
        X = ref.transform(ref.inputs(prep.results, ids, prep.llms["train"]))
        assert out[k].shape == (len(ids), X.shape[1]) and out[k].dtype == np.float32
        np.testing.assert_allclose(out[k], X, rtol=1e-6, atol=1e-6)


def test_reading_results_needs_no_prompt_text(prep):
    """A featurizer that reads results works on a score matrix without prompts; one that reads
    prompts names the missing text."""
    no_text = prep.results.subset()
    no_text.instances["prompt"] = None
    parts = {"train": prep.inst["train"], "test": prep.inst["test"]}
    X = featurize_parts(SuccessPatternFeaturizer(), no_text, parts, "train", prep.llms["train"])
    assert X["test"].shape == (len(parts["test"]), len(prep.llms["train"]))
    with pytest.raises(DataError):
        featurize_parts(UnigramFeaturizer(), no_text, parts, "train", prep.llms["train"])
