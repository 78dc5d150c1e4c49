"""Train and evaluate assessors from config: ``python train.py [overrides]`` (see conf/train.yaml)."""
import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    from assessors.tasks.entry import run_task

    return run_task(cfg)


if __name__ == "__main__":
    main()
