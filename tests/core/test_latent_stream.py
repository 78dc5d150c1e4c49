"""Streaming training of the latent assessor from memory-mapped answers: recovery, sharding, DDP on 2 processes."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.core import latent_stream
from assessors.core.latent import LatentAssessor
from assessors.core.latent_calibration import IDENTITY
from assessors.core.latent_stream import PromptBlocks, StreamingLatentAssessor, count_pairs
from assessors.core.latent_validation import HeldOutScores, early_stopping_scores
from assessors.data.semisynthetic import MISSING, ItemBank, generate, open_answers, writing_answers
from assessors.errors import DataError

FAST = dict(dims=1, hidden_sizes=(16,), dropout=0.0, lr=0.01, weight_decay=1e-4, max_epochs=40, patience=4,
            residual=False, residual_dims=4, num_threads=1)


def _sim(tmp_path, n_llms=200, n=600, d=6, seed=0):
    """LLMs generated from a 1-D IRT model whose item parameters are functions of the features."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    u, v = rng.standard_normal(d) / np.sqrt(d), rng.standard_normal(d) / np.sqrt(d)
    a, b = np.log1p(np.exp(1.5 * X @ u)) + 0.5, 2.0 * X @ v
    bank = ItemBank(np.array([f"i{j}" for j in range(n)]), a[:, None], b, np.zeros(1), np.eye(1))
    return X, bank, generate(bank, n_llms, tmp_path / "answers", seed=seed)


def _recovery(model, X, bank, out):
    theta = np.load(out / "theta.npy")[:, 0]
    a, b = model.item_parameters(X)
    return (abs(np.corrcoef(theta, model.members_[0]["theta"][:, 0])[0, 1]), np.corrcoef(bank.b, b[0])[0, 1],
            abs(np.corrcoef(bank.a[:, 0], a[0][:, 0])[0, 1]))


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return _sim(tmp_path_factory.mktemp("sim"))


@pytest.fixture(scope="module")
def single(sim):
    X, _, out = sim
    return StreamingLatentAssessor(**FAST).fit(X, out, np.arange(0, 600, 10))


def test_abilities_and_item_parameters_are_recovered_from_disk(sim, single):
    X, bank, out = sim
    th, b, a = _recovery(single, X, bank, out)
    assert th > 0.95 and b > 0.95 and a > 0.9, (th, b, a)
    assert single.n_pairs_ == 200 * (600 - 60)  # every pair of the training prompts, once per epoch
    # the fitted model is a LatentAssessor: new LLMs from their reference answers
    p = single.predict_proba(X[:50], np.asarray(open_answers(out)[np.arange(0, 600, 10), :5]).T.astype(float))
    assert p.shape == (5, 50) and np.all((p > 0) & (p < 1))


def test_missing_answers_are_left_out(tmp_path, sim):
    X, bank, out = sim
    A = np.array(open_answers(out))
    A[np.random.default_rng(0).random(A.shape) < 0.3] = MISSING
    np.save(tmp_path / "answers.npy", A)
    assert count_pairs(open_answers(tmp_path / "answers.npy"), np.arange(600)) == int((A != MISSING).sum())
    model = StreamingLatentAssessor(**FAST).fit(X, tmp_path / "answers.npy", np.arange(10))
    assert model.n_pairs_ < 0.75 * 200 * 540
    np.save(tmp_path / "theta.npy", np.load(out / "theta.npy"))
    assert min(_recovery(model, X, bank, tmp_path)) > 0.9


def test_prompt_batches_cover_each_prompt_once_per_epoch_and_ranks_do_not_overlap(sim, monkeypatch):
    X, _, out = sim
    prompts = np.arange(0, 600, 2)  # 300 prompts in batches of 32: 10 batches, the last one short
    seen = [np.unique(x[:, 0].numpy()) for x, *_ in PromptBlocks(str(out / "answers.npy"), X, prompts, 32, 0)]
    flat = np.concatenate(seen)
    assert len(flat) == 300 and set(np.round(flat, 6)) == set(np.round(X[prompts, 0], 6))
    x, li, local, y = next(iter(PromptBlocks(str(out / "answers.npy"), X, prompts, 32, 0)))
    assert x.shape == (32, 6) and len(li) == len(local) == len(y) == 32 * 200  # one block: B prompts x all LLMs
    shards = []
    for rank in (0, 1):
        monkeypatch.setattr(latent_stream, "_rank_world", lambda rank=rank: (rank, 2))
        data = PromptBlocks(str(out / "answers.npy"), X, prompts, 32, 0)
        shards.append(np.concatenate([x[:, 0].numpy() for x, *_ in data]))
        assert len(data) == 5  # the same number of steps on every rank
    assert not set(shards[0]) & set(shards[1])
    assert len(shards[0]) + len(shards[1]) == 300


