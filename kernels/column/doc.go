// Package column holds the small column helpers the other kernels and the
// operators share: scratch slices that keep their capacity (Grow), null
// masks and booleans of selected rows, fixed-width and boolean arrays built
// in place (Fixed, Bool), checks of the value columns of operator state,
// and the containers large state lives in (Chunked, Mapped, Arena).
package column
