"""What every face knows about a method comes from here: its name, a typed options dataclass (with
ranges, choices and help), whether it needs an LLM, its bound on LLM calls, and a factory.

A method's sub-package declares one `Method`; `kgqa.methods.REGISTRY` lists them. The CLI's flags,
the service's request schema and `/v1/methods`, the SDK's keyword arguments and `kgqa eval --method`
are all read off the registry, so adding a method is its folder plus one line in
`kgqa/methods/__init__.py`.

    option(3, "LMP width K", min=1, flags=("-K",))      # one field of an options dataclass
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import threading
import time
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kgqa.core.answer import Answer
from kgqa.core.store import GraphStore
from kgqa.llm.protocol import LLM

Runner = Callable[[str, "list[str] | None"], Answer]
NeedsLLM = Literal["no", "optional", "yes"]
OPTION_TYPES = (bool, int, float, str)
log = logging.getLogger(__name__)


def option(default: Any, help: str, *, min: float | None = None, max: float | None = None,
           choices: Sequence[str] | None = None, flags: Sequence[str] = ()) -> Any:
    """A field of a method's options dataclass. `flags` are extra CLI spellings (`-K`, or
    `--on/--off` names for a bool); the long flag is always `--name-with-dashes`."""
    return field(default=default, metadata={"help": help, "min": min, "max": max,
                                            "choices": tuple(choices) if choices else None, "flags": tuple(flags)})


def checkpoint_or_bundled(given: str | Path | None, fmt: str, bundled: Path) -> Path:
    """`given` when its config.json says it is a checkpoint of format `fmt` (an engine's --checkpoint
    may be another method's, which this method leaves alone), else `bundled`. A `given` folder that
    holds no readable checkpoint at all (a mistyped path) is an error, not a silent fallback."""
    return Path(given) if given and checkpoint_format(given) == fmt else bundled


def checkpoint_format(folder: str | Path) -> str | None:
    """The `format` a checkpoint folder's config.json names; ValueError naming the folder when there is
    no checkpoint there."""
    config = Path(folder) / "config.json"
    try:
        return json.loads(config.read_text()).get("format")
    except FileNotFoundError:
        raise ValueError(f"--checkpoint {folder}: no checkpoint there ({config} does not exist)") from None
    except (OSError, ValueError, AttributeError) as error:
        raise ValueError(f"--checkpoint {folder}: {config} cannot be read as a checkpoint's config ({error})") from None


def one_call_with_an_llm(options: Any, topics: int, has_llm: bool) -> int:
    """The call bound of a method that asks an LLM once, where it has one (rapl)."""
    return 1 if has_llm else 0


@dataclass(frozen=True)
class OptionSpec:
    name: str
    type: type
    default: Any
    help: str
    min: float | None
    max: float | None
    choices: tuple[str, ...] | None
    flags: tuple[str, ...]

    def check(self, value: Any, method: str) -> Any:
        """The value as this option's type, or ValueError naming the option, the method and the rule."""
        where = f"option {self.name!r} of method {method!r}"
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise ValueError(f"{where} must be {self.type.__name__}, got {value!r}")
        if self.min is not None and value < self.min:
            raise ValueError(f"{where} must be >= {self.min:g}, got {value!r}")
        if self.max is not None and value > self.max:
            raise ValueError(f"{where} must be <= {self.max:g}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{where} must be one of {', '.join(self.choices)}, got {value!r}")
        return value

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type.__name__, "default": self.default, "help": self.help, "min": self.min, "max": self.max,
                "choices": list(self.choices) if self.choices else None}


