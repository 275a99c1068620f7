"""The error tree: wire codes and the round trip through ErrorShape."""

from __future__ import annotations

import pytest

from gsv_core import errors
from gsv_core.errors import GsvError
from gsv_core.errors import error_from_shape

ALL_ERRORS = sorted(
    (cls for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, GsvError)),
    key=lambda cls: cls.__name__,
)


def test_the_tree_covers_every_code_of_the_house_style() -> None:
    """Each protocol code (docs/protocol.md#error-codes) has an error class."""
    codes = {cls.code for cls in ALL_ERRORS}
    assert {101, 102, 103, 400, 401, 403, 404, 409, 429, 500, 502, 503, 504} <= codes


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda cls: cls.__name__)
def test_every_error_class_round_trips_through_error_shape(cls: type[GsvError]) -> None:
    """Encoding an error and rebuilding it keeps code, message, details and retryable,
    and yields the class that owns the code (a superclass of, or the class itself)."""
    original = cls("something failed", details={"field": "x"})
    shape = original.to_error_shape()
    assert shape["code"] == cls.code
    rebuilt = error_from_shape(shape)
    # the bare base class is 500, which InternalError owns on the wire
    assert isinstance(original, type(rebuilt)) or (cls is GsvError and rebuilt.code == 500)
    assert rebuilt.code == cls.code
    assert rebuilt.message == "something failed"
    assert rebuilt.details == {"field": "x"}
    assert rebuilt.retryable == original.retryable
    assert ("retryable" in shape) == original.retryable


def test_retryable_is_set_where_retrying_can_help() -> None:
    """Unavailable, timeouts, rate limits and provider failures are retryable; bad params are not."""
    assert errors.Unavailable("x").retryable
    assert errors.TimedOut("x").retryable
    assert errors.RateLimited("x").retryable
    assert errors.ProviderFailed("x").retryable
    assert not errors.InvalidParams("x").retryable
    assert "retryable" not in errors.NotFound("x").to_error_shape()


def test_unknown_codes_and_malformed_shapes_still_become_errors() -> None:
    """A code we do not know keeps its number; garbage becomes a 500 GsvError."""
    unknown = error_from_shape({"code": 418, "message": "teapot"})
    assert type(unknown) is GsvError
    assert unknown.code == 418
    assert unknown.message == "teapot"
    garbage = error_from_shape("nope")
    assert garbage.code == 500
    assert "malformed" in garbage.message
