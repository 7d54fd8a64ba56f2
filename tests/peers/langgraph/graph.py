"""A LangGraph graph that asks before it works, on a scripted model: LangChain's own
`GenericFakeChatModel`, which streams fixed text word by word, with no LLM and no
network. Served by LangGraph's API server (see server.sh), which speaks A2A for it.

It says "Which colour?", waits for the answer (`interrupt`: the A2A task goes
INPUT_REQUIRED), and builds "<colour> widget done".
"""

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

QUESTION = "Which colour?"


def ask(state: MessagesState):
    return {"messages": [AIMessage(QUESTION)]}


def build(state: MessagesState):
    colour = str(interrupt(QUESTION)).strip()
    model = GenericFakeChatModel(messages=iter([AIMessage(f"{colour} widget done")]))
    return {"messages": [model.invoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("ask", ask)
builder.add_node("build", build)
builder.add_edge(START, "ask")
builder.add_edge("ask", "build")
builder.add_edge("build", END)
graph = builder.compile()
