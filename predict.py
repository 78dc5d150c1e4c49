"""Use a trained assessor for new LLMs: ``python predict.py mode=score|route|serve|onboard|calibrate_task [overrides]``
(see conf/predict.yaml)."""
import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="conf", config_name="predict")
def main(cfg: DictConfig) -> None:
    from assessors.tasks.entry import run_task

    run_task(cfg)


if __name__ == "__main__":
    main()
