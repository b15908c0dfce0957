"""`${VAR}` and `${VAR:-default}` expansion, exactly as the spec says."""

import pytest

from mcp_gateway.envrefs import ExpansionError, expand

ENV = {"HOME": "/home/ada", "TOKEN": "s3cret", "EMPTY": ""}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "plain"),
        ("${HOME}/bin", "/home/ada/bin"),
        ("Bearer ${TOKEN}", "Bearer s3cret"),
        ("${TOKEN}${TOKEN}", "s3cret" * 2),
        ("${MISSING:-fallback}", "fallback"),
        ("${MISSING:-}", ""),
        ("${EMPTY:-fallback}", ""),  # set but empty is set
        ("${MISSING:-${HOME}}", "${HOME}"),  # a default is not expanded again
        ("${lowercase}", "${lowercase}"),  # lowercase names stay literal
        ("${Mixed}", "${Mixed}"),
        ("$HOME", "$HOME"),  # only the braced form is a reference
    ],
)
def test_expansion(value, expected):
    assert expand(value, "args[0]", ENV) == expected


def test_unset_variable_names_variable_and_field():
    with pytest.raises(ExpansionError) as error:
        expand("Bearer ${API_TOKEN}", "headers.Authorization", ENV)
    assert str(error.value) == (
        "environment variable 'API_TOKEN' is not set (in headers.Authorization)"
    )


@pytest.mark.parametrize("value", ["${HOME", "a ${TOKEN} b ${", "${MISSING:-x"])
def test_unclosed_reference_names_the_field(value):
    with pytest.raises(ExpansionError) as error:
        expand(value, "url", ENV)
    assert str(error.value) == "unclosed '${' in url"
