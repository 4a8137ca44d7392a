"""Errors a user can act on; each names the input that caused it."""


class KGQAError(Exception):
    """Base class: the CLI prints these as one clear line, never a traceback."""


class BadInputLine(KGQAError):
    def __init__(self, path: str, line: int, reason: str, text: str = ""):
        self.path, self.line, self.reason, self.text = path, line, reason, text
        shown = f": {text[:120]!r}" if text else ""
        super().__init__(f"{path}:{line}: {reason}{shown}")


class StoreError(KGQAError):
    pass


class UnknownKG(StoreError):
    pass


class NoLabelIndex(StoreError):
    """The KG has no text index of its labels (yet): the linker goes on without its fallbacks."""


class EntityNotFound(KGQAError):
    pass