def test_bad_inputs_are_clear_errors(sim, tmp_path):
    X, _, out = sim
    with pytest.raises(DataError, match="600 prompts .* X has 599"):
        StreamingLatentAssessor(**FAST).fit(X[:599], out, np.arange(10))
    np.save(tmp_path / "f.npy", np.zeros((600, 3), dtype=np.float32))
    with pytest.raises(DataError, match="uint8"):
        StreamingLatentAssessor(**FAST).fit(X, tmp_path / "f.npy", np.arange(10))
    with pytest.raises(DataError, match="graded answers must be 0, 1 or missing"):
        StreamingLatentAssessor(**FAST).fit(X, np.full((3, 600), 0.5), np.arange(10))


def test_an_in_memory_success_matrix_is_streamed_through_a_temporary_file(sim, single):
    X, bank, out = sim
    S = np.asarray(open_answers(out)).T.astype(np.float32)  # (LLMs, prompts), as train.py passes it
    S[0, :7] = np.nan
    model = StreamingLatentAssessor(**FAST).fit(X, S, np.arange(0, 600, 10))
    held = np.random.default_rng(0).permutation(600)[:60]  # the fit's held-out prompts (seed 0)
    assert model.n_pairs_ == np.isfinite(np.delete(S, held, axis=1)).sum() < single.n_pairs_
    assert min(_recovery(model, X, bank, out)) > 0.9


class _Reads(np.ndarray):
    """An answers array that records how many cells each read returns."""

    def __getitem__(self, key):
        out = np.asarray(super().__getitem__(key))
        self.cells.append(out.size)
        return out


def test_held_out_prompts_are_read_and_scored_a_block_at_a_time(sim, single):
    from assessors.threads import torch_threads

    # one torch thread, whatever earlier tests left. The item parameters are float32 network outputs:
    # a block of 5 prompts and all held-out prompts at once can go through different matmul kernels
    # and round apart in the last float32 bits, so the losses agree to float32 precision (1e-6), not
    # float64's; reading the wrong rows or dropping a block would move the loss by far more.
    with torch_threads(1):
        _held_out_blocks(sim)


