"""query_alerts: firing alerts and silences of an Alertmanager, filtered by label matchers, as the
model reads them (labels, state, since when, summary and description; a silence's id, matchers,
end, author and comment), capped with totals when cut; and `show`, the same for people."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ...config.policy import Policy, Principal
from ..base import ErrorType, Tool, ToolResult
from ..http import described, wait_s
from .args import QueryAlertsArgs
from .client import Client
from .matchers import Matcher, parse_matchers

# query_alerts asks for the alerts, then the silences the matchers name, then maybe every silence.
REQUESTS = 3
# The silences listed are the ones that mute or will mute; expired ones linger in Alertmanager.
LIVE_SILENCES = ("active", "pending")


def query_alerts_tool(policy: Policy, environ: Mapping[str, str] | None = None) -> Tool[QueryAlertsArgs]:
    """query_alerts on `policy.alertmanagers`; `environ` holds the headers' variables (tests only)."""

    def run(args: QueryAlertsArgs, principal: Principal | None) -> ToolResult:
        client = client_for(policy, args.source, principal, environ)
        return client if isinstance(client, ToolResult) else query_alerts(client, args)

    return Tool(
        name="query_alerts",
        description=(
            "Firing alerts of an Alertmanager (labels, state: active, or suppressed by a silence or an "
            "inhibition, since when, summary) and its silences, filtered by label matchers. "
            f"Alertmanagers: {described(policy.alertmanagers)}."
        ),
        args_model=QueryAlertsArgs,
        run=run,
        timeout_s=wait_s(policy.alertmanagers, REQUESTS),
        summarize=lambda data: str(data["summary"]),
        show=show,
    )


def client_for(
    policy: Policy, name: str, principal: Principal | None, environ: Mapping[str, str] | None
) -> Client | ToolResult:
    source = policy.alertmanagers.get(name)
    if source is None:
        return ToolResult.unknown("Alertmanager", name, policy.alertmanagers)
    if not source.access.allows(principal):
        return ToolResult.failure(
            ErrorType.denied,
            f"you may not use Alertmanager {name}: {'; '.join(source.access.missing(principal))}",
            hint="tell the user who may use it; do not try other ways to reach it",
        )
    return Client(name, source, environ)


def query_alerts(client: Client, args: QueryAlertsArgs) -> ToolResult:
    matchers = parse_matchers(args.matchers)
    if isinstance(matchers, ToolResult):
        return matchers
    filters = [("filter", m.text()) for m in matchers]
    flags = [("active", "true"), ("silenced", _flag(args.silenced)), ("inhibited", _flag(args.inhibited))]
    alerts = client.get("alerts", [*filters, *flags])
    if isinstance(alerts, ToolResult):
        return alerts
    data: dict[str, Any] = {"source": client.name, **_alerts(alerts, client.source.max_alerts)}
    if args.list_silences:
        silences = _silences_of(client, filters, data["alerts"])
        if isinstance(silences, ToolResult):
            return silences
        data.update(_silences(silences, client.source.max_silences))
    data["summary"] = _said(data, matchers)
    return ToolResult.success(data)


def _silences_of(client: Client, filters: list[tuple[str, str]], alerts: list[dict[str, Any]]) -> Any:
    """The silences the matchers name, and those muting a shown alert: Alertmanager's `filter=`
    matches a silence's own `=` matchers, so a silence of `instance=db-1` is not found by
    `alertname=DiskFull` although it mutes that alert."""
    named = client.get("silences", filters)
    if isinstance(named, ToolResult):
        return named
    muting = {silence_id for alert in alerts for silence_id in alert.get("silenced_by", [])}
    missing = muting - {s.get("id") for s in named}
    if not missing:
        return named
    every = client.get("silences", [])
    return every if isinstance(every, ToolResult) else named + [s for s in every if s.get("id") in missing]


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _alerts(found: list[dict[str, Any]], cap: int) -> dict[str, Any]:
    # Newest first: what started last is most often what the question is about.
    ordered = sorted(found, key=lambda a: str(a.get("startsAt", "")), reverse=True)
    data: dict[str, Any] = {"alerts": [_alert(a) for a in ordered[:cap]], "alerts_total": len(found)}
    if len(found) > cap:
        data["alerts_cut"] = {
            "shown": cap,
            "by_alertname": dict(Counter(str(a.get("labels", {}).get("alertname", "")) for a in found).most_common(10)),
            "by_state": dict(Counter(_state(a) for a in found)),
        }
    return data


def _alert(alert: dict[str, Any]) -> dict[str, Any]:
    status = alert.get("status", {})
    annotations = alert.get("annotations", {})
    shown: dict[str, Any] = {
        "labels": alert.get("labels", {}),
        "state": _state(alert),
        "starts_at": alert.get("startsAt"),
    }
    for key in ("summary", "description"):
        if annotations.get(key):
            shown[key] = annotations[key]
    if status.get("silencedBy"):
        shown["silenced_by"] = status["silencedBy"]
    if status.get("inhibitedBy"):
        shown["inhibited_by"] = status["inhibitedBy"]
    return shown


def _state(alert: dict[str, Any]) -> str:
    return str(alert.get("status", {}).get("state", "unknown"))


def _silences(found: list[dict[str, Any]], cap: int) -> dict[str, Any]:
    live = [s for s in found if s.get("status", {}).get("state") in LIVE_SILENCES]
    # The soonest to end first: what will stop muting next.
    ordered = sorted(live, key=lambda s: str(s.get("endsAt", "")))
    data: dict[str, Any] = {"silences": [_silence(s) for s in ordered[:cap]], "silences_total": len(live)}
    if len(live) > cap:
        data["silences_cut"] = {"shown": cap}
    return data


def _silence(silence: dict[str, Any]) -> dict[str, Any]:
    matchers = [Matcher.from_api(m).shown() for m in silence.get("matchers", [])]
    return {
        "id": silence.get("id"),
        "state": silence.get("status", {}).get("state"),
        "matchers": matchers,
        "starts_at": silence.get("startsAt"),
        "ends_at": silence.get("endsAt"),
        "created_by": silence.get("createdBy"),
        "comment": silence.get("comment"),
    }


def _said(data: dict[str, Any], matchers: list[Matcher]) -> str:
    where = " matching " + ", ".join(m.shown() for m in matchers) if matchers else ""
    states = Counter(a["state"] for a in data["alerts"])
    total = data["alerts_total"]
    said = f"{total} firing alert(s){where}"
    if total and "alerts_cut" not in data:
        said += " (" + ", ".join(f"{n} {state}" for state, n in sorted(states.items())) + ")"
    elif total:
        said += f"; showing the newest {data['alerts_cut']['shown']}, counts over all in alerts_cut"
    if "silences_total" in data:
        said += f"; {data['silences_total']} silence(s) active or pending"
    return said


def show(data: Mapping[str, Any]) -> str:
    """The result for a person: a line per alert, then a line per silence."""
    lines = [str(data["summary"])]
    for alert in data["alerts"]:
        labels = ", ".join(f"{k}={v}" for k, v in alert["labels"].items())
        about = f" — {alert['summary']}" if alert.get("summary") else ""
        lines.append(f"  [{alert['state']}] {{{labels}}} since {alert['starts_at']}{about}")
    if data.get("silences"):
        lines.append("silences:")
    for silence in data.get("silences", []):
        lines.append(
            f"  {silence['id']} [{silence['state']}] {{{', '.join(silence['matchers'])}}} until {silence['ends_at']}"
            f" by {silence['created_by']}: {silence['comment']}"
        )
    return "\n".join(lines)
