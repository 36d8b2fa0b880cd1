# opsbot's container image: `opsbot serve --http` by default (Events API, alert webhooks and
# /healthz on $PORT); `docker run IMAGE serve` is the Socket Mode worker. Deploying it:
# deploy/README.md.
#
#   docker build -t opsbot:0.1.0 .
#   docker run --rm --env-file deploy/.env -e REDIS_URL=redis://redis.example:6379/0
#     -v "$PWD/config/sample:/etc/opsbot:ro" -p 3000:3000 opsbot:0.1.0     (one line)
#
# Nothing secret is in the image: tokens, the signing secret, REDIS_URL and the model key come
# from the environment at run time, the YAML config from a volume at /etc/opsbot/opsbot.yaml.
# `RUN --mount` needs BuildKit, the default builder since Docker 23.

# One Python for both stages, pinned to a patch release (the suite runs on 3.11). For
# reproducible builds pin the digest too: python:3.11.13-slim-bookworm@sha256:...
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

# ---- build: opsbot's wheel and the wheels of everything it needs -------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
# Only what the wheel is made of (pyproject.toml: package-dir bot, tools, config; the readme).
COPY pyproject.toml README.md LICENSE ./
COPY bot ./bot
COPY tools ./tools
COPY config ./config
# The otel extra makes traces possible; they stay off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
RUN pip wheel --wheel-dir /wheels ".[otel]"

# ---- runtime --------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
# tini is PID 1: it forwards SIGTERM to opsbot (which then lets runs in flight finish) and reaps
# the orphans of commands run_command killed, which a Python PID 1 would leave as zombies.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*
# A fixed numeric uid/gid, so Kubernetes' runAsNonRoot can check it and volumes can be chowned.
RUN groupadd --system --gid 10001 opsbot \
    && useradd --system --uid 10001 --gid opsbot --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin opsbot
# Installed from the build stage's wheels only (no index): the wheels never become a layer.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels "opsbot[otel]" \
    && opsbot --help > /dev/null

# OPSBOT_CONFIG: mount the YAML config (and whatever it names: runbooks, log and config roots)
# under /etc/opsbot, read-only. Secrets are never set here: pass them with --env-file / a Secret.
ENV OPSBOT_CONFIG=/etc/opsbot/opsbot.yaml \
    PORT=3000 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
EXPOSE 3000
# /metrics of the Socket Mode worker: OPSBOT_METRICS_PORT, 9464 unless set (0: off). HTTP mode serves
# /metrics on $PORT.
EXPOSE 9464

# For HTTP mode: /healthz answers 200 while Redis answers, 503 (so: unhealthy) otherwise. The
# Socket Mode worker (`serve`) has no HTTP port but its metrics port: run it with
# --no-healthcheck, or with a check of http://127.0.0.1:$OPSBOT_METRICS_PORT/metrics instead
# (deploy/compose.yaml does that).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; u.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '3000'), timeout=4)"]

ENTRYPOINT ["tini", "--", "opsbot"]
CMD ["serve", "--http"]
