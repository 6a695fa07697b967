"""The OpenAI client's request building (`providers/openai_client.py`): the same requests as the SDK's own."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ci_grade.providers import openai_client
from ci_grade.providers.openai_client import MAX_KINDS, UNSENT_KEY, client_class
from ci_grade.providers.openai_sdk import sdk as import_sdk
from tests.provider_helpers import make
from tests.servers.llm_server import LLMServer

openai = import_sdk()  # as ci-grade imports it (its type packages deferred)
FinalRequestOptions = openai._models.FinalRequestOptions
KEY = "sk-test-0123456789"  # the key the `openai_env` fixture sets
BODY = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "Grade this: café ✓ \u2028 \"quoted\""}], "temperature": 0}


def options(body: Any = BODY, **extra: Any) -> Any:
    return FinalRequestOptions.construct(method="post", url="/chat/completions", json_data=body, **extra)


def lean(**kwargs: Any) -> Any:
    return client_class()(api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=30.0, **kwargs)


def sdk(**kwargs: Any) -> Any:
    return openai.AsyncOpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=30.0, **kwargs)


def signature(request: Any) -> tuple[Any, ...]:
    return (request.method, str(request.url), request.headers.raw, request.content, request.extensions)


def test_requests_on_the_wire_are_the_sdks(openai_env: LLMServer) -> None:
    """Three grader calls through the provider's client and three through a plain SDK client: the
    server receives the same headers and bodies (the first is built by the SDK, the second is
    checked against it, the third is a copy)."""
    prompts = ["first", "second: ünïcode ✓", "third " * 50]

    async def go() -> Any:
        provider: Any = make("openai:chat:gpt-4.1-mini")
        plain = openai.AsyncOpenAI(api_key=KEY, base_url=openai_env.openai_base_url, max_retries=0, timeout=120.0)
        try:
            for prompt in prompts:
                body = provider.chat_body(prompt)
                assert (await provider.client().post("/chat/completions", cast_to=str, body=body)).startswith("{")
                assert (await plain.post("/chat/completions", cast_to=str, body=body)).startswith("{")
            return provider.client()
        finally:
            await provider.aclose()
            await plain.close()

    client = asyncio.run(go())
    assert isinstance(client, openai.AsyncOpenAI)
    recorded = openai_env.requests_to("/v1/chat/completions")
    assert len(recorded) == 6
    for ours, theirs in zip(recorded[0::2], recorded[1::2], strict=True):
        assert ours.headers == theirs.headers
        assert ours.body == theirs.body
    assert recorded[4].json["messages"][0]["content"] == "third " * 50
    assert recorded[0].headers["user-agent"].startswith("AsyncOpenAI/Python ")
    assert [template.verified for template in client._lean_templates.values()] == [True]


@pytest.mark.parametrize("retries_taken", [0, 2])
@pytest.mark.parametrize("client_options", [{}, {"organization": "org-1", "project": "proj-2", "default_headers": {"X-Team": "evals"}}])
def test_built_requests_equal_the_sdks(retries_taken: int, client_options: dict[str, Any]) -> None:
    ours, theirs = lean(**client_options), sdk(**client_options)
    for body in (BODY, {**BODY, "messages": [{"role": "user", "content": "other"}]}, {"model": "m", "input": "x"}):
        for _ in range(3):
            built = ours._build_request(options(body), retries_taken=retries_taken)
            assert signature(built) == signature(theirs._build_request(options(body), retries_taken=retries_taken))
    assert [template.verified for template in ours._lean_templates.values()] == [True]


def test_a_call_timeout_is_its_own_kind() -> None:
    ours, theirs = lean(), sdk()
    for timeout in (5.0, 7.5, 5.0, 7.5, 5.0):
        built = ours._build_request(options(timeout=timeout))
        assert built.headers["x-stainless-read-timeout"] == str(timeout)
        assert signature(built) == signature(theirs._build_request(options(timeout=timeout)))
    assert len(ours._lean_templates) == 2


def test_a_kind_whose_copies_differ_is_built_by_the_sdk_from_then_on() -> None:
    """A header the SDK sets per call (as a new SDK version might) shows up in the check of a kind's
    second request: from then on that kind is the SDK's own, every header right."""
    counter = iter(range(1, 100))

    class PerCallHeader(client_class()):  # type: ignore[misc]
        def _build_headers(self, options: Any, *, retries_taken: int = 0) -> Any:
            headers = super()._build_headers(options, retries_taken=retries_taken)
            headers["x-call"] = str(next(counter))
            return headers

    client = PerCallHeader(api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0)
    sent = [client._build_request(options()).headers["x-call"] for _ in range(4)]
    # the second request's copy still carries "1": the check finds it and sends the SDK's instead
    assert sent == ["1", "2", "3", "4"]
    assert list(client._lean_templates.values()) == [None]


