// Package hash hashes group keys column-wise and maps them to dense group
// ids (Table): the group-by hash table of the aggregates, joins and Top-N.
// KeyHashes is the key hash behind key groups and keyed shuffles.
package hash