@dataclass
class MethodContext:
    """What a factory builds a runner from. `shared` keeps what several runners of one engine use
    (a loaded checkpoint, the scoring batcher) so that a new option set does not load it again."""

    store: GraphStore
    llm: LLM | None = None
    checkpoint: str | Path | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # engine-wide knobs, e.g. the batcher's window
    _shared: dict[Any, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def shared(self, key: Any, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self._shared:
                self._shared[key] = make()
            return self._shared[key]

    def close(self) -> None:
        with self._lock:
            resources, self._shared = list(self._shared.values()), {}
        for resource in resources:
            close = getattr(resource, "close", None)
            if callable(close):
                close()


@functools.cache
def _option_specs(method: str, options: type) -> tuple[OptionSpec, ...]:
    """Read once per options class: every question's options are checked against these."""
    hints = typing.get_type_hints(options)
    specs = []
    for f in dataclasses.fields(options):
        kind = hints[f.name]
        if kind not in OPTION_TYPES:
            raise TypeError(f"method {method!r}: option {f.name!r} must be one of bool, int, float, str, not {kind}")
        specs.append(OptionSpec(f.name, kind, f.default, f.metadata.get("help", ""), f.metadata.get("min"),
                                f.metadata.get("max"), f.metadata.get("choices"), f.metadata.get("flags", ())))
    return tuple(specs)


@dataclass(frozen=True)
class Method:
    name: str
    summary: str  # one line, for --help, /v1/methods and the README table
    options: type  # a frozen dataclass whose fields are `option(...)`s
    needs_llm: NeedsLLM
    call_bound: Callable[[Any, int, bool], int]  # (options, topic entities, has an LLM) → most LLM calls per question
    call_bound_text: str
    build: Callable[[MethodContext, Any], Runner]

    def option_specs(self) -> list[OptionSpec]:
        return list(_option_specs(self.name, self.options))

    def make_options(self, values: dict[str, Any] | None = None, base: Any = None) -> Any:
        """`base` (default: the dataclass's defaults) with `values` checked and applied."""
        values = values or {}
        specs = {s.name: s for s in self.option_specs()}
        unknown = sorted(set(values) - set(specs))
        if unknown:
            known = ", ".join(specs) or "none"
            raise ValueError(f"unknown option(s) {unknown} for method {self.name!r}: its options are {known}")
        checked = {name: specs[name].check(value, self.name) for name, value in values.items()}
        return dataclasses.replace(base if base is not None else self.options(), **checked)

    def runs_with(self, has_llm: bool) -> bool:
        return has_llm or self.needs_llm != "yes"


class Registry:
    def __init__(self, methods: Sequence[Method]):
        self._methods = {m.name: m for m in methods}
        if len(self._methods) != len(methods):
            raise ValueError("two methods share a name")
        self.all_options()  # fails at import when two methods spell one option differently

    def register(self, method: Method) -> None:
        """Add a method (a plugin's, or a test's) before the faces that read the registry are imported:
        the CLI's flags and the service's schema are generated when their modules load."""
        if method.name in self._methods:
            raise ValueError(f"a method named {method.name!r} is registered already")
        self._methods[method.name] = method
        try:
            self.all_options()
        except ValueError:
            del self._methods[method.name]
            raise

    def __iter__(self) -> Iterator[Method]:
        return iter(self._methods.values())

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._methods)

    def get(self, name: str) -> Method:
        if name not in self._methods:
            raise ValueError(f"unknown method {name!r}: choose one of {', '.join(self._methods)}")
        return self._methods[name]

    def all_options(self) -> dict[str, tuple[OptionSpec, list[str]]]:
        """Every option name once, with the methods that take it (one CLI flag, one schema field each).
        Two methods may share an option only with the same type and flags; its help is each one's, in turn."""
        merged: dict[str, tuple[OptionSpec, list[str]]] = {}
        for method in self:
            for spec in method.option_specs():
                if spec.name in merged:
                    first, users = merged[spec.name]
                    if (first.type, first.flags) != (spec.type, spec.flags):
                        raise ValueError(f"option {spec.name!r} of {method.name!r} differs in type or flags from {users[0]!r}'s")
                    users.append(method.name)
                    if spec.help not in first.help:
                        merged[spec.name] = (dataclasses.replace(first, help=f"{first.help} {spec.help}"), users)
                else:
                    merged[spec.name] = (spec, [method.name])
        return merged

    def build(self, name: str, context: MethodContext, options: Any = None) -> Runner:
        method = self.get(name)
        if not method.runs_with(context.llm is not None):
            raise ValueError(f"method {name!r} needs an LLM (--llm)")
        if options is None or isinstance(options, dict):
            options = method.make_options(options)
        runner = method.build(context, options)
        has_llm = context.llm is not None

        def run(question: str, topics: list[str] | None = None) -> Answer:
            started = time.perf_counter()
            answer = runner(question, topics)
            answer.trace.seconds.setdefault("total", time.perf_counter() - started)
            bound = method.call_bound(options, len(answer.topics), has_llm)
            if len(answer.trace.llm_calls) > bound:  # a method's bug, not the user's: say so, keep the answer
                log.error("method %r made %d LLM calls, over its declared bound %d", name, len(answer.trace.llm_calls), bound)
            return answer

        return run
