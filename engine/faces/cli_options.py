"""The CLI's method flags, generated from the method registry: one flag per option any method takes
(`--width/-K`, `--max-steps`, …), each with its range and help, defaulting to "the method's own".

    @app.command()
    @method_flags
    def ask(question: str, method: MethodOpt = "kgfr", method_options: dict = None): ...

The decorated command receives the flags the user gave as `method_options` (a dict, checked later
against the chosen method by the registry: a flag of another method is an error naming both)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

from kgqa.methods import REGISTRY

PLACEHOLDER = "method_options"


def _flag_parameters() -> list[inspect.Parameter]:
    params = []
    for name, (spec, users) in REGISTRY.all_options().items():
        long = "--" + name.replace("_", "-")
        if spec.type is bool:
            names = [f for f in spec.flags if "/" in f] or [f"{long}/--no-{name.replace('_', '-')}"]
            names += [f for f in spec.flags if "/" not in f]
        else:
            names = [long, *spec.flags]
        extra: dict[str, Any] = {}
        if spec.type in (int, float):
            extra = {k: v for k, v in (("min", spec.min), ("max", spec.max)) if v is not None}
        choices = f" ({' | '.join(spec.choices)})" if spec.choices and "|" not in spec.help else ""
        help_text = f"{spec.help}{choices} ({', '.join(users)}; default {spec.default!r})"
        option = typer.Option(*names, help=help_text, show_default=False, **extra)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Annotated[Optional[spec.type], option]))  # type: ignore[name-defined]
    return params


def method_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """Replace the command's `method_options` parameter by the registry's flags."""
    signature = inspect.signature(command, eval_str=True)
    if PLACEHOLDER not in signature.parameters:
        raise TypeError(f"{command.__name__} needs a `{PLACEHOLDER}` parameter")
    flags = _flag_parameters()
    clash = {p.name for p in flags} & set(signature.parameters)
    if clash:
        raise TypeError(f"{command.__name__}: method option(s) {sorted(clash)} clash with the command's own parameters")
    names = [p.name for p in flags]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in names if kwargs.get(name) is not None}
        for name in names:
            kwargs.pop(name, None)
        return command(**kwargs, **{PLACEHOLDER: given})

    own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values() if p.name != PLACEHOLDER]
    wrapper.__signature__ = signature.replace(parameters=own + flags)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in own + flags}
    del wrapper.__wrapped__  # typer must read the generated signature, not the original one
    return wrapper
