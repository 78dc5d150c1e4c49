"""The sweep's ``served`` switch: one setting (``ood_sweep.served``, defaulted in its YAML), read into the
cell's config, where both the config hash and the cell's trust fits see it."""
from __future__ import annotations


def test_the_served_switch_reaches_the_cell_and_its_hash(compose):
    from assessors.grid.resume import config_hash
    from assessors.tasks.ood_sweep import cell_config
    from assessors.tasks.ood_sweep_cell import trust_parts

    cfg = compose(["experiment=ood_sweep"])
    assert cfg.ood_sweep.served is True  # the YAML's default
    on = cell_config(cfg, "ood_logic")
    off = cell_config(compose(["experiment=ood_sweep", "ood_sweep.served=false"]), "ood_logic")
    assert on.grid.served is True and off.grid.served is False
    assert config_hash(on) != config_hash(off)
    times = {}
    assert trust_parts(off, None, None, [], times) is None and times == {}  # nothing fitted for the served rows
