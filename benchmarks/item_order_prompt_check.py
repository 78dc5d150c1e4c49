"""Which of the two item orders in the leaderboard CSVs matches the prompt files? Prints JSON.

``item_order_check.py`` splits the 78 CSV LLMs into group A (in ``musr.npz``'s item order) and
group B (another order). Here the prompt text decides: on BBH subtasks with a binary target
(True/False, yes/no, valid/invalid), an LLM biased towards one answer succeeds more often on items
whose target is that answer, so its 0/1 row correlates with the target label *only if the row is in
the prompt files' item order*. A permuted row correlates at chance level (about 1/sqrt(n) = 0.06).

Usage: python benchmarks/item_order_prompt_check.py
"""
import numpy as np, pandas as pd, json
from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
from assessors.data.loaders.score_matrix import load_score_matrix
csv = load_open_llm_leaderboard_v2(subtasks=["bbh_*", "musr_*"])
npz = load_score_matrix("musr", items=load_open_llm_leaderboard_v2(subtasks=["musr_*"], prompts=False))
g = csv.instances["subgroup"].to_numpy()
def corr(a,b): return float(np.corrcoef(a,b)[0,1]) if a.std()>0 and b.std()>0 else np.nan
best=[]
for sub in ["musr_murder_mysteries","musr_object_placements","musr_team_allocation"]:
    cols=np.flatnonzero(g==sub); p=npz.success[:, npz.instance_index([csv.instance_ids[c] for c in cols])].mean(0)
    best.append([corr(csv.success[k,cols],p) for k in range(len(csv.llms))])
best=np.nanmax(np.array(best),0); A=best>0.15
tgt=csv.instances["target"].astype(str).str.strip().str.lower()
out={}
for sub,pos in [("bbh_boolean_expressions","true"),("bbh_sports_understanding","yes"),("bbh_navigate","yes"),("bbh_web_of_lies","yes"),("bbh_causal_judgement","yes"),("bbh_formal_fallacies","valid")]:
    cols=np.flatnonzero(g==sub); y=(tgt.to_numpy()[cols]==pos).astype(float)
    c=np.array([corr(csv.success[k,cols],y) for k in range(len(csv.llms))])
    out[sub]={"A_mean_abs_corr":round(float(np.nanmean(np.abs(c[A]))),3),"B_mean_abs_corr":round(float(np.nanmean(np.abs(c[~A]))),3),"pos_share":round(float(y.mean()),2)}
print(json.dumps({"group_A_npz_order": int(A.sum()), "group_B": int((~A).sum()), "subtasks": out}, indent=1))
