// Package groupagg is the unwindowed grouped aggregate (Agg): an updating
// result (changelog) over an insert-only input, or over a changelog when
// configured to retract. It owns its state and writes it in the state
// format's group_agg slot.
package groupagg