@pytest.mark.parametrize(
    "extra",
    [{"headers": {"X-Trace": "t1"}}, {"params": {"api-version": "1"}}, {"extra_json": {"seed": 1}}, {"method": "get", "json_data": None}],
    ids=["headers", "params", "extra_json", "get"],
)
def test_requests_beyond_plain_json_posts_are_the_sdks(extra: dict[str, Any]) -> None:
    ours, theirs = lean(), sdk()
    made = {"method": "post", "url": "/chat/completions", "json_data": BODY, **extra}
    for _ in range(3):
        built = ours._build_request(FinalRequestOptions.construct(**made))
        assert signature(built) == signature(theirs._build_request(FinalRequestOptions.construct(**made)))
    assert not getattr(ours, "_lean_templates", {})


def test_kinds_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_client, "MAX_KINDS", 3)
    ours, theirs = lean(), sdk()
    for _ in range(2):
        for n in range(5):
            built = ours._build_request(FinalRequestOptions.construct(method="post", url=f"/path{n}", json_data=BODY))
            assert signature(built) == signature(theirs._build_request(FinalRequestOptions.construct(method="post", url=f"/path{n}", json_data=BODY)))
    assert len(ours._lean_templates) == 3
    assert MAX_KINDS == 32


def test_the_client_class_is_the_sdks_async_client_with_lean_requests() -> None:
    made = client_class()
    assert issubclass(made, openai.AsyncOpenAI) and issubclass(made, openai_client.LeanRequests) and made.__name__ == "AsyncOpenAI"


def test_an_sdk_without_the_private_names_read_gets_its_own_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """An SDK version whose requests lack what a copy reads (here a name the template takes from
    the SDK's request) still sends every request right: the client falls back to the SDK's own
    building for good."""
    client, theirs = lean(), sdk()
    monkeypatch.setattr(openai_client._Template, "__init__", lambda self, lib, request: request.renamed_in_a_new_version)
    for _ in range(3):
        assert signature(client._build_request(options())) == signature(theirs._build_request(options()))
    assert client.__dict__["_lean_off"] is True and not client.__dict__.get("_lean_templates")


class Recording(client_class()):  # type: ignore[misc]
    """Records the request options `post` hands to `request`, and sends nothing."""

    def __init__(self, **kwargs: Any):
        super().__init__(api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0, **kwargs)
        self.seen: list[Any] = []

    async def request(self, cast_to: Any, options: Any, **kwargs: Any) -> Any:
        self.seen.append((options, kwargs))
        return "sent"


def sdk_options(path: str, body: Any) -> Any:
    return FinalRequestOptions.construct(method="post", url=path, json_data=body, content=None, files=None)


def test_plain_json_posts_get_the_sdks_request_options() -> None:
    """The first post to a path gets the SDK's own options, the second a copy checked against them,
    later ones copies: each equal to what the SDK makes, with its own body."""
    client = Recording()
    bodies = [BODY, {**BODY, "temperature": 1}, {"model": "m", "input": "x"}, BODY]

    async def go() -> None:
        for body in bodies:
            assert await client.post("/chat/completions", cast_to=str, body=body) == "sent"
        assert await client.post("/embeddings", cast_to=str, body=BODY) == "sent"

    asyncio.run(go())
    assert len(client.seen) == 5
    copied = [False, True, True, True, False]  # the first post to each path gets the SDK's own options
    for (made, kwargs), (path, body), copy in zip(client.seen, [*(("/chat/completions", b) for b in bodies), ("/embeddings", BODY)], copied, strict=True):
        expected = sdk_options(path, body)
        assert made.idempotency_key == (UNSENT_KEY if copy else None)  # no header sends it: no random key to make
        made.idempotency_key = None
        assert repr(made) == repr(expected) and made.model_fields_set - {"idempotency_key"} == expected.model_fields_set
        assert made.json_data == body and kwargs.get("stream", False) is False
    assert [entry[1] for entry in client._lean_post_options.values()] == [True, False]  # /embeddings was seen once


def test_a_client_that_sends_idempotency_keys_gets_a_new_one_per_call(openai_env: LLMServer) -> None:
    """Under an idempotency header, copied options leave the key to the SDK: a fresh one per call."""

    async def go() -> None:
        client = client_class()(api_key=KEY, base_url=openai_env.openai_base_url, max_retries=0, timeout=30.0)
        client._idempotency_header = "Idempotency-Key"  # as the SDK's clients for some APIs have
        for _ in range(3):
            await client.post("/chat/completions", cast_to=bytes, body=BODY)
        await client.close()

    asyncio.run(go())
    keys = [request.headers.get("idempotency-key") for request in openai_env.requests[-3:]]
    assert all(key and key != UNSENT_KEY for key in keys) and len(set(keys)) == 3


