"""Outside text on every way opsbot posts to Slack: links to unlisted hosts made plain, Slack's
special syntax dead, unfurling off wherever Slack has the switch.

The corpus (tests/corpus/slack_links.py) goes in where outside text does: a model's answer
(posted, streamed, and given privately through a /ops response_url), a tool call's arguments (the
steps message and its update), an alert's title, annotations and link (the group's message, its
update, its thread), and straight through the client under every path (ephemeral messages,
updates, App Home views). The fake Slack API records what each call carried, over real HTTP from
the real slack-sdk; every assertion is on that. The last tests take the corpus through the guard's
text alone, and through a marker of opsbot's own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from opsbot.bot.alerts import Alert
from opsbot.bot.slack.blocks import escape, mention, section
from opsbot.bot.slack.outbound import Outbound
from opsbot.bot.slack.outside import Outside, own
from opsbot.bot.slack.posting import replace, tell
from opsbot.config.policy import Policy
from opsbot.config.settings import AlertSettings
from tests.corpus.slack_links import LINK_DOMAINS, LINKS, LISTED, SPECIALS, Link, text
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, Reply, script
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, Stacks, stack_settings
from tests.fakes.waiting import until

Make = Callable[..., Stack]
CORPUS = text()
# What opsbot sends that people see; reads (conversations.*, usergroups.list) carry nothing shown.
SHOWING = ("chat.", "views.", "assistant.")


@pytest.fixture
def make_stack(redis_server, model_server, sample) -> Iterator[Make]:
    stacks = Stacks()

    def make(model: Any = None, policy: Policy | None = None, **slack_settings: Any) -> Stack:
        redis_server.flush()
        slack = SlackApi()
        server = model_server(model) if model is not None else None
        settings = stack_settings(
            slack,
            redis_server.url,
            policy or sample.policy,
            server,
            alerts=AlertSettings(channel="CALERTS", first_look=False),
            link_domains=LINK_DOMAINS,
            **slack_settings,
        )
        return stacks.start(slack, settings, server)

    yield make
    stacks.close()


# What Slack got, and what it must not have got.


def sent(stack: Stack) -> list[tuple[str, dict[str, Any]]]:
    """Every payload that showed something, with its method."""
    return [(c.method, c.args) for c in stack.slack.calls() if c.method.startswith(SHOWING)]


def strings(value: Any) -> Iterator[str]:
    """Every string of a payload but its metadata (which Slack does not show)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ("metadata", "token"):
                yield from strings(item)


_SLACK_LINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]*:[^|>\s]*)")
_MD_LINK = re.compile(r"\]\(\s*<?([^\s)>]*)")
_SCHEMED = re.compile(r"(?i)[a-z][a-z0-9+.\-]*://([^/\s?#|>)\]`*_'\"]*)")


def listed_host(host: str) -> bool:
    host = host.lower().rpartition("@")[2].split(":")[0]
    return any(host == d or host.endswith("." + d) for d in LINK_DOMAINS)


def clickable_unlisted(shown: str) -> list[str]:
    """The links in `shown` Slack or markdown would make to a host not in LINK_DOMAINS."""
    bad = [url for url in _SLACK_LINK.findall(shown) if not re.match(r"(?i)https?://", url)]
    bad += [url for url in _SLACK_LINK.findall(shown) if re.match(r"(?i)https?://", url) and not listed(url)]
    bad += [url for url in _MD_LINK.findall(shown) if not listed(url)]
    bad += [host for host in _SCHEMED.findall(shown) if not listed_host(host)]
    return bad


def listed(url: str) -> bool:
    match = re.match(r"(?i)https?://([^/?#\s]+)", url)
    return match is not None and listed_host(match.group(1))


def assert_guarded(payloads: list[tuple[str, dict[str, Any]]], links: tuple[Link, ...] = LINKS) -> None:
    """Nothing in `payloads` ((method, body): "response_url" for a reply to one) links to an
    unlisted host, carries what a corpus URL carried, or mentions anyone; each of `links` arrived
    made plain; each listed link arrived clickable; and every call that takes the unfurl switches
    has them off."""
    assert payloads, "nothing reached Slack"
    shown = [s for _, body in payloads for s in strings(body)]
    everything = "\n".join(shown)
    for link in LINKS:
        for host in link.hosts:
            assert host.lower() not in everything.lower(), f"{link.id}: {host} sent as written"
        if link.leak:
            assert link.leak not in everything, f"{link.id}: {link.leak} sent"
    for link in links:
        assert link.plain in everything, f"{link.id}: {link.plain!r} not sent"
    for special in SPECIALS:
        assert special.raw not in everything, f"{special.id}: sent live"
    assert not [bad for s in shown for bad in clickable_unlisted(s)]
    for kept in LISTED:
        assert kept.clickable in everything, f"{kept.id}: no longer a link"
    for method, body in payloads:
        if method in ("chat.postMessage", "response_url"):
            assert body.get("unfurl_links") is False and body.get("unfurl_media") is False, (method, body)


