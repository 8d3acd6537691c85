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


def one_of(value, options, field: str) -> str:
    """A string that must be one of `options` (never hashed before its type is checked)."""
    require(isinstance(value, str) and value in options, field, value, f"must be one of {list(options)}")
    return value


def int_list(value, field: str, minimum: int = 1, length=None) -> list:
    """A list of integers >= minimum (optionally of a given length)."""
    require(isinstance(value, (list, tuple)), field, value, "must be a list of integers")
    if length is not None:
        require(len(value) == length, field, value, f"must be a list of {length} integers")
    require(all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in value), field, value,
            f"every entry must be an integer >= {minimum}")
    return list(value)


def flag(value, field: str) -> bool:
    require(isinstance(value, bool), field, value, "must be true or false")
    return value
