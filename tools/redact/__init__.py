"""Secret redaction for any text that leaves a tool: to the model, to a chat, to a log.

A redaction is marked `[REDACTED:kind]` so readers know something was there. The layers, in
the order they run (docs/security.md says which catches what):

1. spanning rules, on whole texts (`text.py`): private keys in PEM/OpenSSH/PGP armour, cut or
   whole, and the bare body lines of one (`pem.py`); Kubernetes env `name`+`value` pairs
   (`kubernetes.py`) and every value of a Secret's `data` and `stringData`, in YAML and JSON, one
   object, several documents or a List (`secret_yaml.py`, `secret_json.py`);
2. vendor token shapes (`shapes.py`, from gitleaks' default rules, checked against detect-secrets'
   plugins): recognisable wherever they appear, beside any key or none;
3. context (`context.py`, `urls.py`, `headers.py`): an AWS secret key beside its key id, URL
   userinfo, `Authorization` headers, Docker `auth` strings, a random value right after a word
   naming a secret;
4. `key = value` pairs whose key names a secret (`pairs.py`, `keys.py`), in any config format;
5. vendor keys with no shape of their own (32 or 40 hex or base62 characters) after their
   vendor's name, inside its SDK's call, or after words naming a key (`vendors.py`);
6. for parsed data (`redact`, `redact_structure`, `structure.py`): the value under any dict key
   that names a secret, whatever its shape, numbers included, a Secret object's data, and dict
   keys that are themselves secrets.

What is deliberately left readable (one rule for text and structures alike, `markers.harmless`):

- values that cannot authenticate: references and masks (`${DB_PASSWORD}`, `$DB_PASSWORD`,
  `{{ .Values.token }}`, `<your key here>`, `********`, a file path, an ARN), booleans and null;
  but not in a Secret's data, where a value refers to nothing: there every value is hidden;
- digests and ids of a key's length (commit ids, checksums, trace ids), before a word or
  labelled as what they are (`vendors.py`);
- keys that describe a secret rather than hold it (`token_ttl`, `password_min_length`,
  `secret_name`, `password_file`, `token_url`, `token_type`...), see `keys.py`;
- counts of model tokens: a number under a plural key (`max_tokens: 1024`, `prompt_tokens`).

Vendors' documented example keys (`AKIAIOSFODNN7EXAMPLE`, jwt.io's sample token) are redacted
like real ones: an allowlist of famous examples would be a list of values that leak when someone
pastes them into a real config, and a shape cannot tell an example from a key.

Every pattern runs in linear time on any input: quantifiers that could overlap are possessive or
bounded, and decisions that would need backtracking are made in Python on the match instead.
"""

from .markers import Kind, marker, marker_free
from .pem import MARKER, in_body_run, might_be_key_material, redact_body_runs
from .structure import redact, redact_structure
from .text import redact_lines, redact_spanning, redact_text

__all__ = [
    "Kind",
    "MARKER",
    "in_body_run",
    "marker",
    "marker_free",
    "might_be_key_material",
    "redact",
    "redact_body_runs",
    "redact_lines",
    "redact_spanning",
    "redact_structure",
    "redact_text",
]
