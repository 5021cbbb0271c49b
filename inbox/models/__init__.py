"""Inbox agent (spec inbox-agent.md AGT-01 … AGT-31): the messages and the agent's actions on them (`messages`),
the agent's set-up per organization (`agent`). Every name is importable from `inbox.models`.

`InboundMessage.processing_status` and `AgentAction.status` are protected django-fsm fields whose transition
bodies only apply a patch; the only writer of both is `inbox.lifecycle`.
"""

from inbox.models.agent import (
    AgentConfig,
    BreakerKind,
    CircuitBreaker,
    HandlingRule,
    KnowledgeEntry,
    LlmProvider,
    LlmProviderSetting,
    RuleAction,
    RuleMatch,
    _inbound_secret,  # the default of AgentConfig.inbound_secret, named so by migration 0001
)
from inbox.models.attachments import InboundAttachment
from inbox.models.imap import ImapMailbox, ImapSecurity
from inbox.models.messages import (
    NON_TERMINAL,
    TERMINAL,
    ActionStatus,
    AgentAction,
    ConversationThread,
    DraftStatus,
    InboundMessage,
    P,
    ProcessingStatus,
    QuarantinedMessage,
    ReviewQueueMessage,
    StepKind,
    ThreadStatus,
)

__all__ = [
    "NON_TERMINAL",
    "TERMINAL",
    "ActionStatus",
    "AgentAction",
    "AgentConfig",
    "BreakerKind",
    "CircuitBreaker",
    "ConversationThread",
    "DraftStatus",
    "HandlingRule",
    "ImapMailbox",
    "ImapSecurity",
    "InboundAttachment",
    "InboundMessage",
    "KnowledgeEntry",
    "LlmProvider",
    "LlmProviderSetting",
    "P",
    "ProcessingStatus",
    "QuarantinedMessage",
    "ReviewQueueMessage",
    "RuleAction",
    "RuleMatch",
    "StepKind",
    "ThreadStatus",
    "_inbound_secret",
]