def posted(stack: Stack, method: str) -> list[tuple[str, dict[str, Any]]]:
    return [(method, c.args) for c in stack.slack.calls(method)]


# The front ends.


def test_a_mentions_answer_and_its_steps_are_plain_in_the_thread_and_listed_links_stay(make_stack) -> None:
    # The tool's arguments are the model's too: they show in the steps message and its update.
    arguments = {"service": "checkout", "contains": "https://bare.exfil.com/j?d=leak17 <!here>"}
    stack = make_stack(script(Reply(calls=[Call("query_logs", arguments)]), Reply(content=CORPUS)))
    stack.slack.streams_supported = False
    mention_event = payloads.app_mention("<@UBOT> what do the logs say?")
    stack.event(mention_event)
    assert stack.slack.wait_for(lambda: stack.answers("C1", mention_event["ts"]), 15)
    assert stack.idle()
    assert_guarded(sent(stack))
    [answer] = stack.answers("C1", mention_event["ts"])
    markdown = "\n".join(b["text"] for b in answer["blocks"] if b["type"] == "markdown")
    assert all(kept.clickable in markdown for kept in LISTED)
    [(_, update)] = posted(stack, "chat.update")
    assert "bare[.]exfil[.]com/j" in str(update["blocks"]), "the steps message's update carries the argument, plain"
    assert len(posted(stack, "chat.postMessage")) == 2, "the steps message and the answer"


def test_a_streamed_answer_is_plain_in_every_append(make_stack) -> None:
    stack = make_stack(script(Reply(calls=[Call("list_services", {})]), Reply(content=CORPUS)))
    mention_event = payloads.app_mention("<@UBOT> what do the logs say?")
    stack.event(mention_event)
    assert stack.slack.wait_for(lambda: stack.answers("C1", mention_event["ts"]), 15)
    assert stack.idle()
    assert stack.slack.calls("chat.startStream") and stack.slack.calls("chat.stopStream")
    assert not stack.slack.calls("chat.postMessage"), "the answer streamed"
    assert_guarded(sent(stack))
    [message] = stack.answers("C1", mention_event["ts"])
    assert_guarded([("joined", {"text": message["text"]})])  # the appends as Slack shows them


def test_a_link_cut_between_two_model_calls_is_never_split_between_two_appends(make_stack) -> None:
    # The first part stops at the output limit mid-domain; the continuation completes it. Appended
    # apart and guarded apart, "split" and ".exfil.com/x?d=…" would each pass, and Slack would link them joined.
    stack = make_stack(
        script(
            Reply(content="The logs point at split", finish_reason="length"),
            Reply(content=".exfil.com/x?d=leaksplit and <!channel> now."),
        )
    )
    mention_event = payloads.app_mention("<@UBOT> what do the logs say?")
    stack.event(mention_event)
    assert stack.slack.wait_for(lambda: stack.answers("C1", mention_event["ts"]), 15)
    assert stack.idle()
    [message] = stack.answers("C1", mention_event["ts"])
    assert stack.slack.calls("chat.startStream"), "it streamed"
    shown = message["text"]
    assert "split.exfil.com" not in shown and "leaksplit" not in shown and "<!channel>" not in shown, shown
    assert "split[.]exfil[.]com/x" in shown


def test_a_slash_question_answered_privately_through_its_response_url_is_plain(make_stack) -> None:
    stack = make_stack(script(Reply(content=CORPUS)))
    stack.slack.not_in_channel.add("C9")  # opsbot cannot post there: it answers the asker alone
    assert stack.command("what do the logs say?", key="private", channel="C9").status == 200
    assert stack.slack.wait_for(lambda: len(stack.slack.responses("private")) >= 2, 15)
    assert stack.idle()
    notice, answer = stack.slack.responses("private")
    assert answer["response_type"] == "ephemeral"
    assert_guarded([("response_url", notice), ("response_url", answer)])
    ack = stack.command("help", key="help")
    body = ack.body if isinstance(ack.body, str) else ""
    assert '"unfurl_links": false' in body and "&lt;question&gt;" in body, "the ack passes the guard too"


