"""A figure a task logs is rendered once: into the run folder, and the tracked run copies that file."""
from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure
from mlflow.tracking import MlflowClient

from assessors.tasks.wrapper import RunFolderCopy
from assessors.tracking import MlflowTracker, NullTracker


def _figure(renders: list) -> Figure:
    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    savefig = fig.savefig
    fig.savefig = lambda *a, **k: (renders.append(a[0]), savefig(*a, **k))[1]
    return fig


def test_a_figure_is_rendered_once_and_reaches_the_folder_and_the_tracked_run(tmp_path):
    tracker = MlflowTracker(db_path=str(tmp_path / "mlflow.db"), artifact_root=str(tmp_path / "art"), experiment="figs")
    renders = []
    with tracker.start_run("figs") as tracked:
        run = RunFolderCopy(tracked, tmp_path / "folder")
        run.log_figure(_figure(renders), "plots/curve.png")
        run_id = tracked.run_id
    assert renders == [tmp_path / "folder" / "plots" / "curve.png"]
    local = Path(MlflowClient(tracker.uri).download_artifacts(run_id, "plots/curve.png", str(tmp_path / "dl")))
    assert local.read_bytes() == (tmp_path / "folder" / "plots" / "curve.png").read_bytes()


def test_without_a_folder_the_run_renders_the_figure_itself(tmp_path):
    renders = []
    with NullTracker().start_run("figs") as tracked:
        fig = _figure(renders)
        RunFolderCopy(tracked, None).log_figure(fig, "plots/curve.png")
    assert tracked.artifacts["plots/curve.png"] is fig and renders == []
