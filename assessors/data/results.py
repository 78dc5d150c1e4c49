"""The one in-memory object for instance-level evaluation results.

Every other part of ``assessors`` (splits, featurizers, selectors, assessors, estimators,
routers) consumes a :class:`Results`; loaders are the only code that reads source files.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from assessors.data.columns import require_columns
from assessors.data.names import check_unique, check_whitespace
from assessors.errors import DataError
from assessors.io import atomic_dir

log = logging.getLogger(__name__)

#: Columns every ``instances`` frame has (``prompt``/``target`` may be all-NaN).
INSTANCE_COLUMNS = ("prompt", "subgroup", "target")


@dataclass
class Results:
    """LLM x instance success matrix with instance metadata.

    Parameters
    ----------
    instances : pandas.DataFrame
        One row per instance, indexed by a unique string ``instance_id``. Columns
        ``prompt`` (str or NaN when the source has no text), ``subgroup`` (dataset or
        subtask name) and ``target`` (str or NaN); loaders may add more columns, e.g.
        predefined split columns such as ``Random_split``.
    llms : list of str
        Unique LLM names, one per row of ``success``.
    success : numpy.ndarray of shape (n_llms, n_instances), float32
        1.0 success, 0.0 failure, NaN where the LLM was not evaluated.
    cost : numpy.ndarray of shape (n_llms, n_instances), float32, optional
        Per-cell cost (e.g. USD), NaN where unknown.
    confidence : numpy.ndarray of shape (n_llms, n_instances), float32, optional
        Per-cell confidence in [0, 1] (e.g. normalised probability of the chosen label).
    responses : pandas.DataFrame, optional
        Long table of raw model responses with columns ``llm, instance_id, response``.
    name : str
        Human-readable name of the data set.
    """

    instances: pd.DataFrame
    llms: list[str]
    success: np.ndarray
    cost: np.ndarray | None = None
    confidence: np.ndarray | None = None
    responses: pd.DataFrame | None = None
    name: str = "results"
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.llms = [str(m) for m in self.llms]
        inst = self.instances.copy()
        inst.index = inst.index.astype(str)
        inst.index.name = "instance_id"
        for col in INSTANCE_COLUMNS:
            if col not in inst.columns:
                inst[col] = np.nan
        self.instances = inst
        self.success = np.asarray(self.success, dtype=np.float32)
        shape = (len(self.llms), len(self.instances))
        if self.success.shape != shape:
            raise DataError(f"{self.name}: success matrix has shape {self.success.shape}, expected {shape}")
        for label, arr in (("cost", self.cost), ("confidence", self.confidence)):
            if arr is not None and np.shape(arr) != shape:
                raise DataError(f"{self.name}: {label} matrix has shape {np.shape(arr)}, expected {shape}")
        if self.cost is not None:
            self.cost = np.asarray(self.cost, dtype=np.float32)
        if self.confidence is not None:
            self.confidence = np.asarray(self.confidence, dtype=np.float32)
        check_unique(self.llms, self.name, "LLM name")
        check_unique(self.instances.index, self.name, "instance id")
        # every loader ends here: a name with stray white space would be a second LLM / id / subgroup
        check_whitespace(self.llms, self.name, "LLM name")
        check_whitespace(self.instances.index, self.name, "instance id")
        check_whitespace(self.instances["subgroup"], self.name, "subgroup")
        vals = self.success[~np.isnan(self.success)]
        bad = vals[(vals != 0.0) & (vals != 1.0)]
        if bad.size:
            r, c = np.argwhere(~np.isnan(self.success) & (self.success != 0) & (self.success != 1))[0]
            raise DataError(
                f"{self.name}: non-binary success value {float(self.success[r, c])!r} "
                f"for LLM {self.llms[r]!r}, instance {self.instance_ids[c]!r}"
            )
        if not shape[0] or not shape[1]:
            raise DataError(f"{self.name}: empty selection ({shape[0]} LLMs x {shape[1]} instances)")

    # ------------------------------------------------------------------ views
    @property
    def instance_ids(self) -> list[str]:
        return self.instances.index.tolist()

    @property
    def has_prompts(self) -> bool:
        return bool(self.instances["prompt"].notna().all())

    @property
    def shape(self) -> tuple[int, int]:
        return self.success.shape

    def prompts(self, ids: Sequence[str] | None = None) -> list[str]:
        """Prompt texts for ``ids`` (all instances if None); raises if any is missing."""
        self.require_prompts()
        col = self.instances["prompt"] if ids is None else self.instances.loc[list(ids), "prompt"]
        return col.astype(str).tolist()

    def require_prompts(self) -> None:
        """Raise a :class:`DataError` naming the datasets (and prompt files) of instances without text."""
        missing = self.instances["prompt"].isna()
        if missing.any():
            groups = self.instances.loc[missing, "subgroup"].fillna("<none>").astype(str).value_counts(sort=False)
            files = self.meta.get("missing_prompt_files", {})
            where = ", ".join(f"{g} ({c} items" + (f", expected prompt file {files[g]}" if g in files else "") + ")"
                              for g, c in list(groups.items())[:10])
            raise DataError(
                f"{self.name}: prompt features were requested but {int(missing.sum())} of {len(missing)} instances "
                f"have no prompt text: {where}{' ...' if len(groups) > 10 else ''}. Add the missing prompt files "
                "(or rows), or leave these datasets out of the data selection; validation (validate.exclude) "
                "drops text-less items from a run"
            )

    def llm_index(self, llms: Iterable[str]) -> np.ndarray:
        pos = {m: i for i, m in enumerate(self.llms)}
        try:
            return np.array([pos[m] for m in llms], dtype=int)
        except KeyError as e:
            raise DataError(f"{self.name}: unknown LLM {e.args[0]!r}") from None

    def instance_index(self, ids: Iterable[str]) -> np.ndarray:
        idx = self.instances.index.get_indexer(list(ids))
        if (idx < 0).any():
            bad = [i for i, j in zip(ids, idx) if j < 0][:5]
            raise DataError(f"{self.name}: unknown instance ids {bad}")
        return idx

    def matrix(self, llms: Sequence[str] | None = None, ids: Sequence[str] | None = None) -> np.ndarray:
        """Success sub-matrix of shape (len(llms), len(ids)), float32 with NaN."""
        rows = slice(None) if llms is None else self.llm_index(llms)
        cols = slice(None) if ids is None else self.instance_index(ids)
        return self.success[rows][:, cols]

    def subset(self, llms: Sequence[str] | None = None, ids: Sequence[str] | None = None) -> "Results":
        """A new Results restricted to ``llms`` and instance ``ids`` (order kept)."""
        rows = np.arange(len(self.llms)) if llms is None else self.llm_index(llms)
        cols = np.arange(len(self.instances)) if ids is None else self.instance_index(ids)
        pick = lambda a: None if a is None else a[rows][:, cols]  # noqa: E731
        resp = self.responses
        if resp is not None:
            keep_l = {self.llms[i] for i in rows}
            keep_i = set(self.instances.index[cols])
            resp = resp[resp["llm"].isin(keep_l) & resp["instance_id"].isin(keep_i)]
        return Results(
            instances=self.instances.iloc[cols],
            llms=[self.llms[i] for i in rows],
            success=self.success[rows][:, cols],
            cost=pick(self.cost),
            confidence=pick(self.confidence),
            responses=resp,
            name=self.name,
            meta=dict(self.meta),
        )

    def accuracy(self) -> pd.Series:
        """Mean success per LLM over evaluated cells."""
        return pd.Series(np.nanmean(self.success, axis=1), index=self.llms, name="accuracy")

    def fingerprint(self) -> str:
        """Short content hash of ids, LLMs and matrices (tags MLflow runs)."""
        h = hashlib.sha256()
        h.update(json.dumps([self.llms, self.instance_ids]).encode())
        h.update(np.ascontiguousarray(self.success).tobytes())
        if self.instances["prompt"].notna().any():
            h.update("\x1f".join(self.instances["prompt"].fillna("").astype(str)).encode())
        return h.hexdigest()[:16]

    def __repr__(self) -> str:
        n, m = self.shape
        return f"Results({self.name!r}, {n} LLMs x {m} instances, prompts={self.has_prompts})"

    # ------------------------------------------------------------- long form
    def to_long(self) -> pd.DataFrame:
        """Long table ``llm, instance_id, success[, cost, confidence]`` of evaluated cells."""
        r, c = np.nonzero(~np.isnan(self.success))
        out = {
            "llm": np.asarray(self.llms, dtype=object)[r],
            "instance_id": self.instances.index.to_numpy()[c],
            "success": self.success[r, c],
        }
        if self.cost is not None:
            out["cost"] = self.cost[r, c]
        if self.confidence is not None:
            out["confidence"] = self.confidence[r, c]
        return pd.DataFrame(out)

    @classmethod
    def from_long(
        cls,
        long: pd.DataFrame,
        instances: pd.DataFrame | None = None,
        name: str = "results",
        source: str = "<table>",
    ) -> "Results":
        """Build from a long table (see :meth:`to_long`); ``instances`` indexed by id."""
        require_columns(long, ("llm", "instance_id", "success"), source)
        long = long.copy()
        long["instance_id"] = long["instance_id"].astype(str)
        long["llm"] = long["llm"].astype(str)
        check_unique(pd.MultiIndex.from_frame(long[["llm", "instance_id"]]), source, "(llm, instance_id) pair")
        succ = pd.to_numeric(long["success"], errors="coerce")
        bad = (succ.isna() & long["success"].notna()) | ~succ.isin([0, 1]) & succ.notna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"{source}: non-binary success value {_plain(long['success'].iloc[i])!r} at row {i}, column 'success'")
        long["success"] = succ
        llms = list(dict.fromkeys(long["llm"]))
        if instances is None:
            ids = list(dict.fromkeys(long["instance_id"]))
            instances = pd.DataFrame(index=pd.Index(ids, name="instance_id"))
            if "subgroup" in long.columns:
                # an instance-level column carried in the long table (no prompts table needed)
                per = long.drop_duplicates(["instance_id", "subgroup"])
                clash = per["instance_id"].duplicated()
                if clash.any():
                    raise DataError(f"{source}: instance_id {per['instance_id'][clash].iloc[0]!r} has more than one subgroup")
                instances["subgroup"] = per.set_index("instance_id")["subgroup"].astype(str).reindex(ids).to_numpy()
        else:
            instances = instances.copy()
            instances.index = instances.index.astype(str)
            unknown = set(long["instance_id"]) - set(instances.index)
            if unknown:
                raise DataError(f"{source}: results for instance ids not in the prompts table, e.g. {sorted(unknown)[:5]}")
        r = pd.Index(llms).get_indexer(long["llm"])
        c = instances.index.get_indexer(long["instance_id"])

        def mat(col: str) -> np.ndarray | None:
            if col not in long.columns:
                return None
            m = np.full((len(llms), len(instances)), np.nan, dtype=np.float32)
            m[r, c] = pd.to_numeric(long[col], errors="coerce").to_numpy(dtype=np.float32)
            return m

        return cls(instances=instances, llms=llms, success=mat("success"), cost=mat("cost"),
                   confidence=mat("confidence"), name=name)

    # ---------------------------------------------------------------- parquet
    def to_parquet(self, path: str | os.PathLike) -> Path:
        """Save to a directory of Parquet files, atomically (a crash leaves no partial dir)."""
        path = Path(path)
        inst = self.instances.reset_index()
        for col in inst.columns:  # mixed object columns would break Arrow type inference
            if inst[col].dtype == object:
                inst[col] = inst[col].astype("string")
        with atomic_dir(path) as tmp:
            inst.to_parquet(tmp / "instances.parquet", index=False)
            self.to_long().to_parquet(tmp / "cells.parquet", index=False)
            pd.DataFrame({"llm": self.llms}).to_parquet(tmp / "llms.parquet", index=False)
            if self.responses is not None:
                self.responses.to_parquet(tmp / "responses.parquet", index=False)
            (tmp / "meta.json").write_text(json.dumps({"name": self.name, "meta": self.meta,
                                                       "has_cost": self.cost is not None,
                                                       "has_confidence": self.confidence is not None}, default=str))
        return path

    @classmethod
    def from_parquet(cls, path: str | os.PathLike) -> "Results":
        path = Path(path)
        try:
            meta = json.loads((path / "meta.json").read_text())
            inst = pd.read_parquet(path / "instances.parquet").set_index("instance_id")
            cells = pd.read_parquet(path / "cells.parquet")
            llms = pd.read_parquet(path / "llms.parquet")["llm"].tolist()
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: not a readable Results directory ({e})") from e
        for col in inst.columns:
            if str(inst[col].dtype) == "string":
                inst[col] = inst[col].astype(object).where(inst[col].notna(), np.nan)
        res = cls.from_long(cells, instances=inst, name=meta["name"], source=str(path))
        # keep LLM order and LLMs with no evaluated cell
        res = _reorder_llms(res, llms)
        if not meta.get("has_cost"):
            res.cost = None
        if not meta.get("has_confidence"):
            res.confidence = None
        if (path / "responses.parquet").exists():
            res.responses = pd.read_parquet(path / "responses.parquet")
        res.meta = meta.get("meta", {})
        return res


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def _reorder_llms(res: Results, llms: list[str]) -> Results:
    n = len(res.instances)
    blank = np.full(n, np.nan, dtype=np.float32)
    pos = {m: i for i, m in enumerate(res.llms)}

    def stack(a):
        if a is None:
            return None
        return np.stack([a[pos[m]] if m in pos else blank for m in llms]) if llms else a

    return Results(instances=res.instances, llms=llms, success=stack(res.success), cost=stack(res.cost),
                   confidence=stack(res.confidence), name=res.name)
