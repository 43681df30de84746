// Package topn is the Top-N operator (Ranker): ROW_NUMBER() OVER
// (PARTITION BY ... ORDER BY ...) filtered to rn <= N, unwindowed (a
// changelog) or per window (final rows when the watermark passes the
// window). It owns its state and writes it in the state format's top_n and
// operator slots.
package topn