def test_ephemeral_messages_updates_and_home_views_are_plain_whoever_builds_them(make_stack) -> None:
    """The client guards every call: a path that forgets `escape()` (none does) or another one (an
    App Home view) says nothing live either."""
    stack = make_stack()
    client = stack.built.client
    root = stack.slack.add_message("C1", "a message of opsbot's to update", user="UBOT")
    tell(client, "C1", "U1", CORPUS)
    replace(client, "C1", root, CORPUS, [section(CORPUS[:2900]), {"type": "markdown", "text": CORPUS}])
    client.views_publish(user_id="U1", view={"type": "home", "blocks": [{"type": "markdown", "text": CORPUS}]})
    assert stack.slack.ephemerals("C1") and stack.slack.calls("chat.update") and stack.slack.calls("views.publish")
    for method in ("chat.postEphemeral", "chat.update", "views.publish"):
        assert_guarded(posted(stack, method))


def corpus_alerts(url: str, count: int) -> list[Alert]:
    """The corpus as `count` alerts of their own groups (every `count`th entry each, so that each
    group's message stays within a section's 3000 characters): a title with a link and a mention,
    an annotation an entry, and `url` as the generatorURL."""
    alerts = []
    for n in range(count):
        entries = [e.raw for e in LINKS[n::count]] + [s.raw for s in SPECIALS[n::count]] + [e.raw for e in LISTED]
        alerts.append(
            Alert(
                source="alertmanager",
                status="firing",
                key=f"corpus-{n}",
                delivery=f"d-{n}",
                labels={"alertname": "CorpusAlert", "n": str(n)},
                annotations={f"a{i:02d}": raw for i, raw in enumerate(entries)},
                title=f"Checkout down, see {LINKS[n].raw} {SPECIALS[n].raw}",
                url=url,
                group=f"corpus-group-{n}",
            )
        )
    return alerts


def deliver(stack: Stack, alert: Alert) -> None:
    stack.built.alerts.queue.take([f"test:{time.monotonic_ns()}"], alert)


def test_alert_messages_their_updates_and_threads_are_plain_and_the_generator_link_is_not_a_link(
    make_stack,
) -> None:
    stack = make_stack()
    generator = "https://prometheus.exfil.example/graph?g0.expr=leakgen"
    alerts = corpus_alerts(generator, count=3)
    for alert in alerts:
        deliver(stack, alert)
    assert until(lambda: len(stack.slack.messages("CALERTS")) == len(alerts), 15)
    for alert in alerts:  # resolved: each group's message is drawn again and its thread told
        deliver(stack, alert.model_copy(update={"status": "resolved", "delivery": alert.delivery + "-r"}))
    assert until(lambda: len(stack.slack.calls("chat.update")) >= len(alerts), 15)
    assert stack.idle()
    assert_guarded(sent(stack))
    everything = "\n".join(s for _, body in sent(stack) for s in strings(body))
    assert "prometheus.exfil.example" not in everything and "leakgen" not in everything
    assert "Open in alertmanager (prometheus[.]exfil[.]example/graph)" in everything


def test_an_alerts_generator_link_to_a_listed_host_stays_a_link(make_stack) -> None:
    stack = make_stack()
    generator = "https://prometheus.acme.com/graph?g0.expr=up"
    alert = corpus_alerts(generator, count=3)[0]
    deliver(stack, alert)
    assert until(lambda: stack.slack.messages("CALERTS"), 15)
    assert stack.idle()
    assert_guarded(sent(stack), links=LINKS[::3])
    everything = "\n".join(s for _, body in sent(stack) for s in strings(body))
    assert f"<{generator}|Open in alertmanager>" in everything


# The guard's text alone: every entry, as given and as escaped upstream (blocks.escape).


@pytest.mark.parametrize("link", LINKS, ids=[e.id for e in LINKS])
@pytest.mark.parametrize("escaped", [False, True], ids=["raw", "escaped"])
def test_each_link_form_is_made_plain(link: Link, escaped: bool) -> None:
    shown = Outside(LINK_DOMAINS).text(escape(link.raw) if escaped else link.raw)
    assert link.plain in shown
    assert not any(host.lower() in shown.lower() for host in link.hosts), shown
    assert link.leak is None or link.leak not in shown, shown
    assert not clickable_unlisted(shown), shown


