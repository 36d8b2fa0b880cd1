from tests.fakes.model_server import Call, Reply, has_tools, tool_results


def test_tool_then_answer(model_server, make_agent):
    def policy(body):
        results = tool_results(body)
        if not results:
            return Reply(calls=[Call("query_logs", {"service": "checkout", "level": "ERROR", "limit": 2})])
        return Reply(content="checkout 502s: " + results[0]["data"]["lines"].splitlines()[-1][:40])

    server = model_server(policy)
    agent = make_agent(server)
    reply = agent.run("why 502?", thread="t1")
    print(reply.model_dump_json(indent=1))
    assert reply.stop_reason == "answered"
    assert reply.text.startswith("checkout 502s: 2026")
    reply2 = agent.run("and now?", thread="t1")
    assert reply2.stop_reason == "answered"
