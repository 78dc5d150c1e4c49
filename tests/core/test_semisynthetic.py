"""Semi-synthetic LLMs from an item bank: marginals against the real data, reproducibility, the config option."""
from __future__ import annotations

import numpy as np
import pytest
from hydra.utils import instantiate

from assessors.core.latent import LatentAssessor
from assessors.core.latent_bank import item_bank
from assessors.data.semisynthetic import ItemBank, generate, open_answers
from assessors.errors import DataError

SUBTASKS = "data.subtasks=[bbh_navigate,bbh_snarks,bbh_web_of_lies,bbh_date_understanding]"


@pytest.fixture(scope="module")
def real_bank(tmp_path_factory, data_dir, shared_cache):
    """A latent assessor fitted on 78 real LLMs x 4 BBH subtasks (MiniLM), and its item bank."""
    from hydra import compose, initialize_config_dir

    from tests.conftest import CONF

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=[f"paths.data_dir={data_dir}", f"paths.cache_dir={shared_cache}", SUBTASKS])
    results = instantiate(cfg.data)
    prompts = results.instances["prompt"].astype(str).tolist()
    X = instantiate(cfg.features).fit(prompts).transform(prompts)
    model = LatentAssessor(n_members=1, residual=False, hidden_sizes=(64,), max_epochs=30, seed=0)
    model.fit(X, results.success, np.arange(50))
    bank = item_bank(model, X, results.instances.index, S=results.success)
    path = bank.save(tmp_path_factory.mktemp("bank") / "bank.npz")
    return results, bank, path


@pytest.mark.slow
def test_generated_marginals_match_the_real_data(real_bank, tmp_path):
    """Tolerances: overall accuracy within 0.02; spread (sd) of per-LLM accuracy within 25% of the
    real one; per-item accuracy correlates at >= 0.9 with the real one, mean absolute gap <= 0.05
    (the real per-item accuracies are means over 78 LLMs: about 0.04 of sampling noise alone)."""
    results, bank, _ = real_bank
    real = results.success
    synth = open_answers(generate(bank, 2000, tmp_path / "g", seed=0)).T.astype(np.float64)
    assert synth.shape == (2000, real.shape[1])
    assert abs(synth.mean() - np.nanmean(real)) < 0.02
    real_sd, synth_sd = np.nanmean(real, 1).std(), synth.mean(1).std()
    assert abs(synth_sd / real_sd - 1) < 0.25, (real_sd, synth_sd)
    ri, si = np.nanmean(real, 0), synth.mean(0)
    assert np.corrcoef(ri, si)[0, 1] >= 0.9
    assert np.abs(ri - si).mean() <= 0.05


def _toy_bank(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return ItemBank(np.array([f"i{j}" for j in range(n)]), rng.uniform(0.5, 2, (n, 2)), rng.normal(0, 1.5, n),
                    np.zeros(2), np.eye(2))


def test_same_seed_same_bytes_other_seed_other_answers(tmp_path):
    bank = _toy_bank()
    one = open_answers(generate(bank, 700, tmp_path / "one", seed=5))
    two = open_answers(generate(bank, 700, tmp_path / "two", seed=5))
    other = open_answers(generate(bank, 700, tmp_path / "other", seed=6))
    assert one.dtype == np.uint8 and one.shape == (300, 700)
    assert np.array_equal(one, two)
    assert np.array_equal(np.load(tmp_path / "one" / "theta.npy"), np.load(tmp_path / "two" / "theta.npy"))
    assert (one != other).mean() > 0.2
    # an existing directory is reused as is; another data set in it is an error, not an overwrite
    assert generate(bank, 700, tmp_path / "one", seed=5) == tmp_path / "one"
    with pytest.raises(DataError, match="another semi-synthetic data set"):
        generate(bank, 700, tmp_path / "one", seed=7)
    assert not list(tmp_path.glob(".*tmp*")), "no temporary directory left behind"


def test_answers_follow_the_model_probabilities(tmp_path):
    """Per-LLM and per-item accuracies are those the bank's IRT model implies (binomial noise only)."""
    bank = _toy_bank(seed=1)
    out = generate(bank, 3000, tmp_path / "g", seed=0)
    A = open_answers(out).astype(np.float64)
    theta = np.load(out / "theta.npy")
    P = 1 / (1 + np.exp(-(bank.a @ theta.T - bank.b[:, None])))
    assert np.abs(A.mean(1) - P.mean(1)).max() < 4 * np.sqrt(0.25 / 3000)  # per item, 3000 draws
    assert np.corrcoef(A.mean(0), P.mean(0))[0, 1] > 0.97
    assert abs(theta.mean()) < 0.05 and abs(theta.std() - 1) < 0.05  # the prior N(0, I)


@pytest.mark.slow
def test_data_semisynthetic_config_loads_generated_llms_on_the_real_prompts(compose, data_dir, tmp_path):
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    subtasks = ["bbh_navigate", "bbh_snarks"]
    items = load_open_llm_leaderboard_v2(root=data_dir, subtasks=subtasks)
    toy = _toy_bank(len(items.instances))
    path = ItemBank(np.asarray(items.instances.index, dtype=str), toy.a, toy.b, toy.prior_mean, toy.prior_cov).save(
        tmp_path / "bank.npz")
    cfg = compose(["data=semisynthetic", f"data.bank={path}", "data.n_llms=120", f"data.cache_dir={tmp_path}",
                   f"data.items.subtasks=[{','.join(subtasks)}]"])
    synth = instantiate(cfg.data)
    assert synth.success.shape == (120, len(items.instances))
    assert list(synth.instances.index) == list(items.instances.index)
    assert synth.instances["prompt"].equals(items.instances["prompt"])
    assert set(np.unique(synth.success)) == {0.0, 1.0}
    assert len(list((tmp_path / "semisynthetic").iterdir())) == 1, "kept on disk for the next run"
    with pytest.raises(Exception, match="scale_latent.py --bank-only"):
        instantiate(compose(["data=semisynthetic", f"data.bank={tmp_path}/none.npz"]).data)
    other = load_open_llm_leaderboard_v2(root=data_dir, subtasks=["bbh_web_of_lies"])
    with pytest.raises(DataError, match="fitted on other data"):
        from assessors.data.semisynthetic import load_semisynthetic

        load_semisynthetic(path, 10, other, cache_dir=tmp_path)
