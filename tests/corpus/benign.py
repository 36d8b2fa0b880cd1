"""The benign corpus: realistic text that holds no secret and must come out of redaction byte for
byte.

Each entry is (text, source): the text as the system named in `source` prints it (its log format,
CLI output or documented example), with made-up hosts, ids and digests. Ids, hashes, digests, base64
payloads that are data, public keys and certificates, URLs without credentials, and words such as
token, key, secret and password without a value next to them. Nonces (a CSP nonce, a WebSocket
key) and public identifiers (an account id, a key's fingerprint, a DSN-less URL) authenticate
nothing and are benign too. An entry may span several lines (a certificate, a traceback, a table).
Public keys, certificates and JWK moduli are drawn at import time like the secret corpus's keys.
"""

from __future__ import annotations

import json

from tests.corpus.secrets import WORD_DASH, b64, made_up, made_up_bytes, pem

# ================================================================================ sources

NGINX = "nginx log_format combined, nginx.org/en/docs/http/ngx_http_log_module.html"
NGINX_ERROR = "nginx error_log, nginx.org/en/docs/ngx_core_module.html#error_log"
APACHE = "Apache httpd Common Log Format, httpd.apache.org/docs/2.4/logs.html#accesslog"
ENVOY = "Envoy default access log format, envoyproxy.io/docs/envoy/latest/configuration/observability/access_log/usage"
ALB = (
    "AWS ALB access log entries, docs.aws.amazon.com/elasticloadbalancing/latest/application/"
    "load-balancer-access-logs.html"
)
LAMBDA = "AWS Lambda log lines, docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html"
AWS_HEADERS = "AWS response headers, docs.aws.amazon.com/AmazonS3/latest/API/RESTCommonResponseHeaders.html"
AWS_CLI = "AWS CLI JSON output, docs.aws.amazon.com/cli/latest/reference/"
GCP_TRACE = "Google Cloud trace context, cloud.google.com/trace/docs/trace-context"
W3C = "W3C Trace Context, w3.org/TR/trace-context/"
HEROKU = "Heroku router log format, devcenter.heroku.com/articles/http-routing#heroku-router-log-format"
CLOUDFLARE = "Cloudflare cf-ray header, developers.cloudflare.com/fundamentals/reference/cloudflare-ray-id/"
HTTP = "HTTP response headers, developer.mozilla.org/en-US/docs/Web/HTTP/Headers"
CURL = "curl -v output, curl.se/docs/manpage.html#-v"
UUID = "RFC 9562 UUIDs (versions 1, 4, 7)"
ULID = "ULID spec, github.com/ulid/spec"
KSUID = "KSUID, github.com/segmentio/ksuid"
GIT = "git log / git show output, git-scm.com/docs/git-log"
GIT_ONELINE = "git log --oneline, git-scm.com/docs/git-log#Documentation/git-log.txt---oneline"
GIT_DESCRIBE = "git describe, git-scm.com/docs/git-describe"
GIT_PUSH = "git push output, git-scm.com/docs/git-push#_output"
GERRIT = "Gerrit Change-Id footer, gerrit-review.googlesource.com/Documentation/user-changeid.html"
COREUTILS = (
    "GNU coreutils sha256sum/sha1sum/md5sum output, gnu.org/software/coreutils/manual/html_node/md5sum-invocation.html"
)
DOCKER = "docker pull / docker build output, docs.docker.com/reference/cli/docker/image/pull/"
DOCKER_LOGIN = "docker login output, docs.docker.com/reference/cli/docker/login/"
NPM_LOCK = "npm package-lock.json integrity, docs.npmjs.com/cli/v10/configuring-npm/package-lock-json"
PIP_HASH = "pip hash-checking mode, pip.pypa.io/en/stable/topics/secure-installs/"
GO_SUM = "go.sum lines, go.dev/ref/mod#go-sum-files"
CARGO = "Cargo.lock checksum, doc.rust-lang.org/cargo/guide/cargo-toml-vs-cargo-lock.html"
TF_LOCK = "Terraform .terraform.lock.hcl, developer.hashicorp.com/terraform/language/files/dependency-lock"
SRI = "Subresource Integrity, developer.mozilla.org/en-US/docs/Web/Security/Subresource_Integrity"
GIT_LFS = "Git LFS pointer file, github.com/git-lfs/git-lfs/blob/main/docs/spec.md"
PUBSUB = "Pub/Sub push message, cloud.google.com/pubsub/docs/push#receive_push"
KAFKA = "Kafka consumer log line (kcat -f format), github.com/edenhill/kcat"
CW_LOGS = (
    "CloudWatch Logs subscription event, docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html"
)
KINESIS = "Kinesis GetRecords output, docs.aws.amazon.com/kinesis/latest/APIReference/API_GetRecords.html"
DATA_URL = "data: URLs, developer.mozilla.org/en-US/docs/Web/URI/Reference/Schemes/data"
GRPC = "grpc-go verbose logging, github.com/grpc/grpc-go/blob/master/Documentation/log_levels.md"
MIME = "RFC 2045 base64 Content-Transfer-Encoding"
CSP = (
    "Content-Security-Policy nonce, developer.mozilla.org/en-US/docs/Web/HTTP/Headers/"
    "Content-Security-Policy/script-src"
)
WEBSOCKET = "RFC 6455 section 1.3 opening handshake"
GCS = "Cloud Storage x-goog-hash, cloud.google.com/storage/docs/xml-api/reference-headers#xgooghash"
URLS = "RFC 3986 URIs without userinfo password"
PG_URI = "PostgreSQL connection URIs, postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS"
OIDC = "OpenID Connect authentication request, openid.net/specs/openid-connect-core-1_0.html#AuthRequest"
KUBECTL = "kubectl get output, kubernetes.io/docs/reference/kubectl/generated/kubectl_get/"
KUBECTL_DESCRIBE = "kubectl describe output, kubernetes.io/docs/reference/kubectl/generated/kubectl_describe/"
K8S_YAML = (
    "Kubernetes manifests, kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-environment-variables"
)
SYSLOG = "journald/syslog short output, man7.org/linux/man-pages/man1/journalctl.1.html"
SSHD = "OpenSSH sshd auth log lines, man.openbsd.org/sshd"
SUDO = "sudo syslog entry, sudo.ws/docs/man/sudoers.man/#LOG_FORMAT"
JAVA = (
    "Java stack trace, docs.oracle.com/en/java/javase/21/docs/api/java.base/java/lang/Throwable.html#printStackTrace()"
)
PYTHON = "Python traceback, docs.python.org/3/library/traceback.html"
GO_PANIC = "Go panic output, go.dev/blog/defer-panic-and-recover"
NODE = "Node.js error stack, nodejs.org/api/errors.html#errorstack"
PROMETHEUS = "Prometheus text exposition format, prometheus.io/docs/instrumenting/exposition_formats/"
TERRAFORM = "terraform plan/apply output, developer.hashicorp.com/terraform/cli/commands/plan"
POSTGRES = "PostgreSQL server log, postgresql.org/docs/current/runtime-config-logging.html"
MYSQL = "MySQL client error 1045, dev.mysql.com/doc/mysql-errors/8.0/en/client-error-reference.html"
REDIS = "Redis error replies, redis.io/docs/latest/commands/auth/"
APP_LOG = "application log lines in opsbot's sample format (config/sample/logs)"
SSH_KEYS = "OpenSSH public keys and fingerprints, man.openbsd.org/ssh-keygen"
GITHUB_KEYS = (
    "GitHub's published SSH host keys, docs.github.com/en/authentication/"
    "keeping-your-account-and-data-secure/githubs-ssh-key-fingerprints"
)
PEM_PUBLIC = "RFC 7468 CERTIFICATE and PUBLIC KEY blocks"
OPENSSL = "openssl s_client / x509 output, docs.openssl.org/3.0/man1/openssl-s_client/"
GPG = "gpg --verify output, gnupg.org/documentation/manuals/gnupg/"
JWKS = "RFC 7517 JSON Web Key (public RSA key)"
AGE_PUBLIC = "age recipients, age-encryption.org/v1"
WIREGUARD = "WireGuard configuration, wireguard.com/quickstart/"
SLACK_IDS = "Slack object ids and API responses, api.slack.com/methods"
COMMITS = "commit message subjects, conventionalcommits.org/en/v1.0.0/"
GH_ACTIONS = (
    "GitHub Actions job log, docs.github.com/en/actions/writing-workflows/"
    "choosing-what-your-workflow-does/controlling-permissions-for-github_token"
)
ANSIBLE = "ansible-playbook output, docs.ansible.com/ansible/latest/reference_appendices/logging.html"
HELM = "helm upgrade output, helm.sh/docs/helm/helm_upgrade/"
VAULT_CLI = "Vault CLI output, developer.hashicorp.com/vault/docs/commands"
EXTERNAL_SECRETS = "External Secrets Operator events, external-secrets.io/latest/api/externalsecret/"
OPS_PROSE = "operational log messages about credentials, without values (opsbot's sample log style)"
SETTINGS = "configuration settings about secrets, without secret values"

