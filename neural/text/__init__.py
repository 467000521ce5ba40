"""Text models: tokenisation, pooling modules, and runners for embeddings and classification."""

from .modules import SentenceEmbedding, SequenceClassification
from .runners import TextClassificationRunner, TextEmbeddingRunner, classification_signature, embedding_signature
from .tokenizer import TextTokenizer, TokenizedText, pad_batch

__all__ = [
    "SentenceEmbedding",
    "SequenceClassification",
    "TextClassificationRunner",
    "TextEmbeddingRunner",
    "TextTokenizer",
    "TokenizedText",
    "classification_signature",
    "embedding_signature",
    "pad_batch",
]
