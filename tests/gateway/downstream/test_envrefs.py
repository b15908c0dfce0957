"""`${VAR}` and `${VAR:-default}` expansion, exactly as the spec says."""

import pytest

from mcp_gateway.downstream.envrefs import ExpansionError, expand

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


def test_only_allowed_names_expand_and_never_the_gateways_own():
    from mcp_gateway.downstream.envrefs import ReferenceEnviron, ReferencePolicy

    environ = ReferenceEnviron(
        {**ENV, "SECRET_KEY": "k", "APP_TOKEN": "t", "FROM_FILE": "f"},
        ReferencePolicy(["TOKEN", "APP_*", "FROM_*", "SECRET_*"], protected=["FROM_FILE"]),
    )
    assert expand("${TOKEN}/${APP_TOKEN}", "url", environ) == "s3cret/t"
    for name, field in [("HOME", "args[0]"), ("SECRET_KEY", "env.X"), ("FROM_FILE", "url")]:
        with pytest.raises(ExpansionError) as error:
            expand(f"${{{name}:-default}}", field, environ)
        assert str(error.value) == f"environment variable '{name}' is not allowed (in {field})"
    assert environ["HOME"] == "/home/ada"  # the gateway itself still reads its environment


def test_env_file_names(tmp_path):
    from mcp_gateway.downstream.envrefs import env_file_names

    env_file = tmp_path / ".env"
    env_file.write_text("# comment\nSECRET_KEY=x\nexport DATABASE_URL = y\n  OTHER=z\nnot a line\n")
    assert env_file_names(env_file) == {"SECRET_KEY", "DATABASE_URL", "OTHER"}
    assert env_file_names(tmp_path / "missing") == frozenset()
