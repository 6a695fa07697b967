"""Which values the redactor learns as secrets: auth-like keys under a provider's `config` or
`headers` but not the same keys elsewhere (test metadata is not a credential), the variables that
template tags read, secret-looking environment names, and uncommon values of an `env:` block."""

from __future__ import annotations

import json

from ci_grade.redact import Redactor, is_auth_key, is_secret_name


def test_an_auth_like_header_is_collected_but_not_the_same_key_elsewhere() -> None:
    assert is_auth_key("X-Custom-Auth") and not is_secret_name("X-Custom-Auth")
    redactor = Redactor([])
    redactor.collect({
        "providers": [{"id": "https://api.example.invalid/chat", "headers": {"X-Custom-Auth": "Tk9-secret-Value"}}],
        "tests": [{"metadata": {"X-Custom-Auth": "Zq8-visible-Value"}}],
    })
    masked = redactor.text("sent Tk9-secret-Value for Zq8-visible-Value")
    assert "Tk9-secret-Value" not in masked
    assert "Zq8-visible-Value" in masked


def test_signature_passwords_are_learned_but_not_where_the_key_is() -> None:
    redactor = Redactor([])
    auth = {"privateKeyPath": "keys/client.pem", "keystorePath": "store.jks", "keyAlias": "client-alias", "keystorePassword": "Store-Pw-91", "keyPassword": "Key-Pw-82"}
    redactor.collect({"providers": [{"id": "http", "config": {"signatureAuth": auth}}]})
    masked = redactor.text("keys/client.pem store.jks client-alias Store-Pw-91 Key-Pw-82")
    assert masked == "keys/client.pem store.jks client-alias *** ***"
    redactor.learn_env({"PROMPTFOO_JKS_PASSWORD": "Jks-Pw-771", "PROMPTFOO_PFX_PASSWORD": "Pfx-Pw-662"})
    assert redactor.text("Jks-Pw-771 Pfx-Pw-662") == "*** ***"


def test_env_references_in_a_template_tag_teach_the_variables_value() -> None:
    redactor = Redactor([])
    tag_only = "{% if env.SVC_TOKEN %}on{% endif %}"
    redactor.collect({"providers": [{"id": "x", "config": {"apiKey": tag_only, "regionEnvar": "SVC_REGION"}}]}, {"SVC_TOKEN": "s3cr3t-token-value", "SVC_REGION": "eu-west-1"})
    masked = redactor.text(f"sent s3cr3t-token-value to eu-west-1 from {tag_only}")
    assert "s3cr3t-token-value" not in masked
    assert "eu-west-1" in masked and tag_only in masked  # a region variable is no credential


def test_only_secret_looking_env_names_and_uncommon_values_are_learned() -> None:
    redactor = Redactor([])
    redactor.learn_env({"EDITOR": "nano-editor-x", "OPENAI_API_KEY": "sk-abcdef123456", "EMPTY_TOKEN": ""})
    redactor.learn_values({"mode": "fast and simple", "endpoint_id": "Zq81-internal", "retries": 3})  # type: ignore[dict-item]
    masked = redactor.text("nano-editor-x sk-abcdef123456 fast and simple Zq81-internal")
    assert masked.startswith("nano-editor-x ") and "sk-abcdef123456" not in masked
    assert "fast and simple" in masked and "Zq81-internal" not in masked


def test_action_inputs_are_not_secrets_for_their_names() -> None:
    # the runner names INPUT_* after the action's inputs: cluster-key holds a metadata key, min-pass-rate a number
    redactor = Redactor([])
    redactor.learn_env({"INPUT_CLUSTER_KEY": "document", "INPUT_MIN_PASS_RATE": "0.5000", "INPUT_CLUSTER-KEY": "document"})
    assert redactor.text("clustered by document at 0.5000") == "clustered by document at 0.5000"


def test_credentials_written_into_urls_are_learned() -> None:
    redactor = Redactor([])
    config = {"providers": [
        {"id": "openai:chat:gpt-4.1-mini", "config": {"apiBaseUrl": "http://admin:Hunter2-Passw0rd@127.0.0.1:9/v1"}},
        {"id": "https://api.example/x?api_key=Query-Secret-77&token=Tok-Secret-88&model=gpt-4o-mini-2024"},
    ], "tests": [{"vars": {"links": ["see https://reader:Listed-Secret-5@docs.example/a"]}}]}
    redactor.collect(config, {})
    redactor.learn_env({"HTTPS_PROXY": "http://proxyuser:Proxy-Secret-9@proxy:3128"})
    text = redactor.text(json.dumps(config) + " HTTPS_PROXY=http://proxyuser:Proxy-Secret-9@proxy:3128")
    for secret in ("Hunter2-Passw0rd", "Query-Secret-77", "Tok-Secret-88", "Listed-Secret-5", "Proxy-Secret-9"):
        assert secret not in text
    assert "model=gpt-4o-mini-2024" in text and "admin:***@127.0.0.1" in text  # the rest stays readable