def test_post_options_that_differ_from_the_sdks_are_the_sdks_from_then_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Options the SDK would make differently per call (as a new SDK version might) show up in the
    check of a path's second post: from then on that path gets the SDK's own options."""
    counter = iter(range(1, 100))
    construct = FinalRequestOptions.construct

    def per_call(*args: Any, **values: Any) -> Any:
        return construct(*args, **values, idempotency_key=f"key-{next(counter)}")

    monkeypatch.setattr(FinalRequestOptions, "construct", per_call)
    client = Recording()

    async def go() -> None:
        for _ in range(4):
            await client.post("/chat/completions", cast_to=str, body=BODY)

    asyncio.run(go())
    # key-1: the prototype, key-2: the SDK's first; the second post's copy (key-1) differs from
    # the check's (key-3), so the SDK makes it (key-4) and every later one
    assert [made.idempotency_key for made, _ in client.seen] == ["key-2", "key-4", "key-5", "key-6"]
    assert client._lean_post_options == {"/chat/completions": None}


@pytest.mark.parametrize(
    "extra",
    [{"options": {"headers": {"X-Trace": "t1"}}}, {"stream": True, "stream_cls": None}, {"files": None, "content": None}],
    ids=["options", "stream", "files"],
)
def test_posts_beyond_plain_json_get_the_sdks_options(extra: dict[str, Any]) -> None:
    client = Recording()

    async def go() -> None:
        for _ in range(3):
            await client.post("/chat/completions", cast_to=str, body=BODY, **extra)

    asyncio.run(go())
    assert len(client.seen) == 3 and not client.__dict__.get("_lean_post_options")
    made, kwargs = client.seen[-1]
    assert made.json_data == BODY and kwargs["stream"] is bool(extra.get("stream"))
    if "options" in extra:
        assert made.headers == {"X-Trace": "t1"}


def test_copied_post_options_share_no_dict_with_each_other() -> None:
    """Each copy has its own params, security and body dicts (the SDK makes fresh ones per call), so
    a change to one request's options cannot reach another's."""
    client = Recording()

    async def go() -> None:
        for _ in range(3):
            await client.post("/chat/completions", cast_to=str, body=BODY)

    asyncio.run(go())
    second, third = client.seen[1][0], client.seen[2][0]
    for name in ("params", "security", "json_data"):
        assert getattr(second, name) == getattr(third, name) and getattr(second, name) is not getattr(third, name)
    assert third.json_data is not BODY


def test_paths_whose_post_options_are_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_client, "MAX_KINDS", 3)
    client = Recording()

    async def go() -> None:
        for _ in range(3):
            for n in range(5):
                await client.post(f"/path{n}", cast_to=str, body=BODY)

    asyncio.run(go())
    assert list(client._lean_post_options) == ["/path0", "/path1", "/path2"]
    assert [made.url for made, _ in client.seen] == [f"/path{n}" for n in range(5)] * 3
    for made, _ in client.seen:
        expected = sdk_options(made.url, BODY)
        assert made.idempotency_key in (None, UNSENT_KEY)
        made.idempotency_key = None
        assert repr(made) == repr(expected) and made.model_fields_set - {"idempotency_key"} == expected.model_fields_set


def test_cookies_the_api_sets_are_not_kept(openai_env: LLMServer) -> None:
    """An API that sets cookies (OpenAI's edge sets Cloudflare's `__cf_bm` on every reply) gets
    none back, as from promptfoo's fetch, and requests stay copies of the first one."""
    openai_env.on_chat(reply="ok", headers={"Set-Cookie": "__cf_bm=abc123; path=/; HttpOnly"})

    async def go() -> Any:
        provider: Any = make("openai:chat:gpt-4.1-mini")
        try:
            for prompt in ("one", "two", "three", "four"):
                await provider.client().post("/chat/completions", cast_to=bytes, body=provider.chat_body(prompt))
            return provider.client()
        finally:
            await provider.aclose()

    client = asyncio.run(go())
    recorded = openai_env.requests_to("/v1/chat/completions")
    assert len(recorded) == 4
    assert [request.headers.get("cookie", request.headers.get("Cookie")) for request in recorded] == [None] * 4
    assert not client._client.cookies
    assert [template.verified for template in client._lean_templates.values()] == [True]