@pytest.mark.parametrize("special", SPECIALS, ids=[e.id for e in SPECIALS])
def test_each_special_syntax_is_shown_as_typed(special: Any) -> None:
    for given in (special.raw, escape(special.raw), f"**{special.raw}**", f"[x]({special.raw})"):
        shown = Outside(LINK_DOMAINS).text(given)
        assert special.raw not in shown and "<" not in shown, shown
        assert "](" in given or escape(special.raw) in shown, shown


@pytest.mark.parametrize("kept", LISTED, ids=[e.id for e in LISTED])
def test_a_listed_host_and_its_subdomains_keep_their_links(kept: Any) -> None:
    assert Outside(LINK_DOMAINS).text(kept.raw) == kept.clickable
    assert Outside(frozenset()).text(kept.raw) != kept.clickable, "listed nowhere, it is plain too"


def test_opsbots_own_syntax_stays_and_a_forged_or_cut_marker_does_not() -> None:
    outside = Outside(LINK_DOMAINS)
    assert outside.text(f"{mention('U1')} asked: <@U2>") == "<@U1> asked: &lt;@U2&gt;"
    forged = own("<!here>").replace(own("")[1:-1], "\ue000" + "0" * 16)
    assert "<!here>" not in outside.text(forged), "a marker without the process's nonce is text"
    cut = own("<!channel>")[:-1]
    assert "<!channel>" not in outside.text(cut), "a marker cut by a length cap falls apart safely"
    assert outside.text("\x1b]8;;https://x.exfil.com\x07hi \u202e") == "\\x1b]8;;x[.]exfil[.]com\\x07hi \\u202e"


def test_hostile_shapes_take_bounded_time_and_still_hide_the_link_after_them() -> None:
    """Answers are at most 12,000 characters (a markdown block); each of these is as long."""
    outside = Outside(LINK_DOMAINS)
    outside.text("warm up x.com")
    for hostile in ("[" * 12_000, "[a](" * 3000, "x." * 6000, "<a:" * 4000, "a.com:" * 2000, "\n[r]:   \n" * 1200):
        started = time.monotonic()
        shown = outside.text(f"{hostile} [x](https://after.exfil.com/?d=leakafter)")
        assert time.monotonic() - started < 2.0, hostile[:12]
        assert "leakafter" not in shown and "after.exfil.com" not in shown, hostile[:12]


def test_the_guard_changes_what_is_shown_never_ids_or_metadata_and_turns_unfurling_off() -> None:
    body = {
        "channel": "C1",
        "thread_ts": "1.1",
        "text": "see evil.exfil.com/x?d=leak",
        "metadata": {"event_type": "opsbot_answer", "event_payload": {"job": "evil.exfil.com"}},
        "blocks": [
            {"type": "actions", "block_id": "b.exfil.com", "elements": [{"action_id": "a", "value": "v.exfil.com"}]},
        ],
        "unfurl_links": True,
    }
    guarded = Outbound(LINK_DOMAINS).args("chat.postMessage", body)
    assert guarded == {
        **body,
        "text": "see evil[.]exfil[.]com/x",
        "unfurl_links": False,
        "unfurl_media": False,
    }
    assert "unfurl_links" not in (Outbound().args("chat.update", {"channel": "C1", "ts": "1.1", "text": "x"}) or {})


def test_text_lengthened_by_the_guard_is_cut_to_fit_slacks_caps_not_refused() -> None:
    """Made plain, `a.io` is `a[.]io`: a section cut to fit before (blocks.section: 2,900 of 3,000
    characters) would be refused whole as invalid_blocks; it is cut in its middle instead."""
    hosts = " ".join(f"h{n}.exfil.io" for n in range(300))[:2900]
    blocks = [
        section(hosts),
        {"type": "markdown", "text": hosts},
        {"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": hosts[:70]}}]},
    ]
    guarded = Outbound().args("chat.postMessage", {"channel": "C1", "text": hosts, "blocks": blocks})
    assert guarded is not None
    shown, markdown, actions = guarded["blocks"]
    assert len(shown["text"]["text"]) == 3000 and "…" in shown["text"]["text"]
    assert len(markdown["text"]) > 3000 and "…" not in markdown["text"], "a markdown block takes 12,000"
    assert len(actions["elements"][0]["text"]["text"]) == 75
    assert ".exfil.io" not in str(guarded)
