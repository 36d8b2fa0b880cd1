"""The deployment files (Dockerfile, .dockerignore, deploy/), checked as far as a machine with no
Docker daemon and no cluster allows: nothing here builds the image or starts a container.

- Dockerfile: parsed with dockerfile-parse; its HEALTHCHECK command is run against a local server.
- deploy/compose.yaml: `docker compose config` where Compose is installed, and loaded as YAML.
- deploy/k8s/: every manifest validated strictly (unknown fields are errors) against the JSON
  schemas kubernetes-validate bundles, which are generated from Kubernetes' own OpenAPI
  definitions (github.com/willthames/kubernetes-validate, a fork of garethr/kubernetes-json-schema,
  `*-local-strict`); the kustomization rendered with `kubectl kustomize` where kubectl is
  installed; the ConfigMap's opsbot.yaml checked by `opsbot check-config`.
- deploy/systemd/: `systemd-analyze verify` and `systemd-analyze security --offline`.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner
from dockerfile_parse import DockerfileParser
from pydantic import SecretStr

from opsbot.bot.cli import main
from opsbot.bot.slack import posting
from opsbot.config.settings import LoopLimits, ModelSettings, Settings
from opsbot.tools.redact import redact_text

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
K8S = DEPLOY / "k8s"
SYSTEMD = DEPLOY / "systemd"
UNITS = {"opsbot.service": ["serve"], "opsbot-web.service": ["serve", "--http"]}

# A schema of a Kubernetes release still widely run, and the newest one kubernetes-validate bundles.
K8S_VERSIONS = ("1.33.0", kubernetes_validate.utils.latest_version())
SECRET_NAME = "opsbot-secrets"
UID = 10001
METRICS_PORT = 9464  # OPSBOT_METRICS_PORT's default for Socket Mode
HTTP_PORT = 3000
SLACK_CLIENT_TIMEOUT_S = 15  # the Web API client's timeout (bot/slack/app.py)

# Settings read from the environment that hold secrets or credentials: only ever from a Secret.
SECRET_VARS = {
    field.validation_alias
    for field in Settings.model_fields.values()
    if field.annotation == SecretStr | None and isinstance(field.validation_alias, str)
} | {"REDIS_URL"}  # may carry a password
SECRET_NAMES = re.compile(r"TOKEN|SECRET|PASSWORD|API_KEY|CREDENTIAL|PRIVATE", re.IGNORECASE)
SECRET_SHAPES = re.compile(r"xox[abposr]-\d+-|xapp-\d-|sk-[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}")


def run_bound_s() -> float:
    """How long a run in flight may take to finish after SIGTERM, from opsbot's own defaults: the
    loop's time budget (checked between steps), then the step under way (a tool call and the
    last model call), then posting the answer (the Slack client's timeout plus the time a lost
    post is looked for before it is posted again)."""
    limits, llm = LoopLimits(), ModelSettings()
    post = SLACK_CLIENT_TIMEOUT_S + posting.Pacing().grace_s  # the class default, not the tests' PACING
    return limits.time_budget_s + limits.tool_timeout_s + llm.timeout_s + post


def seconds(value: str | int) -> float:
    """`300`, `300s`, `5min`, `5m`, `1m30s` (systemd's and Compose's durations) in seconds."""
    text = str(value).strip()
    if text.isdigit():
        return float(text)
    units = {"h": 3600, "min": 60, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(min|ms|h|m|s)", text)
    assert parts and "".join(n + u for n, u in parts) == text.replace(" ", ""), f"not a duration: {value!r}"
    return sum(float(n) * units[u] for n, u in parts)


# ---- Dockerfile -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dockerfile() -> DockerfileParser:
    parser = DockerfileParser(str(DOCKERFILE), cache_content=True)
    parser.content  # noqa: B018 - read it once, here, so a missing file fails every test that needs it
    return parser


def stages(parser: DockerfileParser) -> list[list[dict[str, Any]]]:
    """The instructions of each stage, FROM first (ARGs before the first FROM are left out)."""
    found: list[list[dict[str, Any]]] = []
    for instruction in parser.structure:
        if instruction["instruction"] == "FROM":
            found.append([])
        if found and instruction["instruction"] != "COMMENT":
            found[-1].append(instruction)
    return found


def values(stage: list[dict[str, Any]], name: str) -> list[str]:
    return [i["value"] for i in stage if i["instruction"] == name]


def test_the_base_is_python_slim_pinned_to_a_patch_release(dockerfile: DockerfileParser) -> None:
    assert dockerfile.is_multistage
    bases = dockerfile.parent_images  # ARGs substituted
    assert len(bases) >= 2
    for base in bases:
        assert re.fullmatch(r"python:3\.\d+\.\d+-slim(-[a-z]+)?(@sha256:[0-9a-f]{64})?", base), base
    assert len(set(bases)) == 1, "every stage on the same Python"


def test_the_wheel_is_built_in_a_stage_and_installed_from_it_alone(dockerfile: DockerfileParser) -> None:
    build, *_, final = stages(dockerfile)
    name = build[0]["value"].split()[-1]
    assert re.search(r"\bAS\s+\S+$", build[0]["value"], re.IGNORECASE), "the build stage is named"
    assert any("pip wheel" in run for run in values(build, "RUN"))
    installs = [run for run in values(final, "RUN") if "pip install" in run]
    assert len(installs) == 1
    assert f"from={name}" in installs[0] and "--no-index" in installs[0]
    assert not values(final, "COPY"), "the runtime stage copies nothing from the build context"


def test_the_build_copies_everything_the_wheel_is_made_of(dockerfile: DockerfileParser) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    needed |= {"pyproject.toml", pyproject["project"]["readme"]}
    build = stages(dockerfile)[0]
    copied = {source for copy in values(build, "COPY") for source in copy.split()[:-1] if not source.startswith("--")}
    assert needed <= copied
    for source in copied:
        assert (ROOT / source).exists(), source


def test_the_image_runs_as_a_numeric_non_root_user(dockerfile: DockerfileParser) -> None:
    users = values(stages(dockerfile)[-1], "USER")
    assert users, "the final stage sets USER"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) == UID and group in ("", str(UID))
    # Kubernetes runs the same uid, so runAsNonRoot can check it and files stay readable.
    for deployment in deployments().values():
        assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == UID


def test_the_default_command_is_opsbot_serve_http(dockerfile: DockerfileParser) -> None:
    final = stages(dockerfile)[-1]
    entrypoint = json.loads(values(final, "ENTRYPOINT")[-1])
    cmd = json.loads(values(final, "CMD")[-1])
    assert entrypoint[-1] == "opsbot" and set(entrypoint[:-1]) <= {"tini", "--"}
    assert cmd == ["serve", "--http"]
    env = dockerfile.envs
    assert env["OPSBOT_CONFIG"] == "/etc/opsbot/opsbot.yaml"
    assert env["PORT"] == str(HTTP_PORT)
    exposed = {port for expose in values(final, "EXPOSE") for port in expose.split()}
    assert {str(HTTP_PORT), str(METRICS_PORT)} <= exposed


def healthcheck_argv(dockerfile: DockerfileParser) -> list[str]:
    checks = values(stages(dockerfile)[-1], "HEALTHCHECK")
    assert len(checks) == 1
    options, marker, command = checks[0].partition("CMD ")
    assert marker and "--interval=" in options and "--timeout=" in options
    return list(json.loads(command))


class _Server:
    """A local HTTP server answering each path with the status given for it (404 otherwise)."""

    def __init__(self, statuses: dict[str, int]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(statuses.get(self.path, 404))
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[_Server]:
    running = _Server(request.param)
    yield running
    running.close()


def run_check(argv: list[str], env: dict[str, str]) -> int:
    assert argv[0] == "python"  # the image's python, here the suite's
    return subprocess.run([sys.executable, *argv[1:]], env=env, capture_output=True, timeout=10).returncode


@pytest.mark.parametrize(
    ("server", "healthy"),
    [({"/healthz": 200}, True), ({"/healthz": 503}, False), ({"/metrics": 200}, False)],
    indirect=["server"],
)
def test_the_healthcheck_asks_healthz_on_port(dockerfile: DockerfileParser, server: _Server, healthy: bool) -> None:
    argv = healthcheck_argv(dockerfile)
    assert "/healthz" in argv[-1]
    assert (run_check(argv, {"PORT": str(server.port)}) == 0) is healthy


def test_no_secret_is_baked_into_the_image(dockerfile: DockerfileParser) -> None:
    assert not [i for i in dockerfile.structure if i["instruction"] == "ADD"], "COPY only: ADD fetches and unpacks"
    for instruction in dockerfile.structure:
        if instruction["instruction"] in ("ENV", "ARG", "LABEL"):
            for key in re.findall(r"([A-Za-z_][A-Za-z0-9_.-]*)=", instruction["value"]):
                assert not SECRET_NAMES.search(key), instruction["content"]
        if instruction["instruction"] == "COPY":
            assert not re.search(r"\.env\b|secret|\.pem|\.key\b|credentials", instruction["value"], re.I)
    text = DOCKERFILE.read_text()
    assert not SECRET_SHAPES.search(text)
    assert redact_text(text) == text, "opsbot's own redaction finds a secret in the Dockerfile"


def test_dockerignore_keeps_env_files_and_clutter_out_of_the_context() -> None:
    patterns = set((ROOT / ".dockerignore").read_text().split())
    assert {"**/.env", "**/.env.*", ".git/", ".venv/", "deploy/", "tests/"} <= patterns
    assert not [p for p in patterns if p.startswith("!")], "nothing is let back in"


# ---- Compose ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def test_docker_compose_accepts_the_file() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker CLI on PATH")
    version = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=10)
    if version.returncode != 0:
        said = (version.stderr.strip() or version.stdout.strip()).splitlines()
        pytest.skip(f"`docker compose version` fails here ({said[0] if said else version.returncode}): no Compose")
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin", "OPSBOT_ENV_FILE": str(DEPLOY / "env.example")}
    for profile in ([], ["--profile", "http"]):
        result = subprocess.run(
            [docker, "compose", "-f", str(COMPOSE), *profile, "config", "--quiet"],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
        assert result.returncode == 0, result.stderr


def test_redis_keeps_its_data_on_a_volume(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    command = " ".join(redis["command"]) if isinstance(redis["command"], list) else redis["command"]
    assert re.search(r"--appendonly\s+yes\b", command)
    assert re.search(r"--maxmemory-policy\s+noeviction\b", command)
    volume, _, target = redis["volumes"][0].partition(":")
    assert target == "/data" and volume in compose["volumes"]
    assert re.fullmatch(r"redis:\d+\.\d+\.\d+(-[a-z]+)?", redis["image"]), "pinned, not latest"


def test_every_service_has_a_healthcheck_and_a_restart_policy(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert service["healthcheck"]["test"][0] == "CMD", name
        assert service["restart"] in ("unless-stopped", "always", "on-failure"), name


def test_opsbot_is_built_from_the_dockerfile_and_given_time_to_finish_runs(compose: dict[str, Any]) -> None:
    opsbots = {name: s for name, s in compose["services"].items() if name != "redis"}
    assert set(opsbots) == {"opsbot", "opsbot-web"}
    for name, service in opsbots.items():
        build = service["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE, name
        assert service["env_file"] == [{"path": "${OPSBOT_ENV_FILE:-.env}", "required": True}], name
        assert service["depends_on"] == {"redis": {"condition": "service_healthy"}}, name
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0", name
        assert service["environment"]["OPSBOT_CONFIG"] == "/etc/opsbot/opsbot.yaml", name
        assert service["volumes"][0].endswith(":/etc/opsbot:ro"), name
        assert seconds(service["stop_grace_period"]) >= run_bound_s(), name
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"], name
        # Secrets come from the env file; REDIS_URL here is the compose network's Redis, with no password.
        assert not (SECRET_VARS - {"REDIS_URL"}) & set(service["environment"]), name
        assert "@" not in service["environment"]["REDIS_URL"], name
    assert opsbots["opsbot"]["command"] == ["serve"]
    assert opsbots["opsbot-web"]["command"] == ["serve", "--http"]
    assert opsbots["opsbot-web"]["profiles"] == ["http"]


def compose_check(service: dict[str, Any]) -> list[str]:
    test = service["healthcheck"]["test"]
    assert test[0] == "CMD"
    return list(test[1:])


@pytest.mark.parametrize(
    ("server", "healthy"), [({"/metrics": 200}, True), ({"/healthz": 200}, False)], indirect=["server"]
)
def test_the_workers_healthcheck_asks_its_metrics_port(compose: dict[str, Any], server: _Server, healthy: bool) -> None:
    worker = compose["services"]["opsbot"]
    assert worker["environment"]["OPSBOT_METRICS_PORT"] == str(METRICS_PORT)
    assert f"127.0.0.1:{METRICS_PORT}:{METRICS_PORT}" in worker["ports"]
    assert (run_check(compose_check(worker), {"OPSBOT_METRICS_PORT": str(server.port)}) == 0) is healthy


@pytest.mark.parametrize(
    ("server", "healthy"), [({"/healthz": 200}, True), ({"/healthz": 503}, False)], indirect=["server"]
)
def test_the_webs_healthcheck_asks_healthz(compose: dict[str, Any], server: _Server, healthy: bool) -> None:
    web = compose["services"]["opsbot-web"]
    assert web["environment"]["PORT"] == str(HTTP_PORT)
    assert (run_check(compose_check(web), {"PORT": str(server.port)}) == 0) is healthy


def env_example() -> dict[str, str]:
    pairs = {}
    for line in (DEPLOY / "env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep and key == key.strip(), line
            pairs[key] = value
    return pairs


def test_env_example_names_only_settings_opsbot_reads_and_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    example = env_example()
    known = {f.validation_alias for f in Settings.model_fields.values() if isinstance(f.validation_alias, str)}
    known |= {f"OPSBOT_{name.upper()}" for name in Settings.model_fields}
    assert set(example) <= known
    assert {"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "OPENAI_API_KEY"} <= set(example)
    assert all(example[name] == "" for name in SECRET_VARS & set(example))
    for name, value in example.items():
        monkeypatch.setenv(name, value)
    assert Settings().slack_bot_token is None  # empty means "not set", and the file parses as settings
    text = (DEPLOY / "env.example").read_text()
    assert redact_text(text) == text


def test_no_deploy_file_holds_a_secret() -> None:
    """opsbot's own redaction (tools/redact/) finds nothing in what is meant to be committed; the
    Secret example is the one file shaped like a secret, and it holds placeholders (below)."""
    files = [COMPOSE, DEPLOY / "README.md", *SYSTEMD.glob("*.service"), *K8S.glob("*.yaml")]
    for path in files:
        if path.name != "secret.example.yaml":
            text = path.read_text()
            assert redact_text(text) == text, path
            assert not SECRET_SHAPES.search(text), path


# ---- Kubernetes -------------------------------------------------------------------------------


@functools.cache
def _manifests() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            (document,) = yaml.safe_load_all(path.read_text())
            found[path.name] = document
    return found


def manifests() -> dict[str, dict[str, Any]]:
    """Every Kubernetes object under deploy/k8s by file name (one object a file), a copy to change."""
    return copy.deepcopy(_manifests())


def kustomization() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return loaded


def deployments() -> dict[str, dict[str, Any]]:
    found = {d["metadata"]["name"]: d for d in manifests().values() if d["kind"] == "Deployment"}
    assert set(found) == {"opsbot-worker", "opsbot-web"}
    return found


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(only)


def test_the_kustomization_lists_every_manifest_but_the_secret_example() -> None:
    resources = kustomization()["resources"]
    assert sorted(resources) == sorted(set(manifests()) - {"secret.example.yaml"})
    kinds = {manifests()[name]["kind"] for name in resources}
    assert "Secret" not in kinds
    assert kinds == {"Namespace", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget"}


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("name", sorted(manifests()))
def test_every_manifest_is_valid_kubernetes(name: str, version: str) -> None:
    kubernetes_validate.validate(manifests()[name], version, strict=True)


def test_validation_is_strict_enough_to_catch_a_typo() -> None:
    broken = manifests()["web-deployment.yaml"]
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"httpGet": {"path": "/healthz"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSIONS[-1], strict=True)


def test_kubectl_kustomize_renders_the_directory() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl on PATH")
    result = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert len(rendered) == len(kustomization()["resources"])
    image = kustomization()["images"][0]
    for document in rendered:
        if document["kind"] != "Namespace":
            assert document["metadata"]["namespace"] == kustomization()["namespace"]
        if document["kind"] == "Deployment":
            assert container(document)["image"] == f"{image['newName']}:{image['newTag']}"


def test_both_deployments_recreate_and_wait_for_runs_in_flight() -> None:
    """Recreate: a process refuses a job queued by a newer version, so versions are never mixed
    (docs/operations.md, Upgrading). The grace period covers the longest a run may still take after SIGTERM."""
    for name, deployment in deployments().items():
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}, name
        assert deployment["spec"]["replicas"] == 2, name
        pod = deployment["spec"]["template"]["spec"]
        pre_stop = container(deployment).get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command")
        pause = float(pre_stop[1]) if pre_stop else 0.0
        assert pod["terminationGracePeriodSeconds"] >= run_bound_s() + pause, name
    assert container(deployments()["opsbot-worker"])["args"] == ["serve"]
    assert container(deployments()["opsbot-web"])["args"] == ["serve", "--http"]


def test_every_pod_is_locked_down() -> None:
    for name, deployment in deployments().items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["enableServiceLinks"] is False, name  # they would inject OPSBOT_*_PORT variables
        box = container(deployment)
        security = box["securityContext"]
        assert security["readOnlyRootFilesystem"] is True, name
        assert security["allowPrivilegeEscalation"] is False, name
        assert security["capabilities"] == {"drop": ["ALL"]}, name
        for kind in ("requests", "limits"):
            assert set(box["resources"][kind]) == {"cpu", "memory"}, name
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: m for m in box["volumeMounts"]}
        assert "emptyDir" in volumes[mounts["/tmp"]["name"]], f"{name}: a writable /tmp on a read-only root"
        config = mounts["/etc/opsbot"]
        assert config["readOnly"] is True
        assert volumes[config["name"]]["configMap"]["name"] == manifests()["configmap.yaml"]["metadata"]["name"]
        assert {"name": "OPSBOT_CONFIG", "value": "/etc/opsbot/opsbot.yaml"} in box["env"], name


def test_secrets_are_only_referenced() -> None:
    example = manifests()["secret.example.yaml"]
    for name, deployment in deployments().items():
        box = container(deployment)
        for source in box.get("envFrom", []):
            assert set(source) <= {"secretRef", "configMapRef", "prefix"}, name
        for var in box["env"]:
            if var["name"] in SECRET_VARS or SECRET_NAMES.search(var["name"]):
                assert "value" not in var, f"{name}: {var['name']} is a literal"
                ref = var["valueFrom"]["secretKeyRef"]
                assert ref["name"] == SECRET_NAME and ref["key"] == var["name"], name
                assert ref["key"] in example["stringData"], f"secret.example.yaml lacks {ref['key']}"
        required = {
            v["name"] for v in box["env"] if "valueFrom" in v and not v["valueFrom"]["secretKeyRef"].get("optional")
        }
        mode = {"opsbot-worker": "SLACK_APP_TOKEN", "opsbot-web": "SLACK_SIGNING_SECRET"}[name]
        assert required == {"SLACK_BOT_TOKEN", "REDIS_URL", mode}, name


def test_the_secret_example_holds_placeholders_only() -> None:
    example = manifests()["secret.example.yaml"]
    assert example["metadata"]["name"] == SECRET_NAME
    assert "data" not in example
    for key, value in example["stringData"].items():
        if key in SECRET_VARS:
            assert "REPLACE-ME" in value, key
        assert not SECRET_SHAPES.search(value), key


def test_the_web_is_ready_on_healthz_and_alive_without_redis() -> None:
    """Readiness is /healthz (503 while Redis does not answer: no traffic). Liveness must not be,
    or a Redis outage would restart every pod and lose what each holds until Redis is back."""
    web = container(deployments()["opsbot-web"])
    (port,) = web["ports"]
    assert port == {"name": "http", "containerPort": HTTP_PORT}
    assert {"name": "PORT", "value": str(HTTP_PORT)} in web["env"]
    assert web["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert web["livenessProbe"]["tcpSocket"] == {"port": "http"}
    assert web["startupProbe"]["tcpSocket"] == {"port": "http"}
    worker = container(deployments()["opsbot-worker"])
    assert not {"readinessProbe", "livenessProbe"} & set(worker), "Socket Mode serves no /healthz"


def test_the_service_reaches_the_web_pods() -> None:
    service = manifests()["web-service.yaml"]
    web = deployments()["opsbot-web"]
    assert service["spec"]["selector"] == web["spec"]["selector"]["matchLabels"]
    assert web["spec"]["selector"]["matchLabels"].items() <= web["spec"]["template"]["metadata"]["labels"].items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]


def test_a_disruption_budget_guards_each_deployment() -> None:
    budgets = [d for d in manifests().values() if d["kind"] == "PodDisruptionBudget"]
    assert len(budgets) == 2
    for deployment in deployments().values():
        selector = deployment["spec"]["selector"]
        (budget,) = [b for b in budgets if b["spec"]["selector"] == selector]
        assert budget["spec"].get("maxUnavailable", 0) < deployment["spec"]["replicas"]
        assert "minAvailable" not in budget["spec"]


def test_prometheus_scrapes_each_pods_metrics_port() -> None:
    for name, deployment in deployments().items():
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true", name
        assert annotations["prometheus.io/path"] == "/metrics", name
        ports = {p["containerPort"] for p in container(deployment)["ports"]}
        assert int(annotations["prometheus.io/port"]) in ports, name
    worker = container(deployments()["opsbot-worker"])
    assert worker["ports"] == [{"name": "metrics", "containerPort": METRICS_PORT}]
    assert {"name": "OPSBOT_METRICS_PORT", "value": str(METRICS_PORT)} in worker["env"]
    web = deployments()["opsbot-web"]["spec"]["template"]["metadata"]["annotations"]
    assert web["prometheus.io/port"] == str(HTTP_PORT)  # HTTP mode serves /metrics on $PORT


def test_the_configmaps_config_passes_check_config(tmp_path: Path) -> None:
    data = manifests()["configmap.yaml"]["data"]
    assert set(data) == {"opsbot.yaml"}  # OPSBOT_CONFIG=/etc/opsbot/opsbot.yaml
    path = tmp_path / "opsbot.yaml"
    path.write_text(data["opsbot.yaml"])
    result = CliRunner().invoke(main, ["check-config", str(path)])
    assert result.exit_code == 0, result.output
    assert not SECRET_NAMES.search(re.sub(r"#.*", "", data["opsbot.yaml"]))


# ---- systemd ----------------------------------------------------------------------------------


def directives(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit file's sections, each key with every value it is given (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        else:
            key, _, value = line.partition("=")
            current.setdefault(key.strip(), []).append(value.strip())
    return sections


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.skip("no systemd-analyze on PATH")
    return found


OPSBOT_BIN = "/opt/opsbot/bin/opsbot"


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_systemd_accepts_the_unit(unit: str, tmp_path: Path) -> None:
    analyze = systemd_analyze()
    original = SYSTEMD / unit
    # As written, the only complaint is that opsbot is not installed at /opt/opsbot here...
    result = subprocess.run([analyze, "verify", str(original)], capture_output=True, text=True, timeout=30)
    complaints = [line for line in result.stderr.splitlines() if line.strip()]
    assert complaints == [f"{unit}: Command {OPSBOT_BIN} is not executable: No such file or directory"]
    # ...and pointed at the opsbot this suite runs, none at all (unknown keys, bad values included).
    here = Path(sys.executable).parent / "opsbot"
    assert here.exists()
    copy = tmp_path / unit
    copy.write_text(original.read_text().replace(OPSBOT_BIN, str(here)))
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=30)
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_systemd_rates_the_unit_well_sandboxed(unit: str) -> None:
    result = subprocess.run(
        [systemd_analyze(), "security", "--offline=yes", "--no-pager", str(SYSTEMD / unit)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    found = re.search(rf"Overall exposure level for {re.escape(unit)}: (\d+\.\d+)", result.stdout)
    assert found, result.stdout + result.stderr
    assert float(found.group(1)) <= 2.5  # systemd: below 5 is "OK", below 2 "SAFE"


@pytest.mark.parametrize(("unit", "args"), sorted(UNITS.items()))
def test_the_unit_is_hardened_and_waits_for_runs(unit: str, args: list[str]) -> None:
    sections = directives(SYSTEMD / unit)
    service = {key: values[-1] for key, values in sections["Service"].items()}
    assert service["ExecStart"].split() == [OPSBOT_BIN, *args]
    assert service.get("DynamicUser") == "yes" or service.get("User") not in (None, "", "root", "0")
    expected = {
        "ProtectSystem": "strict",
        "NoNewPrivileges": "yes",
        "PrivateTmp": "yes",
        "ProtectHome": "yes",
        "PrivateDevices": "yes",
        "CapabilityBoundingSet": "",
        "EnvironmentFile": "/etc/opsbot/env",
        "Restart": "on-failure",
        "KillSignal": "SIGTERM",
        "KillMode": "mixed",
    }
    assert {key: service.get(key) for key in expected} == expected
    assert seconds(service["TimeoutStopSec"]) >= run_bound_s()
    environment = dict(value.partition("=")[::2] for value in sections["Service"]["Environment"])
    assert environment["OPSBOT_CONFIG"] == "/etc/opsbot/opsbot.yaml"
    assert not [key for key in environment if key in SECRET_VARS or SECRET_NAMES.search(key)]
    if args == ["serve"]:
        assert environment["OPSBOT_METRICS_PORT"] == str(METRICS_PORT)
    else:
        assert environment["PORT"] == str(HTTP_PORT)
    assert sections["Install"]["WantedBy"] == ["multi-user.target"]