# ================================================================================ public key material

CERTIFICATE = pem("CERTIFICATE", bytes.fromhex("3082036f30820257a00302010202"), "benign-certificate", 883)[0]
PUBLIC_KEY = pem("PUBLIC KEY", bytes.fromhex("30820122300d06092a864886f70d01010105000382010f00"), "benign-spki", 294)[0]
SSH_RSA_PUBLIC = b64(
    b"\x00\x00\x00\x07ssh-rsa\x00\x00\x00\x03\x01\x00\x01\x00\x00\x01\x81\x00" + made_up_bytes("benign-ssh-rsa", 384)
)
JWK_MODULUS = made_up("benign-jwk-n", WORD_DASH, 342)

BENIGN: list[tuple[str, str]] = [
    # ---- request and trace ids
    ("x-amzn-RequestId: 4635c1d7-8f02-4208-b600-eafadf646a12", AWS_HEADERS),
    ("x-amz-request-id: 4442587FB7D0A2F9", AWS_HEADERS),
    ("x-amz-id-2: 2r0BW9kJUd5SV+o4C00zSul6aKe9Rfcu4DV5Ux/DQPgou4+7l5Nb2pP8/uti2Hk0IjEpKMZATMJ4", AWS_HEADERS),
    ("X-Amzn-Trace-Id: Root=1-6749a3b2-3f9c1e2d5b7a8c9d0e1f2a3b;Parent=53995c3f42cd8ad8;Sampled=1", AWS_HEADERS),
    ("START RequestId: bc34adf4-81de-4128-9f05-cddc3dfd910f Version: $LATEST", LAMBDA),
    ("END RequestId: bc34adf4-81de-4128-9f05-cddc3dfd910f", LAMBDA),
    (
        "REPORT RequestId: bc34adf4-81de-4128-9f05-cddc3dfd910f\tDuration: 2.35 ms\tBilled Duration: 3 ms\t"
        "Memory Size: 128 MB\tMax Memory Used: 68 MB\tInit Duration: 231.52 ms",
        LAMBDA,
    ),
    ("X-Cloud-Trace-Context: 105445aa7843bc8bf206b12000100000/1;o=1", GCP_TRACE),
    (
        '"logging.googleapis.com/trace": "projects/shop-prod/traces/06796866738c859f2f19b7cfb3214824"',
        GCP_TRACE,
    ),
    ('"logging.googleapis.com/spanId": "000000000000004a"', GCP_TRACE),
    ("traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", W3C),
    ("tracestate: congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", W3C),
    ("request_id=7a3f2c9d1e8b4a6f0c5d2e1f3a4b5c6d upstream_response_time=0.012", NGINX),
    ("x-request-id: 2c3e9d2a-63f1-4b8e-b0a1-4c2d9e6f7a81", ENVOY),
    (
        '[2026-11-29T03:07:32.114Z] "GET /api/v1/orders HTTP/1.1" 200 - 0 1432 12 11 "10.0.3.17" "curl/8.5.0" '
        '"2c3e9d2a-63f1-4b8e-b0a1-4c2d9e6f7a81" "orders.shop.svc:8080" "10.0.5.22:8080"',
        ENVOY,
    ),
    (
        'at=info method=GET path="/api/orders" host=shop.herokuapp.com '
        "request_id=2c1f9a6e-4c3d-4c0b-9a8e-51f3e8c7b2d4 "
        'fwd="203.0.113.7" dyno=web.1 connect=0ms service=23ms status=200 bytes=1532 protocol=https',
        HEROKU,
    ),
    ("cf-ray: 8e5b7c1f3a9d2b4e-FRA", CLOUDFLARE),
    (
        "dd.trace_id=5247563893298123245 dd.span_id=1841429394821920356",
        "Datadog log correlation, docs.datadoghq.com/tracing/other_telemetry/connect_logs_and_traces/",
    ),
    (
        "x-ms-request-id: 0f7a6c1e-801e-0051-3c2a-42d3a9000000",
        "Azure Storage response headers, learn.microsoft.com/en-us/rest/api/storageservices/common-rest-api-headers",
    ),
    (
        "X-GitHub-Request-Id: CA8A:2C3B:1F2E3D4:20F1E2C:6749A3B2",
        "GitHub REST API response headers, docs.github.com/en/rest",
    ),
    ("Request-Id: req_6Qm1YbT9sXw2Lk", "Stripe request ids, docs.stripe.com/api/request_ids"),
    (
        "X-Kong-Request-Id: 3b0f3c1d9e8a7b6c5d4e3f2a1b0c9d8e",
        "Kong request id, docs.konghq.com/gateway/latest/reference/configuration/#headers",
    ),
    (
        "2026-11-29T03:07:32Z INFO  checkout-api POST /v1/checkout 200 118ms request_id=req-52e6b438",
        APP_LOG,
    ),
    # ---- UUIDs, ULIDs, KSUIDs
    ("order 4635c1d7-8f02-4208-b600-eafadf646a12 created", UUID),
    ("CorrelationId=7C9E6679-7425-40DE-944B-E07FC1F90AE7", UUID),
    ("job 0136bfb0-ed72-11f1-ad1a-02fc00000001 queued", UUID),
    ("event_id=01932c07-5b8e-7c3f-9a1d-3e5f7a9b1c2d", UUID),
    ("EVENT_ID=01932C07-5B8E-7C3F-9A1D-3E5F7A9B1C2D", UUID),
    ("tenant_id: 00000000-0000-0000-0000-000000000000", UUID),
    ("urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "RFC 9562 section 4 (the urn:uuid example)"),
    ("deleted volume pvc-ed49e12b-e206-4ae8-85c6-b0614b223b86", KUBECTL),
    ("  uid: 7b06233f-132e-4fe6-9145-deb646637874", K8S_YAML),
    (
        "idempotency key 1a19ebd9-e24d-45c6-b24d-588001dd5d20 replayed",
        "Stripe idempotent requests, docs.stripe.com/api/idempotent_requests",
    ),
    ("id=01ARZ3NDEKTSV4RRFFQ69G5FAV", ULID),
    ("outbox message 01JDR6Q0ZC4X9M6T2B3N5P7Q8R published", ULID),
    ("ksuid=0ujtsYcgvSTl8PAuAdqWYSMnLOv", KSUID),
    # ---- git
    ("commit 9fceb02d0ae598e95dc970b74767f19372d61af8", GIT),
    ("Merge: 1a2b3c4 5d6e7f8", GIT),
    ("Author: Ana Lima <ana.lima@acme.example>", GIT),
    ("tree 9bedf67800b2923982bdf60c89c57ce6fd2d9a1c", "git cat-file -p output, git-scm.com/docs/git-cat-file"),
    ("parent d6abf9a258a09a508f1830a9024f17c5c341cf43", "git cat-file -p output, git-scm.com/docs/git-cat-file"),
    ("2414721 Raise pool size to 20 (#1432)", GIT_ONELINE),
    ("7901b16 (HEAD -> main, origin/main) Bump checkout to 2026.11.29-1", GIT_ONELINE),
    ("v2.4.1-14-g2414721", GIT_DESCRIBE),
    ("v2.4.1-14-g2414721-dirty", GIT_DESCRIBE),
    ("HEAD is now at 2414721 Raise pool size to 20", "git reset output, git-scm.com/docs/git-reset"),
    ("To github.com:acme/shop.git\n   9fceb02..2414721  main -> main", GIT_PUSH),
    ("[main 2414721] Raise pool size to 20\n 1 file changed, 1 insertion(+), 1 deletion(-)", "git commit output"),
    ("11133f1e523e27b7bb36df2c391980b55f353928", "git rev-parse HEAD output"),
    ("Change-Id: I8473b95934b5732ac55d26311a706c9c2bde9940", GERRIT),
    ("Signed-off-by: Ana Lima <ana.lima@acme.example>", "git commit --signoff trailer"),
    (
        "a8691a28 (Ana Lima 2026-11-29 02:51:10 +0000 42)     pool_size: 20",
        "git blame output, git-scm.com/docs/git-blame",
    ),
    (
        "remote: Resolving deltas: 100% (12/12), completed with 5 local objects.",
        GIT_PUSH,
    ),
    # ---- checksums and digests
    ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  release.tar.gz", COREUTILS),
    ("33138e04343d6eccb29e929fb9bdbcea2731148a1d3e3b45b1d81d4a3ab7e953 *opsbot-2026.11.29-linux-amd64.zip", COREUTILS),
    ("51281ce60e4085983ae6db3cd978c37fa61ffd85  checkout.jar", COREUTILS),
    ("d8758c24f6ab5a42d4f5f0abbeb94102  r-70239.pdf", COREUTILS),
    (
        "SHA256 (opsbot-2026.11.29.tar.gz) = 275b8092e73a7f5a346cb9e09b8ea8f02c2c1eeb7b22f4594079a43d3f66205a",
        "BSD sha256 -r/--tag output",
    ),
    ("Digest: sha256:7483368faeaa3d9f2fef33fc6eaecf85bab738b974d59dea8adb69bf6f10a5ab", DOCKER),
    ("Status: Downloaded newer image for registry.internal/shop/checkout:2026.11.29-1", DOCKER),
    (
        "image: registry.internal/shop/"
        "checkout@sha256:33b392e1c4eae597d7c4d266559245ed2c31d01417e2c2833bb1500ef087404d",
        K8S_YAML,
    ),
    ("#12 writing image sha256:1e8378512f22c71abe0996b4e2fc2d20e554e226f8ff8f7774856afabe2927d9 done", DOCKER),
    (
        "    Image ID:       docker-pullable://registry.internal/shop/checkout@sha256:"
        "7b828103fb2ef4877fa25ca32ba223870aa2343344014ca5c3e0b212c6032e2b",
        KUBECTL_DESCRIBE,
    ),
    (
        "    Container ID:   containerd://34d44c977f3695402afd3d95dd6ce9f58db9cf93cd0b7cec98ae506803765f47",
        KUBECTL_DESCRIBE,
    ),
    (
        '      "integrity": "sha512-'
        '+vkiDsh7hvr8m6MJAQWmfslQg9OKu0ezhBzJLVw5rzyvKMFzYXjXxJdgzvIKnWbVcsCaIDqrGC7MSwwV0h+QVA==",',
        NPM_LOCK,
    ),
    (
        '      "resolved": "https://registry.npmjs.org/express/-/express-4.21.1.tgz",',
        NPM_LOCK,
    ),
    (
        "requests==2.32.3 \\\n    --hash=sha256:51958b7417c76468ee915ec512bafe7892fc971dad6ba1d52689a40e96e8ec78",
        PIP_HASH,
    ),
    ("golang.org/x/net v0.31.0 h1:4DmPC0QGbkGU1kxsE+Ii0zAfvRhXExO+MkyzfwXr0n4=", GO_SUM),
    ("golang.org/x/net v0.31.0/go.mod h1:Xuxd9INfDejC8PxkAxGCiqWZuY2x51UU7uuAKG6FjOw=", GO_SUM),
    ('checksum = "c5e3ef0b686067461fa663b2d8e9cd54d6509e819b127e91b69df11b2c0b8e81"', CARGO),
    ('    "h1:udVmxrY8H1xy47iL1XV6SKZt4eu4M2TmmXUecdszLYA=",', TF_LOCK),
    ('    "zh:3cc1d8d31520c5c0a3cf55530aefd05a334dc6cc757b721e7ed4b727b8d3eb25",', TF_LOCK),
    (
        '<script src="https://cdn.example.com/app.js" '
        'integrity="sha384-qEDhr7gEZb4LNKS9wiNAfql9QdzMP1m5vZcnykklKNpNdE7uLfJnB0gzh0r6ivLn" crossorigin="anonymous">'
        "</script>",
        SRI,
    ),
    (
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:0032b64faa35f20da85a462ae0a689f68d86d830cf2db7444d8aafd36c6382eb\nsize 184320",
        GIT_LFS,
    ),
    ('ETag: "d41d8cd98f00b204e9800998ecf8427e"', AWS_HEADERS),
    (
        'ETag: "b4e515737d5b76f832df473eb89c897f-38"',
        "S3 multipart ETag, docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html",
    ),
    ("Content-MD5: Q2hlY2sgSW50ZWdyaXR5IQ==", "RFC 1864 Content-MD5 (its example value)"),
    ("x-goog-hash: crc32c=n03x6A==,md5=Ojk9c3dhfxgoKVVHYwFbHQ==", GCS),
    (
        "checksum: sha256:bcc517be1f5d94b475584156454bca97b577797d2b3d3d11f584afc5fcb301c0",
        "Helm chart index.yaml digest, helm.sh/docs/topics/chart_repository/",
    ),
    # ---- base64 payloads that are data
    (
        '{"message": {"data": "eyJvcmRlcklkIjoiNzAyMzkiLCJzdGF0dXMiOiJwYWlkIiwiYW1vdW50Ijo0OTk5fQ==", '
        '"messageId": "2070443601311540", "publishTime": "2026-11-29T03:07:32.114Z"}, '
        '"subscription": "projects/shop-prod/subscriptions/orders-push"}',
        PUBSUB,
    ),
    (
        "kafka consumer: topic=orders partition=3 offset=48213 key=order-70239 "
        "value=eyJvcmRlcl9pZCI6IDcwMjM5LCAic3RhdHVzIjogInBhaWQifQ==",
        KAFKA,
    ),
    (
        '{"awslogs": {"data": "H4sIAAAAAAAAAHWPwQqCMBjGX0V2bnPQMRhC8GS4kZ8JD5J9NB/ktEmWkf1nxQ=="}}',
        CW_LOGS,
    ),
    (
        '"Data": "eyJldmVudCI6InBhZ2VfdmlldyIsInBhdGgiOiIvY2hlY2tvdXQiLCJ0cyI6MTc5NjAwMDAwMH0=",',
        KINESIS,
    ),
    (
        '<img src="data:image/png;base64,'
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">',
        DATA_URL,
    ),
    ("data:application/json;base64,eyJoZWFsdGh5Ijp0cnVlfQ==", DATA_URL),
    ("grpc: recv message: CgxjaGVja291dC1hcGkSBAgBEAIaC3BnLXByaW1hcnk=", GRPC),
    (
        "Content-Transfer-Encoding: base64\n\n"
        "WW91ciBvcmRlciA3MDIzOSBoYXMgc2hpcHBlZC4gVHJhY2sgaXQgYXQgaHR0cHM6Ly9zaG9wLmV4YW1wbGUuY29tL3QvNzAyMzk=",
        MIME,
    ),
    ("Content-Security-Policy: script-src 'nonce-atmdLslnW0fTxp9t4Xvfag==' 'strict-dynamic'; object-src 'none'", CSP),
    ("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", WEBSOCKET),
    ("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", WEBSOCKET),
    ("payload=eyJldmVudCI6ImNoYXJnZS5zdWNjZWVkZWQifQ==", "base64 JSON webhook payload in an application log"),
    # ---- URLs without credentials
    ("GET https://payments.internal:8443/v1/charges?limit=20&starting_after=ch_3NxUk7 200 88ms", URLS),
    ("connecting to postgres://pg-primary.internal:5432/ledger (pool 5/5)", PG_URI),
    ("postgresql://pg-primary.internal:5432/ledger?sslmode=verify-full&application_name=checkout", PG_URI),
    ("postgresql://ledger@pg-replica.internal/ledger", PG_URI),
    ("redis://cache.internal:6379/0", "redis URI scheme, iana.org/assignments/uri-schemes/prov/redis"),
    ("amqp://rabbitmq.internal:5672/%2F", "RabbitMQ URI spec, rabbitmq.com/docs/uri-spec"),
    (
        "mongodb+srv://cluster0.ab1cd.mongodb.net/orders?retryWrites=true&w=majority",
        "MongoDB connection strings, mongodb.com/docs/manual/reference/connection-string/",
    ),
    (
        "jdbc:postgresql://pg-primary.internal:5432/ledger?ssl=true",
        "PostgreSQL JDBC URLs, jdbc.postgresql.org/documentation/use/",
    ),
    ("http://[2001:db8::1]:8080/healthz ok", URLS),
    ("http://[::1]:9090/metrics", URLS),
    ("git@github.com:acme/shop.git", "scp-like git remotes, git-scm.com/docs/git-clone#_git_urls"),
    ("ssh://deploy@bastion.internal:22/srv/checkout", URLS),
    ("https://deploy@git.internal/shop/checkout.git", URLS),
    ("s3://shop-receipts/2026/11/29/r-70239.pdf", "AWS CLI S3 URIs, docs.aws.amazon.com/cli/latest/reference/s3/"),
    ("gs://shop-assets/img/logo.png", "gcloud storage URLs, cloud.google.com/storage/docs/request-endpoints"),
    (
        "https://shop-receipts.s3.eu-west-1.amazonaws.com/2026/11/29/r-70239.pdf"
        "?response-content-disposition=inline&versionId=3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY",
        "S3 object URLs, docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html",
    ),
    (
        "https://storage.googleapis.com/download/storage/v1/b/shop-assets/o/logo.png?generation=1732848452123456&alt=media",
        "Cloud Storage JSON API download URLs, cloud.google.com/storage/docs/json_api/v1/objects/get",
    ),
    (
        "https://accounts.google.com/o/oauth2/v2/auth?client_id=1234567890-a1b2c3.apps.googleusercontent.com"
        "&redirect_uri=https%3A%2F%2Fshop.example.com%2Fcallback&response_type=code&scope=openid%20email"
        "&state=af0ifjsldkj",
        OIDC,
    ),
    (
        "https://api.github.com/repos/acme/shop/pulls?state=open&per_page=100&page=2",
        "GitHub REST API pagination, docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api",
    ),
    (
        "https://grafana.internal/d/checkout-red/checkout?orgId=1&from=now-6h&to=now&var-service=checkout",
        "Grafana dashboard URLs, grafana.com/docs/grafana/latest/dashboards/",
    ),
    (
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "EC2 instance metadata paths, docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html",
    ),
    ("file:///var/lib/checkout/state.db", "RFC 8089 file URIs"),
    ("mailto:oncall-payments@acme.example?subject=INC-4412", "RFC 6068 mailto URIs"),
    (
        "https://auth.internal/.well-known/openid-configuration",
        "OpenID Connect Discovery, openid.net/specs/openid-connect-discovery-1_0.html",
    ),
    ("https://auth.internal/oauth2/token", "RFC 6749 token endpoint"),
    # ---- Kubernetes
    (
        "NAME                        READY   STATUS             RESTARTS      AGE\n"
        "checkout-7d9f8c6b5-x2x9z    1/1     Running            0             3h\n"
        "checkout-7d9f8c6b5-q8w4k    0/1     CrashLoopBackOff   7 (41s ago)   14m",
        KUBECTL,
    ),
    (
        "NAME                  TYPE                                  DATA   AGE\n"
        "checkout-env          Opaque                                2      41d\n"
        "default-token-x7k2p   kubernetes.io/service-account-token   3      300d\n"
        "registry-pull         kubernetes.io/dockerconfigjson        1      120d",
        KUBECTL,
    ),
    (
        "Name:         checkout-env\nNamespace:    shop\nType:  Opaque\n\nData\n====\n"
        "DATABASE_URL:  87 bytes\nREDIS_HOST:    14 bytes",
        KUBECTL_DESCRIBE,
    ),
    (
        "  Normal   Pulled     2m (x3 over 14m)  kubelet  Successfully pulled image "
        '"registry.internal/shop/checkout:2026.11.29-1" in 1.204s',
        KUBECTL_DESCRIBE,
    ),
    (
        "  Warning  BackOff    41s (x7 over 14m)  kubelet  Back-off restarting failed container checkout",
        KUBECTL_DESCRIBE,
    ),
    (
        "  kube-api-access-7x2lq:\n    Type:                    Projected (a volume that contains injected data from "
        "multiple sources)\n    TokenExpirationSeconds:  3607\n    ConfigMapName:           kube-root-ca.crt",
        KUBECTL_DESCRIBE,
    ),
    ('deployment "checkout" successfully rolled out', "kubectl rollout status output"),
    ("pod/checkout-7d9f8c6b5-x2x9z   12m   181Mi", "kubectl top pod output"),
    ("deployment.apps/sk-learn-model-server-7d9f8c6b5 rolled out", KUBECTL),
    ("      serviceAccountName: checkout\n      automountServiceAccountToken: false", K8S_YAML),
    (
        "        env:\n        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n"
        "              name: checkout-env\n              key: DATABASE_URL",
        K8S_YAML,
    ),
    ("        envFrom:\n        - secretRef:\n            name: checkout-env", K8S_YAML),
    ("  imagePullSecrets:\n  - name: registry-pull", K8S_YAML),
    (
        "LAST SEEN   TYPE      REASON      OBJECT                         MESSAGE\n"
        "2m          Warning   Unhealthy   pod/checkout-7d9f8c6b5-q8w4k   Readiness probe failed: HTTP probe failed "
        "with statuscode: 503",
        KUBECTL,
    ),
    # ---- systemd, journald, sshd, sudo
    ("Nov 29 03:07:32 web-1 systemd[1]: Started checkout.service - Checkout API.", SYSLOG),
    ("Nov 29 03:07:33 web-1 checkout[4121]: listening on :8080", SYSLOG),
    ("Nov 29 03:07:40 web-1 systemd[1]: checkout.service: Main process exited, code=exited, status=1/FAILURE", SYSLOG),
    (
        "Nov 29 03:07:41 web-1 kernel: Out of memory: Killed process 4121 (checkout) "
        "total-vm:2249732kB, anon-rss:1843204kB",
        SYSLOG,
    ),
    ("2026-11-29T03:07:32+0000 web-1 systemd[1]: Reloading nginx.service - A high performance web server...", SYSLOG),
    (
        "Nov 29 03:07:34 bastion sshd[2210]: Accepted publickey for deploy from 10.0.3.17 port 52144 ssh2: "
        "ED25519 SHA256:Tk8r8kHcNiNz/taF1MgwlKFVNhAxhJVMi7cijDp+l+w",
        SSHD,
    ),
    (
        "Nov 29 03:07:35 bastion sshd[2231]: Failed password for invalid user admin from 198.51.100.23 port 40522 ssh2",
        SSHD,
    ),
    (
        "Nov 29 03:07:35 bastion sshd[2210]: pam_unix(sshd:session): session opened for user "
        "deploy(uid=1001) by (uid=0)",
        SSHD,
    ),
    (
        "Nov 29 03:07:36 web-1 sudo:   deploy : TTY=pts/0 ; PWD=/home/deploy ; USER=root ; "
        "COMMAND=/usr/bin/systemctl restart checkout",
        SUDO,
    ),
    # ---- access logs
    (
        '203.0.113.7 - - [29/Nov/2026:03:07:32 +0000] "GET /v1/checkout HTTP/1.1" 502 157 "-" '
        '"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"',
        NGINX,
    ),
    ('10.0.3.17 - - [29/Nov/2026:03:07:33 +0000] "POST /oauth/token HTTP/1.1" 200 412 "-" "okhttp/4.12.0"', NGINX),
    ('10.0.3.17 - - [29/Nov/2026:03:07:34 +0000] "GET /api/v1/keys HTTP/1.1" 200 2311 "-" "curl/8.5.0"', NGINX),
    (
        '10.0.3.17 - - [29/Nov/2026:03:07:35 +0000] "POST /password-reset HTTP/1.1" 302 0 '
        '"https://shop.example.com/login" "Mozilla/5.0"',
        NGINX,
    ),
    (
        "2026/11/29 03:07:32 [error] 31#31: *5 connect() failed (111: Connection refused) while connecting to "
        'upstream, client: 10.0.3.17, server: shop.example.com, request: "GET /v1/checkout HTTP/1.1", '
        'upstream: "http://10.0.5.22:8080/v1/checkout", host: "shop.example.com"',
        NGINX_ERROR,
    ),
    ('127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326', APACHE),
    (
        "[Sun Nov 29 03:07:32.114520 2026] [proxy_http:error] [pid 4121:tid 140] (70007)The timeout specified "
        "has expired: [client 10.0.3.17:52144] AH01102: error reading status line from remote server",
        "Apache httpd error log, httpd.apache.org/docs/2.4/logs.html#errorlog",
    ),
    (
        "https 2026-11-29T03:07:32.114420Z app/shop-alb/50dc6c495c0c9188 203.0.113.7:46532 10.0.5.22:8080 "
        '0.000 0.026 0.000 200 200 34 366 "GET https://shop.example.com:443/v1/orders HTTP/1.1" "curl/8.5.0" '
        "ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/"
        'checkout/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "shop.example.com" '
        '"arn:aws:acm:eu-west-1:123456789012:certificate/12345678-1234-1234-1234-123456789012" 0 '
        '2026-11-29T03:07:32.088000Z "forward" "-" "-" "10.0.5.22:8080" "200" "-" "-"',
        ALB,
    ),
    (
        "haproxy[4121]: 10.0.3.17:52144 [29/Nov/2026:03:07:32.114] https-in~ checkout/web-1 0/0/1/12/13 200 1432 "
        '- - ---- 12/12/0/0/0 0/0 "GET /v1/orders HTTP/1.1"',
        "HAProxy HTTP log format, docs.haproxy.org/2.8/configuration.html#8.2.3",
    ),
    # ---- stack traces
    (
        'java.lang.NullPointerException: Cannot invoke "String.length()" because "token" is null\n'
        "\tat com.acme.checkout.TokenRefresher.refresh(TokenRefresher.java:42)\n"
        "\tat com.acme.checkout.PaymentClient.charge(PaymentClient.java:118)\n"
        "Caused by: java.net.SocketTimeoutException: Read timed out",
        JAVA,
    ),
    ("\tat org.springframework.security.authentication.ProviderManager.authenticate(ProviderManager.java:182)", JAVA),
    ("\t... 23 common frames omitted", JAVA),
    (
        "Traceback (most recent call last):\n"
        '  File "/srv/checkout/app/auth.py", line 88, in verify_token\n'
        '    claims = jwt.decode(token, key, algorithms=["RS256"])\n'
        "jwt.exceptions.ExpiredSignatureError: Signature has expired",
        PYTHON,
    ),
    (
        '  File "/usr/lib/python3.12/site-packages/botocore/credentials.py", line 2118, in load_credentials\n'
        "botocore.exceptions.NoCredentialsError: Unable to locate credentials",
        PYTHON,
    ),
    (
        "panic: runtime error: invalid memory address or nil pointer dereference\n"
        "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x4a5f2c]\n\n"
        "goroutine 1 [running]:\n"
        "main.(*Server).handleLogin(0xc0000a4000, {0x7f3a2c, 0xc0001b2000}, 0xc0001a8000)\n"
        "\t/src/cmd/checkout/login.go:57 +0x2c",
        GO_PANIC,
    ),
    (
        "Error: self-signed certificate in certificate chain\n"
        "    at TLSSocket.onConnectSecure (node:_tls_wrap:1674:34)\n"
        "    at TLSSocket.emit (node:events:519:28)",
        NODE,
    ),
    (
        "thread 'main' panicked at src/main.rs:12:5:\ncalled `Option::unwrap()` on a `None` value",
        "Rust panic message, doc.rust-lang.org/std/macro.panic.html",
    ),
    # ---- Prometheus
    ("# HELP http_requests_total The total number of HTTP requests.", PROMETHEUS),
    ("# TYPE http_requests_total counter", PROMETHEUS),
    ('http_requests_total{method="post",code="200"} 1027 1395066363000', PROMETHEUS),
    ('http_request_duration_seconds_bucket{le="0.05"} 24054', PROMETHEUS),
    ("process_open_fds 38", PROMETHEUS),
    ("go_memstats_alloc_bytes 2.383064e+06", PROMETHEUS),
    (
        'vault_token_count{namespace="root"} 42',
        "Vault telemetry, developer.hashicorp.com/vault/docs/internals/telemetry/metrics/core-system",
    ),
    ('opsbot_model_tokens_total{kind="prompt"} 182734', PROMETHEUS),
    (
        'ALERTS{alertname="CheckoutHigh5xx",alertstate="firing",severity="page"} 1',
        "Prometheus ALERTS series, prometheus.io/docs/prometheus/latest/configuration/alerting_rules/",
    ),
    # ---- Terraform
    ("  # aws_db_instance.ledger will be updated in-place", TERRAFORM),
    ('  ~ resource "aws_db_instance" "ledger" {', TERRAFORM),
    ('      ~ instance_class = "db.r6g.large" -> "db.r6g.xlarge"', TERRAFORM),
    ("      ~ password       = (sensitive value)", TERRAFORM),
    ("      + secret_string  = (sensitive value)", TERRAFORM),
    ('        id             = "ledger-prod"', TERRAFORM),
    ("Plan: 0 to add, 1 to change, 0 to destroy.", TERRAFORM),
    ("random_password.db: Creation complete after 0s [id=none]", TERRAFORM),
    ("module.vpc.aws_subnet.private[0]: Refreshing state... [id=subnet-0a1b2c3d4e5f67890]", TERRAFORM),
    ("Note: Objects have changed outside of Terraform", TERRAFORM),
    # ---- databases, caches
    ("2026-11-29 03:07:32.114 UTC [4121] LOG:  checkpoint complete: wrote 1432 buffers (8.7%)", POSTGRES),
    ('2026-11-29 03:07:33.201 UTC [4188] FATAL:  password authentication failed for user "ledger"', POSTGRES),
    (
        '2026-11-29 03:07:33.201 UTC [4188] DETAIL:  Connection matched file "/etc/postgresql/16/'
        'main/pg_hba.conf" line 99: "host all all 10.0.0.0/8 scram-sha-256"',
        POSTGRES,
    ),
    ("ERROR 1045 (28000): Access denied for user 'shop'@'10.0.3.17' (using password: YES)", MYSQL),
    ("NOAUTH Authentication required.", REDIS),
    ("WRONGPASS invalid username-password pair or user is disabled.", REDIS),
    # ---- public keys, certificates, fingerprints
    ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINAGYx5dKTi1rbZ8s7ns5DfrRqOk2zGCDH3aBT+dh1uE deploy@bastion", SSH_KEYS),
    (f"ssh-rsa {SSH_RSA_PUBLIC} ops@bastion", SSH_KEYS),
    ("github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl", GITHUB_KEYS),
    ("SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU", GITHUB_KEYS),
    ("256 SHA256:C1/57D3okuGrgYA0cMUesDZOl4C884NDzRTH57FU86Y deploy@bastion (ED25519)", SSH_KEYS),
    ("Host key fingerprint is SHA256:Tk8r8kHcNiNz/taF1MgwlKFVNhAxhJVMi7cijDp+l+w", SSH_KEYS),
    ("MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48", SSH_KEYS),
    (CERTIFICATE, PEM_PUBLIC),
    (PUBLIC_KEY, PEM_PUBLIC),
    (
        "sha256 Fingerprint="
        "3F:9A:1C:7E:52:D0:8B:44:E1:A9:06:7F:C2:3D:58:B1:90:4E:77:A3:1D:C8:5F:02:6B:E4:99:10:2A:C7:3B:88",
        OPENSSL,
    ),
    (
        "            X509v3 Subject Key Identifier:\n                "
        "14:2E:B3:17:B7:58:56:CB:AE:50:09:40:E6:1F:AF:9D:8B:14:C2:C6",
        OPENSSL,
    ),
    ("subject=CN = shop.example.com\nissuer=C = US, O = Let's Encrypt, CN = R11", OPENSSL),
    ("Verify return code: 0 (ok)", OPENSSL),
    ("gpg: using RSA key 4AEE18F83AFDEB23", GPG),
    ('gpg: Good signature from "GitHub (web-flow commit signing) <noreply@github.com>" [unknown]', GPG),
    ("Primary key fingerprint: 5DE3 E050 9C47 EA3C F04A  42D3 4AEE 18F8 3AFD EB23", GPG),
    (json.dumps({"kty": "RSA", "kid": "2026-11", "use": "sig", "alg": "RS256", "n": JWK_MODULUS, "e": "AQAB"}), JWKS),
    ("# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p", AGE_PUBLIC),
    ("PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", WIREGUARD),
    (
        "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "AWS KMS key ARNs, docs.aws.amazon.com/kms/latest/developerguide/concepts.html#key-id-key-ARN",
    ),
    # ---- Slack ids
    ("joined channel C0123ABC as U024BE7LH", SLACK_IDS),
    ("team_id=T061EG9R6 enterprise_id=E0A1B2C3D bot_id=B01234567 app_id=A05QXPL2M8T", SLACK_IDS),
    ('{"ok":true,"channel":"C0123ABC","ts":"1700000000.000100","message":{"bot_id":"B01234567"}}', SLACK_IDS),
    ('{"ok":false,"error":"not_authed"}', SLACK_IDS),
    ('{"ok":false,"error":"invalid_auth"}', SLACK_IDS),
    ("event_id=Ev08A1B2C3D4 thread_ts=1732848452.123456 client_msg_id=5c3e9d2a-63f1-4b8e-b0a1-4c2d9e6f7a81", SLACK_IDS),
    (
        "https://acme.slack.com/archives/C0123ABC/p1732848452123456",
        "Slack message permalinks, api.slack.com/methods/chat.getPermalink",
    ),
    ("file F0A1B2C3D4E shared in C0123ABC", SLACK_IDS),
    # ---- commit messages
    ("Rotate Stripe webhook secret (INC-4412)", COMMITS),
    ("Remove hard-coded password from test fixtures", COMMITS),
    (
        "Bump golang.org/x/crypto from 0.28.0 to 0.31.0",
        "Dependabot pull request titles, docs.github.com/en/code-security/dependabot",
    ),
    ("fix(auth): refresh the access token before it expires", COMMITS),
    (
        'Revert "Raise pool size to 20"\n\nThis reverts commit 2414721c8e6d3b1a0f9e8d7c6b5a4f3e2d1c0b9a.',
        "git revert message, git-scm.com/docs/git-revert",
    ),
    (
        "chore(deps): update dependency @aws-sdk/client-s3 to v3.700.0",
        "Renovate pull request titles, docs.renovatebot.com/",
    ),
    ("feat(secrets): read the signing key from Vault instead of the environment", COMMITS),
    # ---- CI, deploy tools
    ("Run actions/checkout@b4ffde65f46336ab88eb53be808477a3936bae11", GH_ACTIONS),
    ("##[group]GITHUB_TOKEN Permissions\nContents: read\nMetadata: read\n##[endgroup]", GH_ACTIONS),
    ("Secret source: Actions", GH_ACTIONS),
    ("TASK [rotate db password] ******************************************************", ANSIBLE),
    (
        'ok: [db-1] => {"censored": "the output has been hidden due to the fact that \'no_log: true\' was '
        'specified for this result", "changed": false}',
        ANSIBLE,
    ),
    ('Release "checkout" has been upgraded. Happy Helming!\nNAME: checkout\nREVISION: 42\nSTATUS: deployed', HELM),
    ("Login Succeeded", DOCKER_LOGIN),
    ("WARNING! Your password will be stored unencrypted in /root/.docker/config.json.", DOCKER_LOGIN),
    ("Success! Data written to: secret/data/shop/checkout", VAULT_CLI),
    ("Key             Value\n---             -----\nsealed          false\nversion         1.18.2", VAULT_CLI),
    ("ExternalSecret shop/checkout-env: SecretSynced (secret synced)", EXTERNAL_SECRETS),
    # ---- cloud CLIs
    (
        '{\n    "UserId": "AIDACKCEVSQ6C2EXAMPLE",\n    "Account": "123456789012",\n'
        '    "Arn": "arn:aws:iam::123456789012:user/ci-bot"\n}',
        "aws sts get-caller-identity output, docs.aws.amazon.com/cli/latest/reference/sts/get-caller-identity.html",
    ),
    ('            "KeyName": "ops-bastion",', AWS_CLI),
    (
        '        "PasswordLastUsed": "2026-11-28T22:10:07+00:00",',
        "aws iam get-user output, docs.aws.amazon.com/cli/latest/reference/iam/get-user.html",
    ),
    (
        '    "principalId": "AROACKCEVSQ6C2EXAMPLE:ci-session",',
        "CloudTrail userIdentity, docs.aws.amazon.com/awscloudtrail/latest/userguide/"
        "cloudtrail-event-reference-user-identity.html",
    ),
    ("2026-11-29 03:07:32     184320 r-70239.pdf", "aws s3 ls output"),
    (
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/ledger-AbCdEf",
        "Secrets Manager ARNs, docs.aws.amazon.com/secretsmanager/latest/userguide/reference_iam-permissions.html",
    ),
    ("kms: decrypt ok keyId=alias/shop-prod", "AWS KMS key aliases in an application log"),
    ("Updated property [core/project].", "gcloud config set output"),
    # ---- curl -v and headers
    ("* Connected to shop.example.com (203.0.113.10) port 443", CURL),
    ("* SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384 / X25519 / id-ecPublicKey", CURL),
    ("> GET /healthz HTTP/2\n> Host: shop.example.com\n> User-Agent: curl/8.5.0\n> Accept: */*", CURL),
    ("< HTTP/2 200\n< content-type: application/json\n< x-request-id: 2c3e9d2a-63f1-4b8e-b0a1-4c2d9e6f7a81", CURL),
    (
        'WWW-Authenticate: Bearer realm="api", error="invalid_token", error_description="The access token expired"',
        "RFC 6750 section 3 (WWW-Authenticate)",
    ),
    ('WWW-Authenticate: Basic realm="metrics"', "RFC 7617 section 2"),
    ("Strict-Transport-Security: max-age=63072000; includeSubDomains; preload", HTTP),
    ("Cache-Control: no-store", HTTP),
    ("Vary: Authorization, Accept-Encoding", HTTP),
    # ---- words about secrets, without values
    ("2026-11-29T02:40:00Z INFO  auth token issued user=u-70239", OPS_PROSE),
    ("2026-11-29T02:41:10Z WARN  auth login failed: bad password user=u-04211", OPS_PROSE),
    ("2026-11-29T02:41:12Z WARN  auth token expired for user=u-04211", OPS_PROSE),
    ("2026-11-29T02:41:15Z INFO  notifier password reset email sent to u-70239", OPS_PROSE),
    ("2026-11-29T02:41:17Z DEBUG catalog cache key computed in 0.4ms", OPS_PROSE),
    ("2026-11-29T02:41:20Z INFO  auth using key id 3 for new sessions", OPS_PROSE),
    ("2026-11-29T02:41:22Z INFO  vault-agent secret rotation complete", OPS_PROSE),
    ("2026-11-29T02:41:25Z INFO  auth token refresh scheduled in 300s", OPS_PROSE),
    ("2026-11-29T02:41:27Z WARN  auth JWT signature verification failed: kid 2026-11 not in JWKS", OPS_PROSE),
    ("2026-11-29T02:41:29Z INFO  admin API key revoked by u-0042", OPS_PROSE),
    (
        "2026-11-29T02:41:31Z INFO  auth loaded 3 signing keys from https://auth.internal/.well-known/jwks.json",
        OPS_PROSE,
    ),
    ("2026-11-29T02:41:33Z INFO  payments credentials refreshed from instance metadata", OPS_PROSE),
    (
        "botocore.credentials Found credentials in environment variables.",
        "botocore credential provider log, boto3.amazonaws.com/v1/documentation/api/latest/guide/credentials.html",
    ),
    ("2026-11-29T02:41:35Z WARN  payments no credentials found in environment, falling back to IMDS", OPS_PROSE),
    ("2026-11-29T02:41:37Z INFO  auth password policy: minimum 12 characters", OPS_PROSE),
    ("2026-11-29T02:41:39Z INFO  auth session expired for user u-04211", OPS_PROSE),
    ("2026-11-29T02:41:41Z INFO  auth MFA token accepted for u-70239", OPS_PROSE),
    ("2026-11-29T02:41:43Z INFO  kms key rotation: next rotation at 2026-12-01T00:00:00Z", OPS_PROSE),
    ("2026-11-29T02:41:45Z INFO  auth authentication succeeded for svc-checkout", OPS_PROSE),
    ("2026-11-29T02:41:47Z INFO  vault-agent token lookup-self ok, ttl=767h59m", OPS_PROSE),
    ("2026-11-29T02:41:49Z INFO  external-secrets 4 secrets synced, 0 failed", OPS_PROSE),
    ("2026-11-29T02:41:51Z INFO  auth token_type=Bearer expires_in=3600 scope=read:orders", OPS_PROSE),
    ("2026-11-29T02:41:53Z ERROR auth refresh token rejected: invalid_grant", OPS_PROSE),
    (
        "2026-11-29T02:41:55Z WARN  stripe Invalid API Key provided",
        "Stripe API error messages, docs.stripe.com/error-codes",
    ),
    (
        "ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no "
        "supported methods remain",
        "golang.org/x/crypto/ssh error text",
    ),
    ("Authorization failed for user u-1 (missing scope checkout:write)", OPS_PROSE),
    ("the Authorization header is stripped by the ingress before checkout-api", OPS_PROSE),
    ("paged oncall-payments@acme.example (PagerDuty incident Q1W2E3R4T5)", OPS_PROSE),
    # ---- settings about secrets
    ("token_ttl: 300", SETTINGS),
    ("password_min_length: 12", SETTINGS),
    ("secret_name: prod-db", SETTINGS),
    ("max_tokens: 1024", SETTINGS),
    ("jwt.token_ttl_s: 900", SETTINGS),
    (
        "GOOGLE_APPLICATION_CREDENTIALS=/var/secrets/google/key.json",
        "Application Default Credentials, cloud.google.com/docs/authentication/application-default-credentials",
    ),
    ("password_file: /run/secrets/db_password", "Docker secrets files, docs.docker.com/engine/swarm/secrets/"),
    (
        "SLACK_BOT_TOKEN: ${{ secrets.SLACK_BOT_TOKEN }}",
        "GitHub Actions secrets context, docs.github.com/en/actions/security-for-github-actions/"
        "security-guides/using-secrets-in-github-actions",
    ),
    ('token: "{{ .Values.slack.botToken }}"', "Helm template values, helm.sh/docs/chart_template_guide/values_files/"),
    (
        "password: ${DB_PASSWORD}",
        "docker compose variable interpolation, docs.docker.com/compose/how-tos/"
        "environment-variables/variable-interpolation/",
    ),
    (
        "credential_source = Ec2InstanceMetadata",
        "AWS config credential_source, docs.aws.amazon.com/cli/latest/userguide/cli-configure-role.html",
    ),
    ("docker login --password-stdin registry.internal", DOCKER_LOGIN),
    ("pg_dump --no-password --format=custom ledger", "pg_dump options, postgresql.org/docs/current/app-pgdump.html"),
    (
        '{"usage": {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}}',
        "OpenAI chat completion usage, platform.openai.com/docs/api-reference/chat/object",
    ),
    ("tokenizer: cl100k_base", SETTINGS),
    ("    pool_size: 5        # was 20 before 2026.11.29-1", "config/sample/configs/checkout.yaml"),
]
