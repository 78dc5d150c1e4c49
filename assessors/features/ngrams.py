"""Unigram frequencies normalised by their frequency over the training prompts (paper's 1-gram features)."""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from assessors.errors import ConfigError
from assessors.features.base import Featurizer


class UnigramFeaturizer(Featurizer):
    """Per-prompt word frequencies relative to the training corpus ("lift").

    Vocabulary = the ``max_features`` most frequent words of the training prompts.
    For prompt ``i`` with ``n_i`` in-vocabulary-or-not tokens and word ``w``::

        x[i, w] = (count(i, w) / n_i) / (count_train(w) / N_train)

    where ``count_train(w)`` is the total count of ``w`` over the training prompts and
    ``N_train`` the total number of tokens there (all tokens, before the vocabulary cap).
    So ``x[i, w] = 1`` when ``w`` is exactly as frequent in the prompt as in the training
    corpus, ``> 1`` when over-represented, 0 when absent. Dividing by the prompt length too
    keeps long prompts (MuSR stories) on the same scale as short ones. Words outside the
    vocabulary are ignored; an empty prompt gives a zero row.

    Output is a dense float32 array of shape (n_texts, vocab_size): at the default
    ``max_features=1000`` that is 26 MB for the 6,517 BBH+MuSR prompts, and every
    downstream classifier takes dense input.

    Parameters
    ----------
    max_features : int
        Vocabulary cap (most frequent training words).
    lowercase : bool
        Lower-case before tokenising.
    token_pattern : str
        Regex of a token. The default keeps one-character words ("A", "5"), which carry the
        option letters and numbers of BBH prompts; scikit-learn's default would drop them.
    cache_dir : str or None
        Embedding cache directory; None disables caching.
    """

    learns_from_texts = True

    def __init__(self, max_features: int = 1000, lowercase: bool = True,
                 token_pattern: str = r"(?u)\b\w+\b", cache_dir: str | None = None):
        super().__init__(cache_dir=cache_dir)
        self.max_features = max_features
        self.lowercase = lowercase
        self.token_pattern = token_pattern

    def _fit(self, texts: list[str]) -> None:
        from sklearn.feature_extraction.text import CountVectorizer

        if not texts:
            raise ConfigError("UnigramFeaturizer.fit got no training prompts")
        if int(self.max_features) < 1:
            raise ConfigError(f"max_features must be >= 1, got {self.max_features}")
        # Uncapped pass for the token totals, so the vocabulary cap does not change N_train.
        full = CountVectorizer(lowercase=self.lowercase, token_pattern=self.token_pattern)
        counts = full.fit_transform(texts)
        word_totals = np.asarray(counts.sum(axis=0)).ravel()
        n_train = float(word_totals.sum())
        if n_train == 0:
            raise ConfigError("UnigramFeaturizer.fit: the training prompts contain no tokens")
        # Most frequent words; ties broken alphabetically so the vocabulary is deterministic.
        names = full.get_feature_names_out()
        order = np.lexsort((names, -word_totals))[: int(self.max_features)]
        order = np.sort(order)  # keep columns in alphabetical order
        self.vocabulary_ = {str(names[j]): i for i, j in enumerate(order)}
        self.train_frequency_ = (word_totals[order] / n_train).astype(np.float64)
        self.vectorizer_ = CountVectorizer(lowercase=self.lowercase, token_pattern=self.token_pattern,
                                           vocabulary=self.vocabulary_)

    def _transform(self, texts: list[str]) -> np.ndarray:
        check_is_fitted(self, "vectorizer_", msg="UnigramFeaturizer: call fit(training_prompts) first")
        if not texts:
            return np.zeros((0, len(self.vocabulary_)), np.float32)
        counts = self.vectorizer_.transform(texts).astype(np.float64)
        analyzer = self.vectorizer_.build_analyzer()
        lengths = np.array([len(analyzer(t)) for t in texts], dtype=np.float64)
        lengths[lengths == 0] = 1.0  # empty prompt: zero counts, zero row
        rel = counts.multiply(1.0 / lengths[:, None]).multiply(1.0 / self.train_frequency_[None, :])
        return np.asarray(rel.todense(), dtype=np.float32)
