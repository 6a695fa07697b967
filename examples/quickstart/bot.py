"""A tiny rule-based support bot for Acme Cloud, so the quickstart runs offline.

Replace the provider in promptfooconfig.yaml with your real bot (for example
`openai:chat:gpt-4.1-mini`) and keep the tests.

This version is the "pull request" of the quickstart: it adds a billing intent whose keywords
also catch double-charge complaints, so the refund test regresses against `baseline.json`,
which was saved from the previous version of this file.
"""

import json
import re

ANSWERS = {
    "billing": "You can see your invoices and change your payment method under Settings > Billing.",
    "reset": "To reset your password, open https://acme.example/reset, enter your account email and follow the link we send you. The link expires after 30 minutes.",
    "refund": "I'm sorry about the double charge. Refunds for duplicate payments are issued automatically within 5 business days. If you would like, I can hand this over to a human billing agent.",
    "outage": "There is a known incident affecting the EU-West region since 14:02 UTC. Our engineers expect a fix by 18:00 UTC; you can follow updates at https://status.acme.example.",
    "cancel": "You can cancel anytime from Settings > Billing > Cancel plan. There is no cancellation fee.",
    "hours": "Our human support team is available Monday to Friday, 08:00-20:00 CET.",
}


def _intent(question: str) -> str:
    q = question.lower()
    for key, words in {
        "billing": ("invoice", "billing", "charged", "payment"),
        "reset": ("password", "log in", "login"),
        "refund": ("charged", "refund", "twice"),
        "outage": ("down", "outage", "not working"),
        "cancel": ("cancel",),
        "hours": ("human", "hours", "agent"),
    }.items():
        if any(w in q for w in words):
            return key
    return "unknown"


def call_api(prompt, options, context):
    question = context["vars"].get("question", "")
    intent = _intent(question)
    if "Respond only with JSON" in prompt:
        ticket = {"intent": intent, "priority": "high" if intent in ("outage", "refund") else "normal", "summary": question[:80]}
        return {"output": json.dumps(ticket)}
    answer = ANSWERS.get(intent, "I'm not sure about that. Let me connect you with a human agent.")
    if "friendly" in prompt.lower():
        answer = "Hi there! " + answer
    answer = re.sub(r"\s+", " ", answer)
    return {"output": answer, "tokenUsage": {"prompt": len(prompt) // 4, "completion": len(answer) // 4, "total": (len(prompt) + len(answer)) // 4}}
