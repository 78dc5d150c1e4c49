"""The engine's assembly takes built objects: the task layer builds what the config names."""
import pytest

from assessors.errors import ConfigError
from assessors.routing.threshold import ThresholdRouter
from assessors.routing.setup import trust_hook
from assessors.serving.engine import engine_from_settings
from assessors.serving.settings import ServerSettings
from assessors.tasks.config import built


def test_a_custom_trust_node_must_be_built_first():
    with pytest.raises(ConfigError, match="built by the task"):
        trust_hook(None, {"_target_": "my.trust.report"})
    fn = lambda reference: {"ok": True}  # noqa: E731 (a custom report, already built)
    assert trust_hook(None, fn) is fn and trust_hook(None, None) is None


def test_the_task_layer_builds_router_nodes_and_serving_refuses_unbuilt_ones():
    node = {"_target_": "assessors.routing.threshold.ThresholdRouter", "threshold": 0.7}
    router = built(node)
    assert isinstance(router, ThresholdRouter) and router.threshold == 0.7
    assert built({"enabled": True}) == {"enabled": True} and built(None) is None
    # a worker built from settings alone would drop the router: it fails, naming the way to start it
    with pytest.raises(ConfigError, match="predict.py mode=serve"):
        engine_from_settings(ServerSettings(router=node))
