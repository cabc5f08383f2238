"""What the MCP tools return: small pydantic models, so each tool publishes an output schema and a client
gets the same fields as structured content and as JSON text."""

from __future__ import annotations

from pydantic import BaseModel, Field


class KnowledgeBaseInfo(BaseModel):
    id: str
    name: str
    description: str = ""
    type: str = Field(description="document or faq")
    document_count: int = 0
    chunk_count: int = 0


class KnowledgeBaseList(BaseModel):
    knowledge_bases: list[KnowledgeBaseInfo]


class SearchHit(BaseModel):
    chunk_id: str
    document_id: str
    document_title: str
    knowledge_base_id: str
    chunk_index: int = Field(description="position of the chunk in its document (read_document pages by it)")
    score: float = Field(description="fused relevance score; higher is better")
    scores: dict[str, float] = Field(default_factory=dict, description="per-path scores (vector, keyword …)")
    content: str


class SearchHits(BaseModel):
    query: str
    results: list[SearchHit]


class AnswerSource(BaseModel):
    number: int = Field(description="the [n] mark in the answer text")
    title: str
    chunk_id: str = ""
    document_id: str = ""
    knowledge_base_id: str = ""
    url: str = Field(default="", description="for a web source")


class AskAnswer(BaseModel):
    answer: str = Field(description="the answer, with numbered citation marks [n]")
    sources: list[AnswerSource] = Field(description="what each [n] cites")
    session_id: str = Field(description="pass it back as session_id to ask a follow-up in the same "
                                        "conversation")
    errors: list[str] = Field(default_factory=list, description="problems the answering pipeline reported")


class DocumentInfo(BaseModel):
    id: str
    knowledge_base_id: str
    title: str
    type: str = Field(description="file, url, manual or faq")
    source: str = Field(description="file name, URL, or 'manual'")
    parse_status: str = Field(description="pending, processing, completed or failed; searchable once "
                                          "completed")
    error_message: str = ""
    created_at: str


class DocumentList(BaseModel):
    knowledge_base_id: str
    total: int
    page: int
    page_size: int
    documents: list[DocumentInfo]


class ChunkText(BaseModel):
    id: str
    chunk_index: int
    content: str


class DocumentPage(BaseModel):
    document: DocumentInfo
    total_chunks: int
    page: int
    page_size: int
    has_more: bool = Field(description="true when a later page has more chunks")
    chunks: list[ChunkText]


class AddedDocument(BaseModel):
    document: DocumentInfo
    message: str
