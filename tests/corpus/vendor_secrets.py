"""Issue 24's leaky shapes: vendor keys with no shape of their own (32 or 40 hex or base62
characters) written next to their vendor's name or inside its SDK's call rather than as
`KEY=value`, and every value of a Kubernetes Secret's `data` and `stringData`.

Each case is in one of the contexts a secret reaches opsbot through: a log line, a command's
output, a YAML or JSON config, a .env file, a line of code. Shapes and contexts come from public
secret scanners and the vendors' own documentation, named in each case's `source`: gitleaks'
default rules (github.com/gitleaks/gitleaks, cmd/generate/config/rules/<file>.go), trufflehog's
detectors (github.com/trufflesecurity/trufflehog, pkg/detectors/<name>/), and the vendors' SDK
READMEs and API docs. The values are made up at import time (tests/corpus/secrets.py `made_up`),
so this file holds no whole key; `secret` is what must never show (8 characters of it are a leak).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass

import yaml

from tests.corpus.secrets import ALNUM, HEX, LETTERS, LOWER_ALNUM, UPPER_ALNUM, WORD_DASH, b64, made_up, tok

CONTEXTS = ("log-line", "command-output", "yaml", "json", "env", "code")


@dataclass(frozen=True)
class VendorCase:
    id: str
    secret: str  # what must never show
    text: str  # the secret as the context holds it
    context: str  # one of CONTEXTS
    source: str  # where the shape and the context come from
    key: str | None = None  # for yaml, json and env: the dotted key read_config finds the value at


# ================================================================================ made-up keys

DD_API = made_up("vendor-datadog-api", HEX, 32)
DD_APP = made_up("vendor-datadog-app", HEX, 40)
TWILIO_SID = tok("AC", made_up("vendor-twilio-sid", HEX, 32))  # an account id: shown, not a secret
TWILIO_TOKEN = made_up("vendor-twilio-token", HEX, 32)
NR_LICENSE = made_up("vendor-newrelic-license", HEX, 40)
NR_INGEST = "eu01xx" + made_up("vendor-newrelic-ingest", HEX, 30)  # then `NRAL`
NR_USER = made_up("vendor-newrelic-user", LOWER_ALNUM, 27)  # after `NRAK-`
MAILGUN_OLD = made_up("vendor-mailgun-old", LOWER_ALNUM, 32)  # after `key-`
MAILGUN_NEW = "-".join(made_up(f"vendor-mailgun-new-{n}", HEX, size) for n, size in enumerate((32, 8, 8)))
MAILGUN_SIGNING = "-".join(made_up(f"vendor-mailgun-signing-{n}", HEX, size) for n, size in enumerate((32, 8, 8)))
ALGOLIA_APP = made_up("vendor-algolia-app", UPPER_ALNUM, 10)  # an application id: shown
ALGOLIA_ADMIN = made_up("vendor-algolia-admin", HEX, 32)
ALGOLIA_SEARCH = made_up("vendor-algolia-search", HEX, 32)
PD_ROUTING = made_up("vendor-pagerduty-routing", HEX, 32)
PD_SERVICE = made_up("vendor-pagerduty-service", HEX, 32)
PD_REST = made_up("vendor-pagerduty-rest", WORD_DASH, 18) + "7Q"  # 20 characters, mixed
PD_LEGACY = (
    "u+" + made_up("vendor-pd-legacy-a", LETTERS, 9) + "-" + made_up("vendor-pd-legacy-b", "abcdefghij", 2) + "-"
) + made_up("vendor-pd-legacy-c", LOWER_ALNUM, 5)

DATADOG_AGENT = "datadog-agent's forwarder log, github.com/DataDog/datadog-agent pkg/forwarder (as issue 24's probe)"
DATADOG_KEYS = "docs.datadoghq.com/account_management/api-app-keys/; trufflehog datadogtoken"
TWILIO = "twilio.com/docs/iam/credentials/api (Account SID, Auth Token); trufflehog twilio"
NEW_RELIC = "docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/; gitleaks new-relic-*"
MAILGUN = "documentation.mailgun.com (authentication: user `api`, the key as password); gitleaks mailgun-*"
ALGOLIA = "algolia.com/doc/guides/security/api-keys/; gitleaks algolia-api-key; trufflehog algoliaadminkey"
PAGERDUTY_EVENTS = "developer.pagerduty.com/docs/events-api-v2/trigger-events/ (routing_key)"
ALERTMANAGER = "prometheus.io/docs/alerting/latest/configuration/#pagerduty_config (routing_key, service_key)"
PAGERDUTY_REST = "developer.pagerduty.com/docs/rest-api-v2/authentication/; trufflehog pagerdutyapikey"


def _yaml(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


CASES: list[VendorCase] = [
    # ---- Datadog
    VendorCase(
        "datadog-agent-api-key-invalid",
        DD_API,
        "2026-11-29 03:07:32 UTC | CORE | ERROR | (pkg/forwarder/transaction/transaction.go:363 in "
        f"internalProcess) | API Key invalid ({DD_API}), dropping transaction",
        "log-line",
        DATADOG_AGENT,
    ),
    VendorCase(
        "datadog-agent-named",
        DD_API,
        f"datadog-agent[812]: API Key invalid ({DD_API})",
        "log-line",
        DATADOG_AGENT,
    ),
    VendorCase(
        "datadog-key-after-name",
        DD_APP,
        f"datadog: application key {DD_APP} rejected by api.datadoghq.eu (403)",
        "log-line",
        DATADOG_KEYS,
    ),
    VendorCase(
        "datadog-docker-logs",
        DD_API,
        f"$ docker logs dd-agent 2>&1 | tail -1\nCORE | ERROR | API Key invalid ({DD_API})",
        "command-output",
        DATADOG_AGENT + "; docker logs",
    ),
    VendorCase(
        "datadog-helm-values",
        DD_APP,
        _yaml(f"""
            datadog:
              site: datadoghq.eu
              apiKeyExistingSecret: datadog-secret
              appKey: {DD_APP}
            """),
        "yaml",
        "github.com/DataDog/helm-charts charts/datadog/values.yaml (datadog.appKey)",
        key="datadog.appKey",
    ),
    VendorCase(
        "datadog-json-config",
        DD_API,
        json.dumps({"datadog": {"site": "datadoghq.com", "api_key": DD_API}}, indent=2),
        "json",
        DATADOG_KEYS,
        key="datadog.api_key",
    ),
    VendorCase(
        "datadog-env", DD_API, f"DD_SITE=datadoghq.eu\nDD_API_KEY={DD_API}\n", "env", DATADOG_KEYS, key="DD_API_KEY"
    ),
    VendorCase(
        "datadog-api-client-python",
        DD_APP,
        f'configuration = Configuration()\nconfiguration.api_key["appKeyAuth"] = "{DD_APP}"',
        "code",
        "github.com/DataDog/datadog-api-client-python README (configuration.api_key[...])",
    ),
    # ---- Twilio: the Account SID is an account's name; the Auth Token is the secret
    VendorCase(
        "twilio-python-client",
        TWILIO_TOKEN,
        f"client = Client('{TWILIO_SID}', '{TWILIO_TOKEN}')",
        "code",
        "github.com/twilio/twilio-python README (Client(account_sid, auth_token)); " + TWILIO,
    ),
    VendorCase(
        "twilio-python-rest-client",
        TWILIO_TOKEN,
        f'client = twilio.rest.Client("{TWILIO_SID}", "{TWILIO_TOKEN}")',
        "code",
        "github.com/twilio/twilio-python README; " + TWILIO,
    ),
    VendorCase(
        "twilio-node",
        TWILIO_TOKEN,
        f"const client = require('twilio')('{TWILIO_SID}', '{TWILIO_TOKEN}');",
        "code",
        "github.com/twilio/twilio-node README (require('twilio')(accountSid, authToken)); " + TWILIO,
    ),
    VendorCase(
        "twilio-csharp",
        TWILIO_TOKEN,
        f'TwilioClient.Init("{TWILIO_SID}", "{TWILIO_TOKEN}");',
        "code",
        "github.com/twilio/twilio-csharp README (TwilioClient.Init(accountSid, authToken)); " + TWILIO,
    ),
    VendorCase(
        "twilio-log",
        TWILIO_TOKEN,
        f"WARN sms: twilio auth for {TWILIO_SID} with {TWILIO_TOKEN} failed: 20003 Authenticate",
        "log-line",
        "twilio.com/docs/api/errors/20003; " + TWILIO,
    ),
    VendorCase(
        "twilio-curl",
        TWILIO_TOKEN,
        f"$ curl -X POST https://api.twilio.com/2010-04-01/Accounts/{TWILIO_SID}/Messages.json "
        f'-u {TWILIO_SID}:{TWILIO_TOKEN}\n{{"code": 20003, "message": "Authenticate"}}',
        "command-output",
        "twilio.com/docs/usage/requests-to-twilio (curl -u $TWILIO_ACCOUNT_SID:$TWILIO_AUTH_TOKEN)",
    ),
    VendorCase(
        "twilio-yaml",
        TWILIO_TOKEN,
        _yaml(f"""
            twilio:
              account_sid: {TWILIO_SID}
              auth_token: {TWILIO_TOKEN}
            """),
        "yaml",
        TWILIO,
        key="twilio.auth_token",
    ),
    # ---- New Relic
    VendorCase(
        "newrelic-yml-license",
        NR_LICENSE,
        _yaml(f"""
            common: &default_settings
              license_key: '{NR_LICENSE}'
              app_name: checkout
            """),
        "yaml",
        "docs.newrelic.com/docs/apm/agents/python-agent/configuration/python-agent-configuration/ (license_key)",
        key="common.license_key",
    ),
    VendorCase(
        "newrelic-json-license",
        NR_LICENSE,
        json.dumps({"newrelic": {"appName": "checkout", "licenseKey": NR_LICENSE}}, indent=2),
        "json",
        NEW_RELIC,
        key="newrelic.licenseKey",
    ),
    VendorCase(
        "newrelic-env-ingest",
        NR_INGEST,
        f"NEW_RELIC_APP_NAME=checkout\nNEW_RELIC_LICENSE_KEY={NR_INGEST}NRAL\n",
        "env",
        NEW_RELIC + " (ingest keys end in NRAL)",
        key="NEW_RELIC_LICENSE_KEY",
    ),
    VendorCase(
        "newrelic-log-license",
        NR_LICENSE,
        f"newrelic.core.agent ERROR - license key {NR_LICENSE} was rejected by collector.newrelic.com",
        "log-line",
        NEW_RELIC,
    ),
    VendorCase(
        "newrelic-log-ingest-key",
        NR_INGEST,
        f"2026-11-29T03:07:32Z WARN infra-agent: connecting with {NR_INGEST}NRAL",
        "log-line",
        NEW_RELIC + " (ingest keys end in NRAL)",
    ),
    VendorCase(
        "newrelic-user-key-lowercase",
        NR_USER,
        f"$ newrelic nerdgraph query '{{ actor {{ user {{ name }} }} }}' --apiKey {tok('NRAK-', NR_USER)}\n403",
        "command-output",
        "gitleaks new-relic-user-api-key (its body is case-insensitive); github.com/newrelic/newrelic-cli",
    ),
    VendorCase(
        "newrelic-node-config",
        NR_LICENSE,
        f"exports.config = {{ app_name: ['checkout'], license_key: '{NR_LICENSE}' }}",
        "code",
        "github.com/newrelic/node-newrelic newrelic.js (license_key)",
    ),
    # ---- Mailgun
    VendorCase(
        "mailgun-requests-old-key",
        MAILGUN_OLD,
        'requests.post("https://api.mailgun.net/v3/mg.example.org/messages", '
        f'auth=("api", "{tok("key-", MAILGUN_OLD)}"), data={{"to": "ops@example.org"}})',
        "code",
        MAILGUN + " (key-); trufflehog mailgun",
    ),
    VendorCase(
        "mailgun-requests-new-key",
        MAILGUN_NEW,
        f'requests.post(MAILGUN_URL, auth=("api", "{MAILGUN_NEW}"), data=message)',
        "code",
        MAILGUN + " (<32 hex>-<8 hex>-<8 hex>)",
    ),
    VendorCase(
        "mailgun-log",
        MAILGUN_NEW,
        f"ERROR notifier: mailgun 401 Forbidden using {MAILGUN_NEW}",
        "log-line",
        MAILGUN,
    ),
    VendorCase(
        "mailgun-curl",
        MAILGUN_NEW,
        f"$ curl -s --user 'api:{MAILGUN_NEW}' https://api.mailgun.net/v3/domains\nForbidden",
        "command-output",
        "documentation.mailgun.com (curl -s --user 'api:YOUR_API_KEY')",
    ),
    VendorCase(
        "mailgun-env",
        MAILGUN_SIGNING,
        f"MAILGUN_DOMAIN=mg.example.org\nMAILGUN_WEBHOOK_SIGNING_KEY={MAILGUN_SIGNING}\n",
        "env",
        "gitleaks mailgun-signing-key; " + MAILGUN,
        key="MAILGUN_WEBHOOK_SIGNING_KEY",
    ),
    VendorCase(
        "mailgun-yaml",
        MAILGUN_OLD,
        _yaml(f"""
            mailer:
              provider: mailgun
              api_key: {tok("key-", MAILGUN_OLD)}
            """),
        "yaml",
        MAILGUN,
        key="mailer.api_key",
    ),
    # ---- Algolia: the application id is shown; the admin and search keys are secrets
    VendorCase(
        "algolia-python-client",
        ALGOLIA_ADMIN,
        f'client = SearchClient.create("{ALGOLIA_APP}", "{ALGOLIA_ADMIN}")',
        "code",
        "github.com/algolia/algoliasearch-client-python README (SearchClient.create(app_id, api_key)); " + ALGOLIA,
    ),
    VendorCase(
        "algolia-js-client",
        ALGOLIA_ADMIN,
        f"const client = algoliasearch('{ALGOLIA_APP}', '{ALGOLIA_ADMIN}');",
        "code",
        "github.com/algolia/algoliasearch-client-javascript README (algoliasearch(appId, apiKey)); " + ALGOLIA,
    ),
    VendorCase(
        "algolia-log",
        ALGOLIA_ADMIN,
        f"ERROR algoliasearch: 403 Forbidden for key {ALGOLIA_ADMIN}",
        "log-line",
        ALGOLIA,
    ),
    VendorCase(
        "algolia-env",
        ALGOLIA_ADMIN,
        f"ALGOLIA_APP_ID={ALGOLIA_APP}\nALGOLIA_ADMIN_KEY={ALGOLIA_ADMIN}\n",
        "env",
        ALGOLIA,
        key="ALGOLIA_ADMIN_KEY",
    ),
    VendorCase(
        "algolia-yaml-search-key",
        ALGOLIA_SEARCH,
        _yaml(f"""
            search:
              app_id: {ALGOLIA_APP}
              search_key: {ALGOLIA_SEARCH}
              index: products
            """),
        "yaml",
        ALGOLIA + " (search-only key)",
        key="search.search_key",
    ),
    VendorCase(
        "algolia-json-admin-key",
        ALGOLIA_ADMIN,
        json.dumps({"algolia": {"appId": ALGOLIA_APP, "adminKey": ALGOLIA_ADMIN}}, indent=2),
        "json",
        ALGOLIA,
        key="algolia.adminKey",
    ),
    # ---- PagerDuty
    VendorCase(
        "pagerduty-events-v2-json",
        PD_ROUTING,
        json.dumps(
            {
                "routing_key": PD_ROUTING,
                "event_action": "trigger",
                "payload": {"summary": "disk full", "source": "web-1", "severity": "critical"},
            },
            indent=2,
        ),
        "json",
        PAGERDUTY_EVENTS,
        key="routing_key",
    ),
    VendorCase(
        "pagerduty-alertmanager-routing-key",
        PD_ROUTING,
        _yaml(f"""
            receivers:
            - name: oncall
              pagerduty_configs:
              - routing_key: {PD_ROUTING}
                severity: critical
            """),
        "yaml",
        ALERTMANAGER,
    ),
    VendorCase(
        "pagerduty-alertmanager-service-key",
        PD_SERVICE,
        _yaml(f"""
            receivers:
            - name: legacy
              pagerduty_configs:
              - service_key: {PD_SERVICE}
            """),
        "yaml",
        ALERTMANAGER + " (Events API v1)",
    ),
    VendorCase(
        "pagerduty-log-routing-key",
        PD_ROUTING,
        f"WARN alertmanager: pagerduty event rejected for routing key {PD_ROUTING}: 400 Bad Request",
        "log-line",
        PAGERDUTY_EVENTS,
    ),
    VendorCase(
        "pagerduty-events-url",
        PD_SERVICE,
        f"POST https://events.pagerduty.com/integration/{PD_SERVICE}/enqueue 202",
        "log-line",
        "developer.pagerduty.com/docs/events-api-v1 (generic integration URL)",
    ),
    VendorCase(
        "pagerduty-pdpyras-events",
        PD_ROUTING,
        f"session = pdpyras.EventsAPISession('{PD_ROUTING}')",
        "code",
        "github.com/PagerDuty/pdpyras README (EventsAPISession(routing_key)); " + PAGERDUTY_EVENTS,
    ),
    VendorCase(
        "pagerduty-pdpyras-rest",
        PD_REST,
        f"session = pdpyras.APISession('{PD_REST}')",
        "code",
        "github.com/PagerDuty/pdpyras README (APISession(api_key)); " + PAGERDUTY_REST,
    ),
    VendorCase(
        "pagerduty-legacy-rest-key",
        PD_LEGACY,
        f"pagerduty sync: GET /services with {PD_LEGACY} -> 401",
        "log-line",
        PAGERDUTY_REST + " (legacy keys: trufflehog's pattern)",
    ),
    VendorCase(
        "pagerduty-env",
        PD_ROUTING,
        f"PAGERDUTY_ROUTING_KEY={PD_ROUTING}\n",
        "env",
        PAGERDUTY_EVENTS,
        key="PAGERDUTY_ROUTING_KEY",
    ),
]

BY_ID = {case.id: case for case in CASES}


# ================================================================================ Kubernetes Secrets


@dataclass(frozen=True)
class SecretManifest:
    id: str
    text: str
    secrets: tuple[str, ...]  # every value under a Secret's data/stringData
    kept: tuple[str, ...]  # what must stay readable: key names, a ConfigMap's data
    fmt: str  # the file's extension when read_config reads it
    source: str


K8S_SECRET = "kubernetes.io/docs/concepts/configuration/secret/"
KUBECTL_GET = "kubectl get -o yaml|json, kubernetes.io/docs/reference/kubectl/generated/kubectl_get/"
DB_URL = b64(f"postgres://checkout:{made_up('k8s-db-password', ALNUM, 24)}@pg.internal:5432/checkout")
API_TOKEN = b64(made_up("k8s-api-token", ALNUM, 40))
PLAIN_PASSWORD = made_up("k8s-plain-password", ALNUM, 20)
# Values that would pass for harmless anywhere else (a path, a JSON document): in a Secret they are the secret.
SLASHED_PASSWORD = "/" + made_up("k8s-slashed-a", ALNUM, 9) + "/" + made_up("k8s-slashed-b", ALNUM, 9)
CONFIG_PASSWORD = made_up("k8s-config-json", ALNUM, 18)
CONFIG_JSON = json.dumps({"user": "svc-ledger", "password": CONFIG_PASSWORD})
CERT_BODY = textwrap.fill(b64(made_up("k8s-tls-bundle", ALNUM, 300)), 64)
LOG_LEVEL = "debug-verbose-7"  # a ConfigMap's value that must stay

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "checkout"}, "data": {"LOG": LOG_LEVEL}}
SECRET_OBJECT = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "checkout-env", "namespace": "shop"},
    "type": "Opaque",
    "data": {"DATABASE_URL": DB_URL, "API_TOKEN": API_TOKEN},
    "stringData": {
        "config.json": CONFIG_JSON,
        "password": PLAIN_PASSWORD,
        "vault-path": SLASHED_PASSWORD,
        "enabled": "true",
    },
}
SECRETS = (DB_URL, API_TOKEN, PLAIN_PASSWORD, SLASHED_PASSWORD, CONFIG_PASSWORD)
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "checkout"}}


def _kubectl_yaml(document: object) -> str:
    """As `kubectl get -o yaml` prints: keys sorted (so `data` comes before `kind`)."""
    return str(yaml.safe_dump(document, sort_keys=True, width=4096))


MANIFESTS: list[SecretManifest] = [
    SecretManifest(
        "kubectl-get-secret-yaml",
        _kubectl_yaml(SECRET_OBJECT),
        SECRETS,
        ("DATABASE_URL", "API_TOKEN", "vault-path", "checkout-env"),
        "yaml",
        KUBECTL_GET + " (keys sorted: data before kind)",
    ),
    SecretManifest(
        "manifest-kind-first-block-scalar",
        "apiVersion: v1\nkind: Secret  # applied by CI\nmetadata:\n  name: tls-bundle\ntype: Opaque\nstringData:\n"
        f'  ca.pem: |\n{textwrap.indent(CERT_BODY, "    ")}\n  password: "{PLAIN_PASSWORD}"\n',
        (CERT_BODY, PLAIN_PASSWORD),
        ("ca.pem", "tls-bundle"),
        "yaml",
        K8S_SECRET + " (stringData, block scalars)",
    ),
    SecretManifest(
        "multi-document",
        "---\n".join(_kubectl_yaml(document) for document in (CONFIG_MAP, SECRET_OBJECT, DEPLOYMENT)),
        SECRETS,
        (LOG_LEVEL, "DATABASE_URL"),
        "yaml",
        "kubectl apply -f bundle.yaml (several documents), " + K8S_SECRET,
    ),
    SecretManifest(
        "kind-list-yaml",
        _kubectl_yaml({"apiVersion": "v1", "items": [CONFIG_MAP, SECRET_OBJECT], "kind": "List"}),
        SECRETS,
        (LOG_LEVEL, "DATABASE_URL"),
        "yaml",
        "kubectl get configmap,secret -o yaml (a List), " + KUBECTL_GET,
    ),
    SecretManifest(
        "kubectl-get-secret-json",
        json.dumps(SECRET_OBJECT, indent=4, sort_keys=True),
        SECRETS,
        ("DATABASE_URL", "config.json"),
        "json",
        KUBECTL_GET + " (stringData holding a JSON document, braces and all)",
    ),
    SecretManifest(
        "kind-list-json",
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [CONFIG_MAP, SECRET_OBJECT]}, indent=4),
        SECRETS,
        (LOG_LEVEL, "DATABASE_URL"),
        "json",
        "kubectl get configmap,secret -o json (a List), " + KUBECTL_GET,
    ),
    SecretManifest(
        "json-in-a-log-line",
        "2026-11-29T03:07:32Z INFO deployer applied " + json.dumps(SECRET_OBJECT, separators=(",", ":")),
        SECRETS,
        ("DATABASE_URL",),
        "text",
        "a deploy tool logging what it applied (compact JSON), " + K8S_SECRET,
    ),
    SecretManifest(
        "flow-mapping",
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: checkout-env}}\ndata: {{DATABASE_URL: {DB_URL}, "
        f'"API_TOKEN": "{API_TOKEN}"}}\n',
        (DB_URL, API_TOKEN),
        ("DATABASE_URL",),
        "yaml",
        "YAML flow mappings, yaml.org/spec/1.2.2/#742-flow-mappings; " + K8S_SECRET,
    ),
    SecretManifest(
        "helm-template-output",
        "---\n# Source: checkout/templates/secret.yaml\n"
        + yaml.safe_dump(SECRET_OBJECT, sort_keys=False, width=4096).replace("kind: Secret", 'kind: "Secret"'),
        SECRETS,
        ("DATABASE_URL", "# Source: checkout/templates/secret.yaml"),
        "yaml",
        "helm template output (kind first, quoted), helm.sh/docs/helm/helm_template/",
    ),
]

# `kubectl describe secret` shows each key's size, never its value: nothing to hide there.
DESCRIBE_SECRET = _yaml("""
    Name:         checkout-env
    Namespace:    shop
    Labels:       <none>
    Annotations:  <none>

    Type:  Opaque

    Data
    ====
    API_TOKEN:     56 bytes
    DATABASE_URL:  87 bytes
    password:      20 bytes
    """)