def _held_out_blocks(sim):
    X, _, out = sim
    A = np.array(open_answers(out))
    A[np.random.default_rng(1).random(A.shape) < 0.2] = MISSING
    held = np.arange(3, 600, 7)
    import torch

    from assessors.core.latent_net import LatentIRTModule
    from assessors.core.latent_validation import _item_parameters

    torch.manual_seed(0)  # the same weights whatever ran before in this process
    module = LatentIRTModule(X.shape[1], A.shape[1], 1, (16,), 0.0).eval()
    module.theta.data.normal_()
    a, b = _item_parameters(module, X[held])
    S = np.where(A[held] == MISSING, np.nan, A[held]).T.astype(np.float64)  # (LLMs, held-out prompts)
    whole = early_stopping_scores(S, 1 / (1 + np.exp(-(module.theta.detach().double().numpy() @ a.T - b))))
    reads = A.view(_Reads)
    reads.cells = []
    blocked = HeldOutScores(reads, X, held, block_cells=5 * 200)(module)  # 5 prompts x 200 LLMs per block
    assert blocked["val_loss"] == pytest.approx(whole["val_loss"], rel=1e-6)
    assert max(reads.cells) <= 5 * 200 and len(reads.cells) == -(-len(held) // 5)
    np.save(out.parent / "masked.npy", A)  # the path form, as the streaming fit passes it (pickles small)
    assert HeldOutScores(str(out.parent / "masked.npy"), X, held, block_cells=7)(module)["val_loss"] == \
        pytest.approx(whole["val_loss"], rel=1e-6)
    # float answers with NaN (the in-memory fit) and the AUC, which needs all blocks at once
    full = np.where(A == MISSING, np.nan, A).astype(np.float32)  # (prompts, LLMs), as LatentAssessor's S.T
    both = HeldOutScores(full, X, held, auc=True, block_cells=1000)(module)
    assert both == pytest.approx(whole, rel=1e-6)


def test_validation_llms_drive_early_stopping_and_recalibration_as_in_memory(sim):
    """With validation LLMs the streaming fit is LatentAssessor's: all prompts, their scores, Platt scaling."""
    X, _, out = sim
    A = np.asarray(open_answers(out)).astype(np.float64)
    ref, val_prompts = np.arange(0, 600, 10), np.arange(5, 600, 10)
    train, val = A[:, :160], A[:, 160:]  # prompt-major: 160 training LLMs, 40 validation LLMs
    validation = (X[val_prompts], val[val_prompts].T, val[ref].T)
    quick = {**FAST, "max_epochs": 12}
    stream = StreamingLatentAssessor(**quick).fit(X, train.T, ref, validation)
    assert stream.n_pairs_ == 160 * 600  # no held-out prompts
    assert stream.calibration_ != IDENTITY
    memory = LatentAssessor(**quick, n_members=1).fit(X, train.T, ref, validation)
    R = A[ref][:, :20].T
    assert np.corrcoef(stream.predict_proba(X, R).ravel(), memory.predict_proba(X, R).ravel())[0, 1] > 0.97
    with pytest.raises(DataError, match="'auc' with validation LLMs"):
        StreamingLatentAssessor(**{**FAST, "monitor": "auc"}).fit(X, out, ref)


@pytest.mark.slow
def test_the_example_exports_answers_by_llm_chunks_and_trains_from_disk(tmp_path, data_dir, shared_cache, monkeypatch):
    """examples/latent_stream_from_disk.py (docs/scaling.md) on two real BBH subtasks."""
    import importlib.util

    monkeypatch.setenv("ASSESSORS_CACHE_DIR", str(shared_cache))
    from tests.docs.blocks import ROOT

    spec = importlib.util.spec_from_file_location("example", ROOT / "examples" / "latent_stream_from_disk.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    res = load_open_llm_leaderboard_v2(subtasks=["bbh_navigate", "bbh_snarks"])
    out = example.run(res, tmp_path, features="unigram", chunk=7, max_epochs=6)
    A = open_answers(out["answers"])
    S = res.matrix(out["train_llms"])  # what the LLM chunks held
    assert A.shape == S.T.shape and out["prompts"] == len(res.instance_ids)
    assert np.array_equal(A, np.where(np.isfinite(S), S, MISSING).T.astype(np.uint8))
    assert out["training_pairs"] == count_pairs(A, np.arange(len(A))) - count_pairs(A, _held(len(A)))
    assert out["new_llms_mean_auc"] > 0.55


def _held(n, fraction=0.1, seed=0):
    return np.random.default_rng(seed).permutation(n)[:int(round(n * fraction))]


def test_answers_are_written_atomically(tmp_path):
    with pytest.raises(RuntimeError):
        with writing_answers(tmp_path / "a", 4, 3) as (_, answers):
            answers[0] = 1
            raise RuntimeError("crash while exporting")
    assert not any(tmp_path.iterdir())  # no half-written directory
    with writing_answers(tmp_path / "a", 4, 3) as (_, answers):
        answers[:2, 1] = 0
    A = open_answers(tmp_path / "a")
    assert (A[:2, 1] == 0).all() and (np.delete(A.ravel(), [1, 4]) == MISSING).all()


@pytest.mark.slow
def test_train_py_runs_with_assessor_latent_stream(compose):
    from assessors.tasks.train import train_assessors

    cfg = compose(["assessor=latent_stream", "features=success_pattern",
                   "data.subtasks=[bbh_navigate,bbh_snarks,bbh_web_of_lies]", "selector.size=30",
                   "llm_split.n_train=30", "llm_split.n_val=6", "llm_split.n_test=6", "assessor.hidden_sizes=[16]",
                   "assessor.max_epochs=8", "assessor.residual_dims=8", "compare.specific=false",
                   "compare.random_selector=false", "classifier.param_grid.n_estimators=[30]", "paper_generic_classifier.param_grid.n_estimators=[30]",
                   "classifier.param_grid.max_depth=[2]", "plots=false"])
    summary = train_assessors(cfg)
    assert summary["auc/headline"] > 0.6


@pytest.mark.slow
def test_ddp_on_two_cpu_processes_fits_as_one_process_does(sim, single):
    """Lightning's DDP (spawn, gloo) on 2 processes on loopback: each reads half of every epoch's batches."""
    X, bank, out = sim
    ddp = StreamingLatentAssessor(**FAST, strategy="ddp_spawn", devices=2).fit(X, out, np.arange(0, 600, 10))
    th, b, a = _recovery(ddp, X, bank, out)
    assert th > 0.95 and b > 0.95 and a > 0.9, (th, b, a)
    assert ddp.members_[0]["epochs"] >= 1
    # the same predictions as the one-process fit, up to the training noise of the two runs
    R = np.asarray(open_answers(out)[np.arange(0, 600, 10), :20]).T.astype(float)
    p1, p2 = single.predict_proba(X, R), ddp.predict_proba(X, R)
    assert np.corrcoef(p1.ravel(), p2.ravel())[0, 1] > 0.97
