"""``takeover serve-model``: the embedded model as an OpenAI-compatible endpoint on 127.0.0.1
(:mod:`takeover.embedded_model`)."""

from __future__ import annotations

import signal
import sys
import time
from typing import Annotated

import typer

from takeover import embedded_model
from takeover.cli.console import model_progress, output_console
from takeover.cli.failures import command
from takeover.cli.options import ModelPartsOption, ModelPathOption, NCtxOption, VerboseOption
from takeover.embedded_model import EmbeddedModel


def serve_model(
    port: Annotated[int, typer.Option("--port", help="TCP port on 127.0.0.1.")] = 8080,
    model_path: ModelPathOption = None,
    n_ctx: NCtxOption = 16384,
    n_threads: Annotated[
        int | None, typer.Option("--n-threads", help="CPU threads (default: the CPUs available, at most 8).")
    ] = None,
    model_parts: ModelPartsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Serve the embedded model as an OpenAI-compatible endpoint on 127.0.0.1 until Ctrl-C.

    Example:

        takeover serve-model --port 8080    # then: --model openai/... --base-url http://127.0.0.1:8080/v1
    """
    console = output_console(stderr=True)
    model: EmbeddedModel | None = None
    # SIGTERM and a closed terminal end serve-model like Ctrl-C, also while the server starts.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: sys.exit(0))
    try:
        with model_progress(console) as progress_fn:
            model = EmbeddedModel(model_path, port=port, n_ctx=n_ctx, n_threads=n_threads, progress=progress_fn,
                                  model_parts=model_parts)
            t0 = time.monotonic()
            settings = model.start()
        console.print(
            f"[green]serving[/] {model.spec.alias} at [bold]{settings.base_url}[/] "
            f"(ready in {time.monotonic() - t0:.1f} s; usage check {model.usage_check}); log {model.log_path}"
        )
        cached = model.model_path == embedded_model.model_path(model.spec)
        source = embedded_model.weights_source(model.spec) if cached else None
        console.print(f"weights: {model.model_path}" + (f", from {source.describe()}" if source else ""),
                      markup=False, highlight=False)
        speed = model.speed.describe() if model.speed else f"not measured ({model.speed_error})"
        console.print(f"this machine's speed with it, measured now: {speed}", markup=False, highlight=False)
        console.print(f"use it with: --model {settings.model} --base-url {settings.base_url}   (Ctrl-C stops)")
        while model.process is not None and model.process.poll() is None:
            time.sleep(1)
        console.print("[red]the model server exited[/]; see its log")
        raise typer.Exit(1)
    except KeyboardInterrupt:
        pass
    finally:
        if model is not None:
            model.stop()


def register(app: typer.Typer) -> None:
    """Add ``takeover serve-model`` to ``app``."""
    command(app, "serve-model")(serve_model)
