"""The interactions input's reason codes and messages (declared in
:data:`releval.checks.rules.REASONS` with the other inputs'; the rules are in
:mod:`releval.checks.interactions`)."""

from __future__ import annotations

INTERACTIONS = "interactions"
MISSING_SEARCH_ID = "missing_search_id"
INVALID_CLICK = "invalid_click"
INVALID_DWELL = "invalid_dwell"
NEGATIVE_DWELL = "negative_dwell"
MISSING_POSITION = "missing_position"
INVALID_POSITION = "invalid_position"
MISSING_TEAM = "missing_team"
DUPLICATE_POSITION = "duplicate_position"
CONFLICTING_QUERY_ID = "conflicting_query_id"
CLICK_NOT_SHOWN = "click_not_shown"

#: (code, message), in the order the rules apply.
INTERACTION_REASONS: tuple[tuple[str, str], ...] = (
    (MISSING_SEARCH_ID, "the search id is null or empty"),
    (INVALID_CLICK, "clicked is null, non-numeric, negative, NaN or not an integer"),
    (INVALID_DWELL, "the dwell is non-numeric, NaN or infinite (null: no dwell)"),
    (NEGATIVE_DWELL, "the dwell is negative"),
    (MISSING_POSITION, "a result without clicks has no position"),
    (INVALID_POSITION, "the position is not an integer of at least 1"),
    (MISSING_TEAM, "interleaving: the team (which ranker contributed the result) is null or "
                   "empty"),
    (DUPLICATE_POSITION, "another result of this search has the same position; which one was "
                         "shown is unknown, so none is used"),
    (CONFLICTING_QUERY_ID, "the rows of this search disagree on the query id; none is used"),
    (CLICK_NOT_SHOWN, "a click (a row without a position) on a document this search did not "
                      "show"),
)
