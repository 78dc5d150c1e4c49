"""The Hydra callback that stops a run before Hydra writes a literal secret to its output dir.

The rules of what a secret is live in :mod:`assessors.secrets`; this is only their Hydra hook.
"""
from __future__ import annotations

from hydra.experimental.callback import Callback

from assessors.secrets import find_secrets, secret_refusal
from assessors.tasks.config import plain


class RefuseSecretsCallback(Callback):
    """Hydra callback: stop a run or sweep before Hydra writes a literal secret to its output dir.

    ``on_run_start`` / ``on_multirun_start`` run before Hydra creates the job directory, so a
    refused run leaves nothing on disk. Redacting the files after Hydra wrote them would leave a
    window in which a kill keeps the secret, and a resolver cannot reach ``overrides.yaml`` (the
    raw command line); refusing is the only way the secret never persists.
    """

    def _check(self, config) -> None:
        # unresolved: an ${oc.env:...} interpolation is not a literal secret
        found = find_secrets(plain(config, resolve=False))
        # the command line repeats in hydra.overrides / override_dirname: name the settings themselves
        found = [p for p in found if not p.startswith("hydra.")] or found
        if found:
            # Hydra turns a callback's exceptions into warnings and goes on; SystemExit stops it
            raise SystemExit(f"ConfigError: {secret_refusal(found)}")

    def on_run_start(self, config, **kwargs) -> None:
        self._check(config)

    def on_multirun_start(self, config, **kwargs) -> None:
        self._check(config)
