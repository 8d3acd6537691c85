"""The project's exception types. Every message names the field, the value and the rule."""


class DescError(ValueError):
    """An invalid descriptor, attribute set or model."""

    def __init__(self, field: str, value, rule: str):
        self.field, self.value, self.rule = field, value, rule
        super().__init__(f"{field}={_short(value)}: {rule}")


class ConversionError(DescError):
    """A conversion that cannot be exact."""


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def require(ok: bool, field: str, value, rule: str, kind=DescError) -> None:
    if not ok:
        raise kind(field, value, rule)
